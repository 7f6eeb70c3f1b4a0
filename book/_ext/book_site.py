"""本书网站的本地 Sphinx 扩展（在 _config.yml 的 sphinx.local_extensions 里登记）。

它做 _config.yml 做不到的几件事：

1. **中文检索词典用绝对路径。** Sphinx 把 ``html_search_options['dict']`` 按构建时的工作目录解析，
   找不到就悄悄不用。这里按配置目录（``app.confdir``）把它变成绝对路径；文件不存在时发警告
   （构建带 ``-W``，于是构建失败），而不是让检索默默退化。未配置时默认用 ``book/search_dict.txt``。
2. **MathJax 离线。** 用 PyPI 包 ``sphinx-mathjax-offline`` 自带的 MathJax 3：``mathjax_path`` 指向本站的
   ``_static/mathjax/tex-chtml.js``，HTML 构建结束时把 MathJax 复制到输出目录的 ``_static/mathjax/``，页面不再
   从 CDN 取脚本。它不在源目录的 ``_static`` 里，所以 Jupyter Book 不会把它的几十个 .js 挂到每一页上。
   （不直接加载那个扩展：它对 PDF 构建也复制 24 MB 的 MathJax。）
3. **中文搜索框提示。** Jupyter Book 默认把主题选项 ``search_bar_text`` 设成英文 “Search this book...”，
   这里换成中文（若已在配置里写了别的值，则保留）。
4. **每页都能下载 .ipynb。** sphinx-book-theme 只有在配置了 Binder/Colab 等“启动”服务时，才把
   MyST Markdown 页面对应的 notebook 复制到 ``_sources/`` 并放进下载菜单；本书离线发布、不配
   启动服务，所以在主题生成下载菜单之前（优先级 500 < 501）做同样的事。而且 myst-nb 在
   ``execute_notebooks: cache`` 下写到 ``jupyter_execute/`` 的 notebook 没有输出，这里从
   jupyter-cache 取回执行结果再写出，读者下载到的是带输出的 notebook。
5. **每页的脚本不重复。** Sphinx 7.4 的一个缺陷（8.2 修复，sphinx-doc/sphinx#13402）：扩展在构建器
   初始化之后用 ``add_js_file(None, body=...)`` 加的内联脚本会在页面里出现两次。sphinx-thebe 的
   ``const THEBE_JS_URL = ...`` 因而在每页都抛 “has already been declared”。这里按内容去重。
6. **浅色/深色默认跟随系统。** ``html_context`` 里没有 ``default_mode`` 时，pydata-sphinx-theme 在第一次访问时往
   控制台报 “Got invalid theme mode”；这里设成 ``auto``（若配置里没写）。
   另外去掉宽屏上那条只有重复搜索框的空顶栏（sphinx-book-theme#986）。
7. **界面文字都是中文。** ``language: zh_CN`` 之后仍有几处英文：sphinx-togglebutton 的折叠提示
   （“Click to show”，它的中文目录叫 zh-cn，对不上 zh_CN）、主题切换按钮的提示、页脚的
   “© Copyright”、Sphinx 7.4 新增的锚点提示（“Link to this heading”等），以及 sphinx-book-theme
   模板里写死的几个提示（左右侧栏开关、主目录的 aria-label）。前几类在这里补上译文
   （``UI_MESSAGES``、``TOGGLE_HINTS``），写死的那几个由 ``templates/`` 里的同名小模板覆盖。
8. **下载菜单里有整本书的 PDF。** ``make pdf`` 把 PDF 复制到网站根目录的固定文件名
   ``attention-transformer-block.pdf``（tools/build_book.py 的 ``PDF_ON_SITE``）；每页的下载菜单在
   “.ipynb / .md / 打印本页”之外再给一项指向它的链接（只是链接，打开页面时不会请求它）。
9. **站点根目录的 index.html。** sphinx-external-toc 在根页面不叫 index 时写一个只有一行
   ``<meta refresh>`` 的跳转页（没有 ``lang``、没有标题）；这里先写一个完整的中文跳转页。
"""

from __future__ import annotations

import html
import importlib
import shutil
from pathlib import Path

import nbformat
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

