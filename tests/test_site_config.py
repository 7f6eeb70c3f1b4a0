"""网站配置的快速检查（不构建书）：设置在 _config.yml 里、界面译文在 .po 里、PDF 文件名只有一个出处、
中文检索词典的路径与分词、本地扩展的配置处理（附录编号）。"""

from __future__ import annotations

import ast
import importlib.util
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from support.book import REPO

SEARCH_DICT = REPO / "book" / "search_dict.txt"


CONFIG = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
SPHINX_CONFIG = CONFIG["sphinx"]["config"]
CJK = re.compile(r"[\u4e00-\u9fff]")


def load_extension(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "book" / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def book_search():
    return load_extension("book_search")


# ---- 设置在配置里，而不是在扩展的代码里 ------------------------------------------------------------

def test_site_settings_live_in_config():
    """主题选项、html_context、搜索框与折叠提示都写在 _config.yml；字典要并入 Jupyter Book 生成的同名字典
    （recursive_update），否则 Jupyter Book 的其他主题选项会丢。"""
    assert CONFIG["sphinx"]["recursive_update"] is True
    assert CJK.search(SPHINX_CONFIG["html_theme_options"]["search_bar_text"])
    assert SPHINX_CONFIG["html_theme_options"]["navbar_persistent"] == []
    assert SPHINX_CONFIG["html_context"]["default_mode"] == "auto"
    assert CJK.search(SPHINX_CONFIG["togglebutton_hint"]) and CJK.search(SPHINX_CONFIG["togglebutton_hint_hide"])
    assert (REPO / SPHINX_CONFIG["templates_path"][0]).is_dir()


def test_jupyter_book_merges_our_settings_into_its_own():
    """Jupyter Book 把 _config.yml 变成 Sphinx 配置时，我们的主题选项并入它生成的（下载菜单、首页在目录里等
    选项都还在），界面设置原样到达 Sphinx。"""
    import sys

    from jupyter_book.config import get_final_config

    path_before = list(sys.path)
    try:
        final, _ = get_final_config(user_yaml=REPO / "_config.yml", sourcedir=REPO, raise_on_invalid=True,
                                    cli_config={"latex_individualpages": False})
    finally:
        sys.path[:] = path_before  # get_final_config 把 local_extensions 的目录加进 sys.path
    theme = final["html_theme_options"]
    assert theme["search_bar_text"] == SPHINX_CONFIG["html_theme_options"]["search_bar_text"]
    assert theme["navbar_persistent"] == []
    assert theme["home_page_in_toc"] is True and "launch_buttons" in theme, theme  # Jupyter Book 自己的选项
    for key in ("html_context", "togglebutton_hint", "togglebutton_hint_hide", "locale_dirs", "templates_path",
                "html_math_renderer", "katex_prerender", "katex_css_path", "book_pdf_on_site", "book_appendices"):
        assert final[key] == SPHINX_CONFIG[key], key


def test_extensions_do_not_patch_sphinx_internals_or_config():
    """扩展不再改 Sphinx 私有的翻译目录，也不在代码里改这些配置项。"""
    forbidden = {"sphinx.locale", "translators", "_catalog", "html_theme_options", "html_context",
                 "togglebutton_hint", "togglebutton_hint_hide", "templates_path"}
    for path in (REPO / "book" / "_ext").glob("*.py"):
        used = code_names(path)
        assert not used & forbidden, f"{path.name} 的代码里还有 {used & forbidden}：它该在 _config.yml 或 locale/ 里"


def code_names(path: Path) -> set[str]:
    """一个模块的代码用到的名字：导入的模块、变量名、属性名、作下标或参数的字符串（不含文档字符串和注释）。"""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.alias):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            names.add(node.value)
    return names


