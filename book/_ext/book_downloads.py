"""下载：每页的 .ipynb、中文的下载菜单与整本书的 PDF，正文里的 {book-pdf} 与 {book-student-site} 链接（本地 Sphinx 扩展）。

离线发布的书不配 Binder/Colab 等“启动”服务（_config.yml），下载菜单的其余部分由 sphinx-book-theme 生成；
下面两件事配置做不到，所以有这个扩展：

1. **每页都能下载 .ipynb。** sphinx-book-theme 只有在配置了 Binder/Colab 等“启动”服务时，才把
   MyST Markdown 页面对应的 notebook 复制到 ``_sources/`` 并放进下载菜单；本书离线发布、不配
   启动服务，所以在主题生成下载菜单之前（优先级 500 < 501）做同样的事。而且 myst-nb 在
   ``execute_notebooks: cache`` 下写到 ``jupyter_execute/`` 的 notebook 没有输出，这里从
   jupyter-cache 取回执行结果再写出，读者下载到的是带输出的 notebook。
   （执行过的 .md 页面由 book_notebooks 先换成读者笔记本——普通 Markdown、带安装单元——这里随即跳过。）
2. **下载菜单是中文，并且有整本书的 PDF。** 主题在 Python 代码里生成下载菜单，“打印本页”那一项的文字
   写死为 “.pdf”，提示取自主题自己的消息目录（项目的 .po 覆盖不了它）。这里把那一项改成中文，并在
   末尾加一项指向整本书 PDF 的链接：文件名取自配置 ``book_pdf_on_site``（_config.yml 里唯一的出处，
   tools/build_book.py 按它复制 PDF）。只是链接，打开页面时不会请求它。首页正文里的下载链接用本扩展的
   角色 ``{book-pdf}`下载 PDF 版```，同样读这个配置；学生版网站的 zip 用角色 ``{book-student-site}``
   （文件名取自配置 ``book_student_site_on_site``）。
   配置 ``book_pdf_offered: false``（学生版在没有建好自己的 PDF 时由 tools/build_book.py 写进配置）让两处都不给
   链接：菜单里没有这一项，正文只印链接文字，网站上没有的文件就不会被链接。

扩展点：下载菜单的新条目照 ``chinese_download_menu`` 的样子往 ``download_menu(context)`` 里加
（book_notebooks、homework_bundle 就是这样加的）。
"""

from __future__ import annotations

import html
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.texescape import escape as tex_escape

logger = logging.getLogger(__name__)


# ---- 1. 每页的 .ipynb 下载 ----------------------------------------------------------------------

def offer_notebook_download(app: Sphinx, pagename: str, templatename: str,
                            context: dict, doctree) -> None:
    """把 myst-nb 执行后的 notebook 复制到 _sources/，让主题的下载菜单出现 .ipynb（主题只在配了启动服务时这样做）。"""
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
        logger.warning(f"[book_downloads] 执行缓存里没有 {path.name}：下载的 .ipynb 不含输出")
    return notebook


# ---- 2. 下载菜单：中文，外加整本书的 PDF；正文里的下载链接 -------------------------------------------

PRINT_PAGE = {"text": "打印本页", "tooltip": "用浏览器把本页打印或存成 PDF"}
BOOK_PDF_BUTTON = {"type": "link", "text": "整本书 PDF", "tooltip": "下载整本书的 PDF",
                   "icon": "fas fa-book", "label": "download-book-pdf-button"}


def download_menu(context: dict) -> list[dict] | None:
    """主题（优先级 501）生成的下载菜单里的按钮列表；页面没有下载菜单时为 None。"""
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            return group["buttons"]
    return None


def chinese_download_menu(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """菜单由主题的 Python 代码生成，“打印”一项的文字写死为 “.pdf”：改成中文，末尾加上整本书的 PDF。"""
    buttons = download_menu(context)
    if buttons is None:
        return
    for button in buttons:
        if button.get("label") == "download-pdf-button":  # window.print()
            button.update(PRINT_PAGE)
    if app.config.book_pdf_offered:
        buttons.append({**BOOK_PDF_BUTTON, "url": context["pathto"](app.config.book_pdf_on_site, 1)})


def book_pdf_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{book-pdf}`链接文字```：指向网站根目录上整本书 PDF 的下载链接（文件名取自配置，正文里不再写一遍）。

    LaTeX 等其他格式里只印链接文字（读者手上就是 PDF）；网站不提供 PDF 时（``book_pdf_offered: false``）也只印文字。
    """
    env = inliner.document.settings.env
    if not env.config.book_pdf_offered:
        return [nodes.Text(text)], []
    href = "../" * env.docname.count("/") + env.config.book_pdf_on_site
    link = f'<a class="book-pdf-link" href="{html.escape(href)}" download>{html.escape(text)}</a>'
    return [nodes.raw(rawtext, link, format="html"), nodes.raw(rawtext, tex_escape(text), format="latex")], []


def book_student_site_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{book-student-site}`链接文字```：网站根目录上学生版网站的 zip（两种语言的学生版都在里面；make html 在
    两个版本都建好之后把它放在那里，文件名取自配置 ``book_student_site_on_site``）。

    英文版的页面在 ``en/`` 下，指向的仍是根目录的同一个文件。学生版网站自己（``hide_solutions``）里没有这个
    文件，LaTeX 里也点不到：这两处只印链接文字。
    """
    env = inliner.document.settings.env
    latex = nodes.raw(rawtext, tex_escape(text), format="latex")
    if getattr(env.config, "hide_solutions", False):
        return [nodes.Text(text)], []
    prefix = next((e.get("prefix", "") for e in env.config.book_editions
                   if e["lang"] == env.config.book_edition), "")
    href = "../" * (env.docname.count("/") + prefix.count("/")) + env.config.book_student_site_on_site
    link = f'<a class="book-student-site-link" href="{html.escape(href)}" download>{html.escape(text)}</a>'
    return [nodes.raw(rawtext, link, format="html"), latex], []


def setup(app: Sphinx) -> dict:
    app.add_config_value("book_pdf_on_site", "book.pdf", "env", types=[str])
    app.add_config_value("book_pdf_offered", True, "env", types=[bool])
    app.add_role("book-pdf", book_pdf_role)
    app.add_config_value("book_student_site_on_site", "student-site.zip", "env", types=[str])
    app.add_role("book-student-site", book_student_site_role)
    app.connect("html-page-context", offer_notebook_download, priority=500)  # 主题在 501 生成下载菜单
    app.connect("html-page-context", chinese_download_menu, priority=502)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