DEFAULT_DICT = "book/search_dict.txt"
SEARCH_BAR_TEXT = "搜索本书……"
# Jupyter Book 1.x 写进 html_theme_options 的英文默认值
JB_DEFAULT_SEARCH_BAR_TEXT = "Search this book..."


def _absolute_search_dict(app: Sphinx, config) -> None:
    options = dict(config.html_search_options or {})
    path = Path(options.get("dict") or DEFAULT_DICT)
    if not path.is_absolute():
        path = Path(app.confdir) / path
    path = path.resolve()
    if not path.is_file():
        logger.warning(f"[book_site] 中文检索词典不存在：{path}（html_search_options['dict']）")
    options["dict"] = str(path)
    config.html_search_options = options


def _chinese_search_bar(app: Sphinx, config) -> None:
    theme_options = config.html_theme_options
    if theme_options.get("search_bar_text") in (None, JB_DEFAULT_SEARCH_BAR_TEXT):
        theme_options["search_bar_text"] = SEARCH_BAR_TEXT


# 主题与扩展的消息目录里缺的或不合适的中文译文：{(命名空间, 目录名): {原文: 译文}}。
# 只在 language 是中文时生效；补在各自的翻译对象上，所以优先于主题自带的条目。
UI_MESSAGES = {
    ("general", "sphinx"): {            # pydata-sphinx-theme 的模板文字
        "Color mode": "颜色模式",
        "Light": "浅色",
        "Dark": "深色",
        "System Settings": "跟随系统",
        "© Copyright %(copyright)s.": "© %(copyright)s 版权所有。",
        "Copyright %(copyright)s": "%(copyright)s 版权所有",
        # Sphinx 7.4 新加的标题/图/公式锚点提示，zh_CN 目录里还没有译文
        "Link to this heading": "链接到此标题",
        "Link to this image": "链接到此图",
        "Link to this table": "链接到此表",
        "Link to this code": "链接到此代码",
        "Link to this equation": "链接到此公式",
        "Link to this definition": "链接到此定义",
    },
    ("general", "booktheme"): {         # sphinx-book-theme 的下载菜单等
        "Print to PDF": "打印为 PDF",
    },
}
TOGGLE_HINTS = {"togglebutton_hint": ("Click to show", "点击展开"),
                "togglebutton_hint_hide": ("Click to hide", "点击收起")}


def _chinese_ui_strings(app: Sphinx, config) -> None:
    if not str(config.language or "").startswith("zh"):
        return
    from sphinx.locale import translators

    for key, messages in UI_MESSAGES.items():
        catalog = getattr(translators.get(key), "_catalog", None)
        if catalog is not None:  # NullTranslations（没有任何目录）时没有 _catalog
            catalog.update(messages)
    for name, (english, chinese) in TOGGLE_HINTS.items():
        if config[name] == english:
            config[name] = chinese
    # sphinx-book-theme 模板里写死英文的几个小组件，用同名模板覆盖
    config.templates_path = [str(Path(__file__).parent / "templates"), *config.templates_path]


MATHJAX_PATH = "mathjax/tex-chtml.js"  # 相对于 _static/


def _mathjax_source() -> Path:
    # 包名带连字符，只能这样导入；它只定义函数，导入时不做任何事
    package = importlib.import_module("sphinx-mathjax-offline")
    return Path(package.__file__).parent / "static" / "mathjax"


def _offline_mathjax(app: Sphinx, config) -> None:
    if "://" in str(config.mathjax_path):  # 还是 Sphinx 默认的 CDN 地址（或别人写的网址）
        config.mathjax_path = MATHJAX_PATH


def copy_mathjax(app: Sphinx, exception) -> None:
    if exception is None and app.builder.format == "html" and app.config.mathjax_path == MATHJAX_PATH:
        shutil.copytree(_mathjax_source(), Path(app.outdir) / "_static" / "mathjax", dirs_exist_ok=True)


def config_inited(app: Sphinx, config) -> None:
    _offline_mathjax(app, config)
    _absolute_search_dict(app, config)
    _chinese_search_bar(app, config)
    _chinese_ui_strings(app, config)
    config.html_context.setdefault("default_mode", "auto")
    # sphinx-book-theme 1.3 + pydata 0.17 在宽屏上也显示一条几乎空的顶栏，里面只有第二个搜索框
    # （executablebooks/sphinx-book-theme#986）；左侧栏已有搜索框，这里不要这条顶栏。
    config.html_theme_options.setdefault("navbar_persistent", [])


