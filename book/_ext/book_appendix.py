"""Sphinx 扩展：附录的图表编号为 A.1、A.2……（网站与 PDF 一致）。

附录页在 _config.yml 的 ``book_appendices`` 里登记（``{文档名: 字母}``）。Sphinx 的 numfig 只会给不在编号目录里的
页面按全书连续编号（图 1、图 2…），没有“附录字母”这种配置，所以：

- **网站**：Sphinx 每次构建都在 ``env-get-updated`` 里重算图表编号（``env.toc_fignumbers``），并把新旧编号
  不同的页面标为需要重写。这里在写出开始时（``write-started``，环境已经存盘之后）才把附录页的编号改成
  ``("A", 1)``、``("A", 2)``……（写出时按 “.” 连接，即“图 A.1”），其余不编号页面的编号跳过附录重新连续排。
  图注与 ``{numref}`` 都读这份编号。存盘的始终是 Sphinx 自己的编号，所以下一次构建比较新旧编号时不会把
  附录和目录页误判为“编号变了”而重写它们（在 ``env-get-updated`` 里改的话，每次构建都会重写这两页）。
- **PDF**：LaTeX 自己给图表编号；在整本书拼成的文档树里（根页面的 ``doctree-resolved``），附录一章之前插入
  ``\\bookappendix{A}``，之后插入 ``\\bookendappendix``（宏在 book_pdf.sty 里）。
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx


def number_appendix_figures(app: Sphinx, builder=None) -> None:
    """附录页的图表编号换成 (字母, 序号)；其余不编号页面（编号只有一层）的编号跳过附录、按目录顺序连续。

    可以重复调用：结果只取决于编号的先后。"""
    env = app.env
    appendices = app.config.book_appendices or {}
    if not appendices:
        return
    unnumbered: dict[str, int] = {}  # 图表类型 → 非附录、不编号页面里已排到第几个
    for docname, by_type in env.toc_fignumbers.items():  # Sphinx 按目录顺序填的这个字典
        letter = appendices.get(docname)
        for figtype, numbers in by_type.items():
            in_order = sorted(numbers, key=lambda fig_id: numbers[fig_id])
            for index, fig_id in enumerate(in_order, 1):
                if letter:
                    numbers[fig_id] = (letter, index)
                elif len(numbers[fig_id]) == 1:
                    unnumbered[figtype] = unnumbered.get(figtype, 0) + 1
                    numbers[fig_id] = (unnumbered[figtype],)


def mark_appendices_for_latex(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """PDF：附录一章前后插入 \\bookappendix{字母} / \\bookendappendix，图表在这一章里编号为 A.1、A.2……"""
    if app.builder.format != "latex" or docname != app.config.root_doc:
        return
    appendices = app.config.book_appendices or {}
    for chapter in list(doctree.findall(addnodes.start_of_file)):
        letter = appendices.get(chapter.get("docname"))
        if not letter:
            continue
        parent = chapter.parent
        at = parent.index(chapter)
        parent.insert(at + 1, nodes.raw("", "\\bookendappendix\n", format="latex"))
        parent.insert(at, nodes.raw("", "\\bookappendix{%s}\n" % letter, format="latex"))


def setup(app: Sphinx) -> dict:
    app.add_config_value("book_appendices", {}, "env", types=[dict])
    # 环境存盘之后、写出任何页面之前（每次写出都会触发，哪怕这次没有重读任何页面）
    app.connect("write-started", number_appendix_figures)
    # book_pdf 的 restructure（优先级 500）先按 _toc.yml 插好分组与编号方式
    app.connect("doctree-resolved", mark_appendices_for_latex, priority=600)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
