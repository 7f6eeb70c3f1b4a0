"""学生版网站：``hide_solutions`` 为真时，参考答案从网站的每一处消失（本地 Sphinx 扩展）。

``hide_solutions`` 是 sphinx-exercise 自己的配置项，_config.yml 里不设（默认 False：网站带参考答案，折叠着）；
``tools/build_book.py --student`` 构建时把它设为 True。配置做不到的只有下面两件，所以有这个扩展：

1. **分段写的解答整块去掉。** 作业页的参考答案是 ``solution-start`` … ``solution-end`` 之间的一段（其中有代码单元
   和它们的输出）。sphinx-exercise 1.2.1 在 ``hide_solutions`` 下只让 ``solution-start`` 自己什么都不返回，
   中间的代码和输出照样留在页面上，只是没有了“解答”的外框——答案反而不折叠了。这里换上一个
   ``solution-start`` 指令：隐藏时留一个记号，再由一个变换把记号到 ``solution-end`` 之间的兄弟节点全部删掉，
   换成一句“这份网站不带参考答案”（页面上引出答案的那句话，例如“两问的参考答案：”，因而不会悬空）。
   文档树里没有了它们，网页、检索索引和读者笔记本（book_notebooks 由文档树生成）里就都没有。
2. **页面的源文件里也去掉。** Sphinx 把每页的 MyST 源文件原样复制到 ``_sources/``（下载菜单里的 .md），
   那里有完整的参考答案。构建结束时把这些副本里的解答指令整段换成同一句话。
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx_exercise.directive import SolutionStartDirective
from sphinx_exercise.nodes import solution_end_node

# MyST 源文件里的解答：```{solution-start} … ```{solution-end} 再加它的收尾围栏；或者一整个 ```{solution} 指令
SOLUTION_SOURCE = re.compile(
    r"^(?P<f>`{3,}|:{3,})\{solution-start\}.*?^(?P=f)\{solution-end\}[^\n]*\n(?P=f)[ \t]*\n?"
    r"|^(?P<g>`{3,}|:{3,})\{solution\}.*?^(?P=g)[ \t]*\n?",
    re.S | re.M)


def strip_solutions(text: str) -> str:
    """把 MyST 源文字里的每个解答指令（连同其间的代码单元）换成一句 HIDDEN_NOTE。"""
    return SOLUTION_SOURCE.sub(HIDDEN_NOTE + "\n", text)


HIDDEN_NOTE = "（这份网站是不带参考答案的学生版。）"


class hidden_solution(nodes.Element):
    """解答被隐藏的地方：从这里到下一个 solution-end 的兄弟节点都要删掉。"""


class HidingSolutionStart(SolutionStartDirective):
    def run(self):
        shown = super().run()
        return [hidden_solution()] if self.env.app.config.hide_solutions else shown


class RemoveHiddenSolutions(SphinxTransform):
    """删掉 hidden_solution 记号与其后直到 solution_end_node（含）之间的全部兄弟节点。"""

    default_priority = 11   # sphinx-exercise 合并分段解答的变换是 10

    def apply(self) -> None:
        for marker in list(self.document.findall(hidden_solution)):
            parent = marker.parent
            start = parent.index(marker)
            end = next((i for i in range(start, len(parent.children))
                        if isinstance(parent.children[i], solution_end_node)), None)
            if end is None:   # 没有配对的 solution-end：sphinx-exercise 自己会报错，这里只去掉记号
                parent.remove(marker)
                continue
            for child in parent.children[start + 1:end + 1]:
                parent.remove(child)
            note = nodes.paragraph(text=HIDDEN_NOTE, classes=["solution-hidden"])
            marker.replace_self(note)


def remember_source(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """记下要改写的源文件副本（Sphinx 在这个事件之后才复制它）。"""
    if app.config.hide_solutions and context.get("sourcename"):
        app._book_hidden_sources = getattr(app, "_book_hidden_sources", set()) | {context["sourcename"]}


def strip_copied_sources(app: Sphinx, exception) -> None:
    if exception is not None or not app.config.hide_solutions or app.builder.format != "html":
        return
    for name in sorted(getattr(app, "_book_hidden_sources", ())):
        path = Path(app.outdir) / "_sources" / name
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            stripped = strip_solutions(text)
            if stripped != text:
                path.write_text(stripped, encoding="utf-8")


def setup(app: Sphinx) -> dict:
    app.add_node(hidden_solution)
    app.add_directive("solution-start", HidingSolutionStart, override=True)
    app.add_transform(RemoveHiddenSolutions)
    app.connect("html-page-context", remember_source)
    app.connect("build-finished", strip_copied_sources)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
