"""Sphinx 扩展：PDF（LaTeX）版的书籍结构。只在 LaTeX 构建里起作用，HTML 构建完全不受影响。

Sphinx 的 LaTeX 写出器把根页面里的所有 toctree 展开成一串 ``\\chapter``，但它

- 丢掉 toctree 的标题（``_toc.yml`` 里 parts 的 caption），
- 不区分编号与不编号的部分（LaTeX 给每一章都编号，正文第 1 节就成了第 3 章），
- 把根页面（book/index）的二级标题当成章。

这里在 LaTeX 构建把整本书拼成一棵树之后（根页面的 ``doctree-resolved``）按 ``_toc.yml`` 改正：

1. 根页面的正文包进一章不编号的“前言”，它的二级标题降为节；
2. 每个 part 前插入 ``\\bookpart{caption}``（目录与 PDF 书签里的分组标题，不另起一页）；
3. ``numbered: true`` 的 part 前插入 ``\\booknumbered``，其余插入 ``\\bookunnumbered``
   （宏在 book/_ext/book_pdf.sty 里：不编号的章不占章号，图表按全书连续编号，与网页版一致）。
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx

PREFACE_TITLE = "前言"


def _raw(tex: str) -> nodes.raw:
    return nodes.raw("", tex + "\n", format="latex")


def _tex_escape(text: str) -> str:
    for char, repl in (("\\", r"\textbackslash{}"), ("{", r"\{"), ("}", r"\}"), ("#", r"\#"),
                       ("$", r"\$"), ("%", r"\%"), ("&", r"\&"), ("_", r"\_"),
                       ("^", r"\^{}"), ("~", r"\~{}")):
        text = text.replace(char, repl)
    return text


def _root_parts(app: Sphinx) -> dict[str, tuple[int, str | None, bool]]:
    """{章的文档名: (part 序号, part 标题, 是否编号)}，取自 sphinx-external-toc 读到的 _toc.yml。

    只有一章、且章名就是 part 标题的 part（如“导读”）不再单列分组标题，免得目录里同一行出现两次。
    """
    site_map = getattr(app.config, "external_site_map", None)
    if site_map is None:
        return {}
    parts = {}
    for index, subtree in enumerate(site_map.root.subtrees):
        files = subtree.files()
        caption = subtree.caption
        if len(files) == 1 and files[0] in app.env.titles and app.env.titles[files[0]].astext() == caption:
            caption = None
        for docname in files:
            parts[docname] = (index, caption, bool(subtree.numbered))
    return parts


def restructure(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "latex" or docname != app.config.root_doc:
        return
    root = next((n for n in doctree.children if isinstance(n, nodes.section)), None)
    if root is None:
        return
    parts = _root_parts(app)

    # 1. 根页面自己的内容 → 不编号的“前言”一章
    wrappers = [n for n in root.children
                if isinstance(n, nodes.compound) and "toctree-wrapper" in n["classes"]]
    body = [n for n in root.children if not isinstance(n, nodes.title) and n not in wrappers]
    if body:
        preface = nodes.section(ids=["book-preface"], docname=docname)
        preface += nodes.title("", PREFACE_TITLE)
        for child in body:
            root.remove(child)
            preface += child
        position = root.index(root.children[0]) + 1 if isinstance(root.children[0], nodes.title) else 0
        root.insert(position, preface)
        root.insert(position, _raw(r"\bookunnumbered"))

    # 2./3. 每个 part：分组标题与编号方式
    seen_parts = set()
    for wrapper in wrappers:
        for chapter in list(wrapper.findall(addnodes.start_of_file)):
            if chapter.parent is not wrapper or chapter["docname"] not in parts:
                continue
            index, caption, numbered = parts[chapter["docname"]]
            if index in seen_parts:
                continue
            seen_parts.add(index)
            marks = [_raw(r"\booknumbered" if numbered else r"\bookunnumbered")]
            if caption:
                marks.insert(0, _raw(r"\bookpart{%s}" % _tex_escape(caption)))
            at = wrapper.index(chapter)
            for mark in reversed(marks):
                wrapper.insert(at, mark)


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", restructure)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