def test_code_names_sees_code_but_not_prose(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""改 html_context。"""\nfrom sphinx.locale import translators\n'
                      'def f(config):\n    """html_theme_options"""\n    config.html_context["x"] = 1  # templates_path\n',
                      encoding="utf-8")
    names = code_names(module)
    assert {"sphinx.locale", "translators", "html_context"} <= names
    assert "html_theme_options" not in names and "templates_path" not in names


def read_po(path):
    from babel.messages.pofile import read_po as babel_read_po

    with open(path, "rb") as handle:
        return babel_read_po(handle)


def test_interface_translations_are_a_complete_po_catalog():
    """locale/zh_CN/LC_MESSAGES/sphinx.po：每条都有中文译文、没有 fuzzy，而且每条原文都是 Sphinx 或
    pydata-sphinx-theme 界面上真有的字符串，或是排公式的 sphinxcontrib-katex 代码里经由 Sphinx 翻译的字符串
    （不是对不上号、永远不起作用的条目）。"""
    import pydata_sphinx_theme
    import sphinx
    import sphinxcontrib.katex

    assert SPHINX_CONFIG["locale_dirs"] == ["locale"]
    catalog = read_po(REPO / "locale" / "zh_CN" / "LC_MESSAGES" / "sphinx.po")
    entries = [m for m in catalog if m.id]
    assert len(entries) >= 10, [m.id for m in entries]
    known = set()
    for pot in (Path(sphinx.__file__).parent / "locale" / "sphinx.pot",
                Path(pydata_sphinx_theme.__file__).parent / "locale" / "sphinx.pot"):
        known |= {m.id for m in read_po(pot) if m.id}
    katex_source = Path(sphinxcontrib.katex.__file__).read_text(encoding="utf-8")
    known |= {text for _, text in re.findall(r"""\b_\((['"])(.+?)\1\)""", katex_source)}
    for message in entries:
        assert CJK.search(message.string or ""), f"没有中文译文：{message.id!r}"
        assert not message.fuzzy, f"fuzzy 条目不会被使用：{message.id!r}"
        assert message.id in known, f"Sphinx 与主题的界面上没有这句原文：{message.id!r}"


def test_pdf_file_name_has_one_source():
    """整本书 PDF 的文件名只写在 _config.yml 里；构建脚本、扩展、页面和测试都读它，不另写一遍。"""
    name = SPHINX_CONFIG["book_pdf_on_site"]
    assert name.endswith(".pdf")
    spelled = [str(p.relative_to(REPO)) for folder in ("book", "tools", "tests", "src")
               for p in (REPO / folder).rglob("*")
               if p.is_file() and p.suffix in (".py", ".md", ".js", ".html", ".sty", ".yml", ".ipynb")
               and name in p.read_text(encoding="utf-8", errors="replace")]
    assert not spelled, f"这些文件里另写了一遍 {name}：{spelled}"
    from support.book import build_book

    assert build_book.pdf_on_site(REPO) == name


# ---- 附录编号（book_appendix）---------------------------------------------------------------

def test_appendix_numbering_uses_its_letter_and_keeps_other_pages_consecutive():
    """Sphinx 给不编号的页面连续编号（图 1、2、3…）；附录页改为 A.1、A.2，排在它后面的不编号页面接着前面的编号，
    编号的章（(2, 1) 这样两层的编号）不动。"""
    book_appendix = load_extension("book_appendix")
    env = SimpleNamespace(toc_fignumbers={
        "book/intro": {"figure": {"f-intro": (1,)}},
        "book/s2": {"figure": {"f-a": (2, 1), "f-b": (2, 2)}, "table": {"t-a": (2, 1)}},
        "book/appendix": {"figure": {"f-y": (3,), "f-x": (2,)}, "table": {"t-x": (1,)}},
        "book/homework": {"figure": {"f-hw": (4,)}, "table": {"t-hw": (2,)}},
    })
    app = SimpleNamespace(config=SimpleNamespace(book_appendices={"book/appendix": "A"}), env=env)
    book_appendix.number_appendix_figures(app, None)
    numbers = env.toc_fignumbers
    assert numbers["book/appendix"] == {"figure": {"f-x": ("A", 1), "f-y": ("A", 2)}, "table": {"t-x": ("A", 1)}}
    assert numbers["book/homework"] == {"figure": {"f-hw": (2,)}, "table": {"t-hw": (1,)}}
    assert numbers["book/s2"] == {"figure": {"f-a": (2, 1), "f-b": (2, 2)}, "table": {"t-a": (2, 1)}}
    assert numbers["book/intro"] == {"figure": {"f-intro": (1,)}}
    before = {doc: {kind: dict(n) for kind, n in types.items()} for doc, types in numbers.items()}
    book_appendix.number_appendix_figures(app, None)  # 每次写出前都会调用：再调一次结果不变
    assert numbers == before
    assert ".".join(map(str, numbers["book/appendix"]["figure"]["f-x"])) == "A.1"  # Sphinx 写出编号的方式


def test_config_points_the_search_dictionary_at_the_repo_file():
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    rel = config["sphinx"]["config"]["html_search_options"]["dict"]
    assert (REPO / rel).resolve() == SEARCH_DICT.resolve()
    assert "book_search" in config["sphinx"]["local_extensions"]


def test_search_dictionary_path_does_not_depend_on_the_working_directory(book_search, tmp_path,
                                                                         monkeypatch):
    """Sphinx 按当前目录解析 dict 路径、找不到就悄悄不用；扩展把它变成绝对路径。"""
    monkeypatch.chdir(tmp_path)  # 构建可能从任何目录启动
    app = SimpleNamespace(confdir=str(REPO))
    config = SimpleNamespace(html_search_options={"dict": "book/search_dict.txt"})
    book_search.absolute_search_dict(app, config)
    assert config.html_search_options["dict"] == str(SEARCH_DICT.resolve())


def test_missing_search_dictionary_is_reported(book_search, tmp_path, caplog):
    app = SimpleNamespace(confdir=str(tmp_path))
    config = SimpleNamespace(html_search_options={"dict": "nope.txt"})
    with caplog.at_level(logging.WARNING):
        book_search.absolute_search_dict(app, config)
    assert "中文检索词典不存在" in caplog.text


@pytest.fixture(scope="module")
def tokenizer():
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()  # 独立的分词器，不动 jieba 的全局状态
    tokenizer.load_userdict(str(SEARCH_DICT))
    return tokenizer


@pytest.mark.parametrize("text, term", [
    ("GPT 离不开因果遮蔽。", "因果遮蔽"),
    ("多头注意力把 d_model 拆成几个头。", "多头注意力"),
    ("残差连接和层归一化是基础设施。", "残差连接"),
    ("残差连接和层归一化是基础设施。", "层归一化"),
    ("前馈网络先升维和再降维。", "升维"),
    ("这一层的参数量是多少？", "参数量"),
    ("先算缩放点积注意力，再做 softmax。", "缩放点积注意力"),
])
def test_jieba_keeps_book_terms_whole(tokenizer, text, term):
    """有词典时，书里的术语被切成一个完整的检索词（没有词典时“因果遮蔽”会变成“因果”“遮蔽”）。"""
    assert term in list(tokenizer.cut_for_search(text))


def test_jieba_keeps_its_dictionary_cache_in_the_users_cache_folder_not_in_shared_tmp(tmp_path):
    """jieba 默认把缓存写到所有用户共用的 /tmp/jieba.cache（0600）：另一个用户先构建过，构建就打印 PermissionError。
    book_search 把它放进本用户的缓存目录；家目录写不了时放到构建目录旁边。"""
    script = textwrap.dedent(f"""
        import sys, types
        sys.path.insert(0, {str(REPO / "book" / "_ext")!r})
        import book_search, jieba
        app = types.SimpleNamespace(doctreedir={str(tmp_path / "out" / ".doctrees")!r})
        book_search.jieba_cache_of_this_user(app, None)
        jieba.setLogLevel(60)
        jieba.initialize()
        print(jieba.dt.tmp_dir)
    """)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / "cache" / "minigpt-book")
    assert (tmp_path / "cache" / "minigpt-book" / "jieba.cache").is_file()

    (tmp_path / "a-file").write_text("")
    env["XDG_CACHE_HOME"] = str(tmp_path / "a-file" / "cache")  # 建不了（root 也不行）：退到构建目录旁边
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / "out" / ".jieba")
    assert (tmp_path / "out" / ".jieba" / "jieba.cache").is_file()
