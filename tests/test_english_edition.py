"""英文版：译文完整且不漂移，代码只换了人话，英文页面上没有中文，两个版本的数字一模一样。

英文版由 tools/i18n.py 从中文源文件与 locale/en 的译文生成（见该文件的说明）。这里核对：

- 每一条中文消息都有译文、不是 fuzzy，译文里的角色（glue、术语、交叉引用……）、公式与占位符与原文一致；
  中文改了一句，核对就失败（在一份副本上真改一句来证明）；
- 英文版的代码与中文版是同一份代码：除字符串与注释的内容以外，每个 Python 文件的词法记号一个不差；
- 英文网站的每一页都在，页面文字、代码、输出与图里没有中文（语言切换按钮、术语表与译文刻意保留的中文除外）；
- 两个版本每一页的数字一样：glue 的数值、打印的张量与数、图的个数。
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sys
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import i18n  # noqa: E402
import i18n_text as tx  # noqa: E402

from support.book import toc_docnames  # noqa: E402
from support.pagekit import shown_strings  # noqa: E402


# ---- 译文的核对 ----------------------------------------------------------------------------------

def test_every_message_is_translated_and_agrees_with_its_source():
    problems = i18n.check(REPO)
    assert problems == [], "\n".join(problems[:40])


@pytest.mark.parametrize("msgid, good, bad, kind, problem", [
    ("权重是 {glue:text}`s2_w`。", "The weight is {glue:text}`s2_w`.", "The weight is 0.5.", "prose", "角色不同"),
    ("见 {numref}`图 %s <fig-a>` 与 {numref}`fig-b`。", "See {numref}`Figure %s <fig-a>` and {numref}`fig-b`.",
     "See {numref}`fig-a` and {numref}`fig-a`.", "prose", "角色不同"),
    ("{term}`注意力`", "{term}`attention`", "{term}`attention weight`", "prose", "角色不同"),
    ("设 $d_k = 64$。", "Let $d_k = 64$.", "Let $d_k = 32$.", "prose", "公式不同"),
    ("形状 {x.shape}", "shape {x.shape}", "shape {x}", "code", "占位符不同"),
    ("共 %d 个", "%d in total", "a total", "code", "占位符不同"),
    ("看得见", "visible", "visible（yes）", "code", "中文"),
])
def test_the_message_check_catches_what_a_translation_must_not_change(msgid, good, bad, kind, problem):
    terms = {"注意力": "attention"}
    assert i18n.message_problems(msgid, good, kind, terms, allow_cjk="") == []
    found = i18n.message_problems(msgid, bad, kind, terms, allow_cjk="")
    assert any(problem in p for p in found), found


def book_copy(tmp_path: Path) -> Path:
    root = tmp_path / "book-copy"
    root.mkdir()
    for name in ("_config.yml", "_toc.yml", "pyproject.toml"):
        shutil.copy2(REPO / name, root / name)
    for folder in ("book", "src", "locale"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (root / "tools").mkdir()
    shutil.copy2(REPO / "tools" / "make_student_notebook.py", root / "tools")
    return root


@pytest.mark.slow
def test_editing_a_chinese_sentence_makes_the_check_fail_until_it_is_translated(tmp_path):
    """真改一句中文：核对说这条没有译文；make translations（sphinx-intl update）之后说它是 fuzzy。"""
    root = book_copy(tmp_path)
    page = root / "book" / "s5_ffn.md"
    text = page.read_text(encoding="utf-8")
    old = "两个线性层夹一个激活函数"
    assert old in text
    page.write_text(text.replace(old, "两个线性层中间夹着一个激活函数", 1), encoding="utf-8")
    problems = i18n.check(root)
    assert any("两个线性层中间夹着一个激活函数" in p and "目录里没有这条" in p for p in problems), problems
    i18n.update(root)
    problems = i18n.check(root, extract=False)
    assert [p for p in problems if "fuzzy" in p] and all("s5_ffn.po" in p for p in problems), problems


@pytest.mark.slow
def test_a_translation_that_drops_a_glue_role_fails_the_check(tmp_path):
    root = book_copy(tmp_path)
    po = root / "locale" / "en" / "LC_MESSAGES" / "book" / "s2_scaled_dot_product.po"
    catalog = i18n.read_catalog(po)
    message = next(m for m in catalog if m.id and "{glue:text}" in m.string)
    message.string = re.sub(r"\{glue:text\}`[^`]+`", "0.25", message.string, count=1)
    i18n.write_pot(catalog, po)
    problems = i18n.check(root)
    assert len(problems) == 1 and "角色不同" in problems[0] and "glue:text" in problems[0], problems


@pytest.mark.slow
def test_a_merge_conflict_marker_left_in_a_catalog_fails_the_check(tmp_path):
    """合并 .po 时留下的冲突标记，哪怕只在作废的条目里，也让核对失败（说明那段合并没人核对过）。"""
    root = book_copy(tmp_path)
    po = root / "locale" / "en" / "LC_MESSAGES" / "book" / "s5_ffn.po"
    assert not i18n.check(root)
    po.write_text(po.read_text(encoding="utf-8")
                  + '\n#~ msgid "<<<<<<< HEAD 一句中文"\n#~ msgstr "A sentence"\n', encoding="utf-8")
    problems = i18n.check(root, extract=False)   # 上面已经提取过一次
    assert len(problems) == 1 and "合并冲突" in problems[0] and "s5_ffn.po" in problems[0], problems


# ---- 英文版的书 --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def english_root(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("en-root")
    _written, missing = i18n.build_root(out, REPO)
    assert missing == [], "\n".join(missing[:30])
    return out


def code_tokens(source: str) -> list[tuple[int, str]]:
    """词法记号，字符串与注释只记种类（它们的内容是可以翻译的人话）。"""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL):
            continue
        if tok.type == tokenize.STRING:
            prefix = re.match(r"[rRbBuUfF]*", tok.string).group()
            out.append((tok.type, prefix.lower()))
        else:
            out.append((tok.type, tok.string))
    return out


def test_the_english_python_is_the_same_code(english_root):
    """包、扩展与页面的每个代码单元：英文版与中文版的词法记号除字符串内容以外完全相同（译文也没弄坏引号）。"""
    checked = 0
    for path, kind, _options in i18n.code_sources(REPO):
        if kind != "py":
            continue
        rel = path.relative_to(REPO)
        assert code_tokens((english_root / rel).read_text(encoding="utf-8")) == \
            code_tokens(path.read_text(encoding="utf-8")), rel
        checked += 1
    for page in i18n.pages(REPO):
        zh = [b.text for b in tx.split_page(page.read_text(encoding="utf-8")) if b.kind == "py"]
        en = [b.text for b in tx.split_page((english_root / "book" / page.name).read_text(encoding="utf-8"))
              if b.kind == "py"]
        assert len(zh) == len(en), page.name
        for a, b in zip(zh, en):
            try:
                expected = code_tokens(a)
            except (tokenize.TokenError, SyntaxError):
                continue  # 故意不完整的代码（按行翻译）
            assert code_tokens(b) == expected, (page.name, a[:200], b[:200])
            checked += 1
    assert checked > 150


def test_the_english_sources_hold_no_chinese_where_readers_look(english_root):
    """英文的书：页面（作者注释行去掉了）、包的源码、模板与脚本里都没有中文；扩展只有注释与文档字符串里还有
    （给维护者的，不进任何页面）。"""
    leftovers = []
    for path in sorted((english_root / "book").glob("*.md")) + sorted((english_root / "src").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if tx.has_cjk(line) and not allowed_in_source(path, line):
                leftovers.append(f"{path.relative_to(english_root)}:{n}: {line.strip()[:80]}")
    assert leftovers == [], "\n".join(leftovers[:30])


SOURCE_TITLE = "《Attention 机制与 Transformer Block》"  # 本书所依据的中文教程的原名（可以检索的名字，照原样引用）


def test_the_english_edition_ships_english_licence_citation_readme_and_package_summary(english_root):
    """英文版的书（及它打出的 sdist、wheel、网站下载）带的是英文的 LICENSE、CITATION.cff、README 与包简介：
    中文只剩所依据的中文教程的原名。许可证全文与中文版的一字不差（只去掉中英对照标题里的中文）。"""
    import tomllib

    import yaml

    def chinese(text: str) -> list[str]:
        return re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", text.replace(SOURCE_TITLE, ""))

    licence = (english_root / "LICENSE").read_text(encoding="utf-8")
    assert chinese(licence) == [] and "two licenses" in licence
    chinese_licence = (REPO / "LICENSE").read_text(encoding="utf-8")
    for part in ("Permission is hereby granted, free of charge", "Attribution-ShareAlike 4.0 International Public License"):
        assert part in licence and part in chinese_licence
    tail = chinese_licence[chinese_licence.index("Part 1:"):].replace("minigpt 开源教材作者组 (", "")
    assert licence.endswith(tail.replace("the minigpt open textbook authors)", "the minigpt open textbook authors")[-2000:])

    cff = yaml.safe_load((english_root / "CITATION.cff").read_text(encoding="utf-8"))
    chinese_cff = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == chinese_cff["cff-version"] and set(cff["license"]) == set(chinese_cff["license"])
    assert chinese(cff["title"] + cff["message"] + cff["abstract"] + str(cff["authors"])) == []
    assert [r["title"] for r in cff["references"]] == [r["title"] for r in chinese_cff["references"]]

    readme = (english_root / "README.md").read_text(encoding="utf-8")
    assert chinese(readme) == [] and "make html" in readme and "minigpt-book" in readme
    summary = tomllib.loads((english_root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["description"]
    assert chinese(summary) == [] and "Transformer Block" in summary


def kept_on_purpose() -> set[str]:
    """译文刻意保留的中文（术语表里的中文名、讲到某个中文词的地方）：每条都出现在它的原文里。"""
    runs = set()
    for po in sorted((i18n.locale_dir(REPO) / "book").glob("*.po")):
        for message in i18n.read_catalog(po):
            runs.update(re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", message.string or ""))
    return runs


def allowed_in_source(path: Path, line: str) -> bool:
    runs = re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", line)
    return path.suffix == ".md" and bool(runs) and set(runs) <= kept_on_purpose() \
        and not re.search(r"[\u3000-\u303f\uff00-\uffef]", line)


# ---- 英文网站 ---------------------------------------------------------------------------------

def english_html(built_book_en) -> Path:
    return built_book_en.html / i18n.LANG


def test_every_page_of_the_toc_exists_in_english(built_book_en):
    en = english_html(built_book_en)
    missing = [doc for doc in toc_docnames() if not (en / f"{doc}.html").is_file()]
    assert missing == []
    index = (en / "book" / "s2_scaled_dot_product.html").read_text(encoding="utf-8")
    assert '<html lang="en"' in index


def page_chinese(path: Path) -> list[str]:
    return re.findall(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]+", " ".join(shown_strings(path)))


def test_english_pages_show_no_chinese(built_book_en):
    """页面上看得见的文字（含 alt、title、aria-label）里的中文只能是语言切换按钮的名字，或译文刻意保留的词。"""
    import yaml

    editions = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"]["book_editions"]
    allowed = kept_on_purpose() | {e["label"] for e in editions}
    en = english_html(built_book_en)
    found = {}
    for page in sorted(en.rglob("*.html")):
        bad = [run for run in page_chinese(page) if run not in allowed]
        if bad:
            found[page.relative_to(en).as_posix()] = bad[:8]
    assert found == {}


def test_english_outputs_and_figures_carry_no_chinese(built_book_en):
    """英文版执行出来的每个输出（文字、表格、图的 SVG 文本）与网站上的图片、交互图数据里都没有中文。"""
    bad = []
    executed = REPO / "_build" / i18n.LANG / "_build" / "jupyter_execute"
    notebooks = sorted(executed.rglob("*.ipynb"))
    assert len(notebooks) >= 9
    for nb in notebooks:
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            for output in cell.get("outputs", []):
                text = json.dumps({k: v for k, v in output.items() if k != "metadata"}, ensure_ascii=False)
                if tx.has_cjk(text):
                    bad.append(f"{nb.name}: {''.join(tx.CJK.findall(text))[:40]}")
    en = english_html(built_book_en)
    images = set()
    for page in en.rglob("*.html"):
        for src in re.findall(r'<img[^>]*\ssrc="([^"]+\.svg)"', page.read_text(encoding="utf-8")):
            images.add((page.parent / src).resolve())
    assert len(images) >= 20
    for image in sorted(images):
        if tx.has_cjk(image.read_text(encoding="utf-8", errors="replace")):  # 图里的字（SVG 的文字与注释）
            bad.append(image.name)
    assert bad == [], bad[:20]


# ---- 两个版本的数字 ----------------------------------------------------------------------------

NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[-+]?\d+)?|(?<![\w.])-?\d+e[-+]?\d+")


def page_numbers(build: Path, page: str) -> tuple[list[str], dict[str, str], int]:
    """一页执行结果里的数：(打印与显示出来的小数，按出现的顺序；glue 的值 {键: 文字}；图的个数)。

    myst-nb 写出的 notebook 不带输出：输出取自这次构建的执行缓存，glue 的值取自 <页面>.glue.json。"""
    import nbformat
    from jupyter_cache import get_cache

    executed = build / "jupyter_execute" / "book"
    notebook = nbformat.read(executed / f"{page}.ipynb", as_version=4)
    _, notebook = get_cache(str(build / ".jupyter_cache")).merge_match_into_notebook(notebook)
    printed, figures = [], 0
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if any(m.startswith("image/") for m in data):
                figures += 1
            text = output.get("text") or data.get("text/plain") or ""
            if output.get("output_type") in ("stream", "execute_result"):
                printed += NUMBER.findall(text)
    glue_file = executed / f"{page}.glue.json"
    glued = {}
    if glue_file.is_file():
        for key, output in json.loads(glue_file.read_text(encoding="utf-8")).items():
            data = output.get("data", {})
            glued[key] = data.get("text/plain") or data.get("text/markdown") or \
                ("<figure>" if any(m.startswith("image/") for m in data) else json.dumps(data)[:0])
    return printed, glued, figures


def is_number(text: str) -> bool:
    try:
        float(text.strip("'\" "))
    except ValueError:
        return False
    return True


def test_both_editions_compute_the_same_numbers(built_site):
    """同一份代码、同样的种子：每页打印的每个小数、每个 glue 的数值与图的个数，两个版本一模一样。"""
    zh_build = built_site.root / "_build"
    en_build = zh_build / i18n.LANG / "_build"
    compared = 0
    pages = sorted(p.stem for p in (zh_build / "jupyter_execute" / "book").glob("*.ipynb"))
    assert len(pages) >= 9
    for page in pages:
        zp, zg, zf = page_numbers(zh_build, page)
        ep, eg, ef = page_numbers(en_build, page)
        assert zp == ep, page
        assert zf == ef, page
        assert zg.keys() == eg.keys(), page
        for key, value in zg.items():
            if is_number(value):
                assert eg[key] == value, (page, key)   # 数值一个字符都不差
            else:
                assert NUMBER.findall(eg[key]) == NUMBER.findall(value), (page, key, value, eg[key])
            compared += 1
        compared += len(zp)
    assert compared > 300


def test_an_f_string_translation_must_keep_its_code():
    msgid = "{listed} 还没有填写（共 {len(names)} 个）："
    assert i18n.message_problems(msgid, "{listed} not filled in yet ({len(names)} in all): ", "code", {},
                                 fstring=True) == []
    found = i18n.message_problems(msgid, "{listed} not filled in yet ({len(missing)} in all): ", "code", {},
                                  fstring=True)
    assert any("占位符不同" in p for p in found), found


def test_chinese_inside_f_string_code_is_found():
    assert tx.cjk_in_fstring_code("x = f\"{'、'.join(a)} 个\"\ny = f'{n} 个'\n") == [1]
    assert i18n.fstring_problems(REPO) == []


# ---- 两个版本互相链接 ---------------------------------------------------------------------------

def test_every_page_links_to_the_same_page_in_the_other_edition(built_site):
    """每页页头的语言切换按钮指向另一种语言的同一页（那一页确实存在），<head> 里有两种语言与 x-default
    的 hreflang，网址都在网站的发布地址下。"""
    import yaml

    base = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"]["html_baseurl"]
    html = built_site.html
    for doc in toc_docnames():
        for edition, other in (("", "en/"), ("en/", "")):
            page = html / f"{edition}{doc}.html"
            text = page.read_text(encoding="utf-8")
            links = dict(re.findall(r'<link rel="alternate" hreflang="([^"]+)" href="([^"]+)">', text))
            assert links == {"zh-CN": f"{base}{doc}.html", "en": f"{base}en/{doc}.html",
                             "x-default": f"{base}{doc}.html"}, (page, links)
            hrefs = re.findall(r'<p class="book-edition-switch"><a href="([^"]+)" hreflang="([^"]+)" lang="\2">', text)
            assert len(hrefs) == 1 and hrefs[0][1] == ("en" if not edition else "zh-CN"), (page, hrefs)
            hrefs = [hrefs[0][0]]
            target = (page.parent / hrefs[0]).resolve()
            assert target == (html / f"{other}{doc}.html").resolve() and target.is_file(), (page, hrefs[0])


# ---- 英文 PDF -------------------------------------------------------------------------------

def test_the_english_pdf_is_english_and_on_the_english_site(built_pdf_en):
    import subprocess

    import yaml

    pdf_name = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"]["book_pdf_on_site"]
    latex = built_pdf_en.root / "_build" / i18n.LANG / "_build" / "latex"
    pdf = latex / "book.pdf"
    assert (built_pdf_en.root / "_build" / "html" / i18n.LANG / pdf_name).read_bytes() == pdf.read_bytes()
    text = subprocess.run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert "The Attention Mechanism and the Transformer Block" in " ".join(text[:400].split())
    # 编号的各章与正文的叫法一致：“Section 1”，不是 LaTeX 默认的 “Chapter 1”
    assert "Contents" in text[:2000] and re.search(r"Section\s*1\b", text) and not re.search(r"Chapter\s*\d", text)
    # 汉字只能来自术语表刻意保留的中文名（pdftotext 把它们拆成一个个字，按字比较）
    chars = set(re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]", text))
    allowed = set("".join(kept_on_purpose()))
    assert chars <= allowed, sorted(chars - allowed)[:20]
    assert "Missing character" not in (latex / "book.log").read_text(encoding="utf-8", errors="replace")


# ---- 英文的作业包、读者笔记本与批改程序 ------------------------------------------------------------

def _load(path: Path, name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def english_bundle(built_book_en, tmp_path_factory) -> Path:
    import zipfile

    out = tmp_path_factory.mktemp("en-bundle")
    with zipfile.ZipFile(built_book_en.html / i18n.LANG / "minigpt-homework.zip") as zf:
        zf.extractall(out)
    (folder,) = out.iterdir()
    return folder


def test_the_english_homework_bundle_is_english(english_bundle):
    import minigpt

    names = sorted(p.name for p in english_bundle.iterdir())
    wheel = f"minigpt_book-{minigpt.__version__}+{i18n.LANG}-py3-none-any.whl"
    assert names == sorted(["README.md", "homework_student.ipynb", wheel])
    for name in ("README.md", "homework_student.ipynb"):
        text = (english_bundle / name).read_text(encoding="utf-8")
        assert not tx.has_cjk(text), (name, "".join(tx.CJK.findall(text))[:40])
        assert f"pip install {wheel}" in text


@pytest.mark.kernel
def test_the_english_checkers_pass_the_reference_solutions_in_english(built_book_en, english_bundle, monkeypatch):
    """英文的作业笔记本，初始代码换成英文版作业页上的参考答案，用作业包里英文的 minigpt（wheel 直接放上
    PYTHONPATH）运行：每一题都是 ✔，输出里没有中文。"""
    import nbformat
    from nbclient import NotebookClient

    wheel = next(english_bundle.glob("*.whl"))
    tool = _load(built_book_en.root / "_build" / i18n.LANG / "tools" / "make_student_notebook.py", "en_student_tool")
    answers = tool.solutions()
    nb = nbformat.read(english_bundle / "homework_student.ipynb", as_version=4)
    starters = {}
    for cell in nb.cells:
        tag = next((t for t in cell.metadata.get("tags", []) if t.startswith("hw-starter-")), None)
        if tag:
            starters[id(cell)] = tag[len("hw-starter-"):]
            cell.source = answers[starters[id(cell)]]
    nb.cells.append(nbformat.v4.new_code_cell("import minigpt; print(minigpt.__file__)"))
    monkeypatch.setenv("PYTHONPATH", str(wheel))
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(english_bundle)}}).execute()
    seen = {}
    for cell in nb.cells:
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")
        assert all(o.output_type != "error" for o in cell.get("outputs", [])), cell.source[:200]
        assert not tx.has_cjk(text), text[:300]
        if id(cell) in starters:
            seen[starters[id(cell)]] = text
    assert len(seen) == 9
    for key, text in seen.items():
        assert f"✔ Assignment {key[0]} passed" in text, (key, text)
    assert str(wheel) in "".join(o.get("text", "") for o in nb.cells[-1].outputs)


def test_the_english_grader_speaks_english(english_bundle):
    """英文作业包里的批改程序：--help 与选项错误都是英文。"""
    import subprocess

    wheel = next(english_bundle.glob("*.whl"))
    env = {**os.environ, "PYTHONPATH": str(wheel)}
    for args, code in ((["--help"], 0), (["--timeout", "x", "a.ipynb"], 2)):
        proc = subprocess.run([sys.executable, "-m", "minigpt.grade", *args], capture_output=True, text=True,
                              env=env, cwd=english_bundle)
        out = proc.stdout + proc.stderr
        assert proc.returncode == code, out
        assert out.strip() and not tx.has_cjk(out), out[:500]


def test_the_english_reader_notebooks_are_english(built_site):
    import zipfile

    name = "attention-transformer-block-notebooks.zip"
    with zipfile.ZipFile(built_site.html / name) as zf:
        chinese = sorted(n for n in zf.namelist() if n.endswith(".ipynb"))
    with zipfile.ZipFile(built_site.html / i18n.LANG / name) as zf:
        notebooks = sorted(n for n in zf.namelist() if n.endswith(".ipynb"))
        assert notebooks == chinese and len(notebooks) >= 9
        for name in notebooks:
            text = zf.read(name).decode("utf-8")
            runs = set(re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", text))
            assert runs <= kept_on_purpose(), (name, sorted(runs - kept_on_purpose())[:10])
            assert not re.search(r"[\u3000-\u303f\uff00-\uffef]", text), name


def test_a_second_english_build_with_nothing_changed_writes_nothing(built_book_en, built_pdf_en):
    """英文版的空操作：英文的书一个文件都不重写，英文网站（_build/html/en）也一个文件都不动。
    （英文 PDF 先构建好：它也写进英文网站，别让另一个工作进程的那次构建算到这里。）"""
    import subprocess

    roots = [built_book_en.root / "_build" / i18n.LANG, built_book_en.html / i18n.LANG]

    def stamps():
        return {p: p.stat().st_mtime_ns for root in roots for p in root.rglob("*")
                if p.is_file() and "_build" not in p.relative_to(root).parts[:1]}

    before = stamps()
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "build_book.py"), "--lang", "en"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "不需要重建" in proc.stdout
    assert stamps() == before