def dedupe_assets(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """同一个脚本/样式（同文件名、同属性、同内联内容）在页面里只出现一次。"""
    for key in ("script_files", "css_files"):
        assets = context.get(key)
        if not assets:
            continue
        seen, unique = set(), []
        for asset in assets:
            attributes = getattr(asset, "attributes", None) or {}
            ident = (str(getattr(asset, "filename", asset) or ""),
                     tuple(sorted((k, str(v)) for k, v in attributes.items())))
            if ident not in seen:
                seen.add(ident)
                unique.append(asset)
        assets[:] = unique  # 原地改：之后的处理器仍往同一个列表里加


def offer_notebook_download(app: Sphinx, pagename: str, templatename: str,
                            context: dict, doctree) -> None:
    """把 myst-nb 执行后的 notebook 复制到 _sources/，让主题的下载菜单出现 .ipynb。"""
    if doctree is None or context.get("ipynb_source"):
        return
    if "kernelspec" not in app.env.metadata.get(pagename, {}):
        return  # 不是 notebook 页面
    if not context.get("sourcename", "").endswith((".md", ".md.txt")):
        return  # .ipynb 源文件本身已在下载菜单里
    written = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not written.is_file():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(nbformat.writes(_with_outputs(app, written)), encoding="utf-8")
    context["ipynb_source"] = f"{pagename}.ipynb"


def _with_outputs(app: Sphinx, path: Path) -> nbformat.NotebookNode:
    """myst-nb 写出的 notebook，补上 jupyter-cache 里的执行结果（缓存里没有时原样返回）。"""
    notebook = nbformat.read(path, as_version=4)
    if app.config.nb_execution_mode != "cache":
        return notebook  # 其他执行方式下 myst-nb 写出的已经是执行后的 notebook
    from jupyter_cache import get_cache

    cache_path = app.config.nb_execution_cache_path or Path(app.outdir).parent / ".jupyter_cache"
    try:
        _, notebook = get_cache(str(cache_path)).merge_match_into_notebook(notebook)
    except KeyError:
        logger.warning(f"[book_site] 执行缓存里没有 {path.name}：下载的 .ipynb 不含输出")
    return notebook


BOOK_PDF = "attention-transformer-block.pdf"  # 与 tools/build_book.py 的 PDF_ON_SITE 一致（有测试核对）


def offer_book_pdf(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """在主题的下载菜单（优先级 501 生成）末尾加上整本书的 PDF。"""
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"].append({
                "type": "link",
                "url": context["pathto"](BOOK_PDF, 1),
                "text": "整本书 PDF",
                "tooltip": "下载整本书的 PDF",
                "icon": "fas fa-book",
                "label": "download-book-pdf-button",
            })


REDIRECT_PAGE = """<!DOCTYPE html>
<html lang="zh-CN">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0; url={url}">
<title>{title}</title>
<link rel="icon" href="{favicon}">
</head>
<body>
<p>正在前往 <a href="{url}">{title}</a>……</p>
</body>
</html>
"""


def write_root_redirect(app: Sphinx, exception) -> None:
    """根页面不是 index 时，在输出根目录写一个中文跳转页（先于 sphinx-external-toc 的单行版本）。"""
    if exception is not None or app.builder.format != "html" or app.config.root_doc == "index":
        return
    index = Path(app.outdir) / "index.html"
    favicon = app.config.html_favicon or ""
    if favicon and "://" not in favicon:
        favicon = "_static/" + Path(favicon).name
    index.write_text(REDIRECT_PAGE.format(
        url=html.escape(app.builder.get_target_uri(app.config.root_doc)),
        title=html.escape(app.config.html_title or app.config.project),
        favicon=html.escape(favicon)), encoding="utf-8")


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", config_inited, priority=400)  # 先于 sphinx-togglebutton 读提示文字
    app.connect("html-page-context", offer_notebook_download, priority=500)
    app.connect("html-page-context", offer_book_pdf, priority=502)
    app.connect("html-page-context", dedupe_assets, priority=900)
    app.connect("build-finished", copy_mathjax)
    app.connect("build-finished", write_root_redirect, priority=400)  # 先于 sphinx-external-toc（500）
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
