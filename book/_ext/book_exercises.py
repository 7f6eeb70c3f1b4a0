"""sphinx-exercise 的补丁：练习与解答的标题、id，作业的标签，学生版网站里的参考答案（本地 Sphinx 扩展）。

sphinx-exercise 1.2 只有两个配置项（``hide_solutions`` 与 ``exercise_style``）；下面每一件都是它写死在代码里的行为，
配置改不了，所以都在这个扩展里（各节末尾的 {exercise}、作业页上的作业与它们的 {solution} 都由 sphinx-exercise 排版）：

1. **练习标题的括号是全角的。** sphinx-exercise 在后期变换里把标题拼成 “练习” + ``" ("`` + 标题 + ``")"``，
   括号写死在代码里（没有配置项，也不经过消息目录）。在它之后（优先级 25 > 20–22）把练习与解答标题里
   包着中文的那一对半角括号换成全角的（），前面的空格一并去掉。
2. **练习与解答的正文没有重复的 id。** sphinx-exercise 1.2 把每道练习、每份解答的正文都放进一个 id 写死为
   ``exercise-content`` / ``solution-content`` 的 section（代码里的常量，没有配置项）：一页有两道以上练习时 id
   重复，HTML 不合规，指向它的链接和 ``aria-labelledby`` 都会指错。没有任何样式或脚本用这两个 id；这里在
   它之后把它们换成由所在练习的 id 派生、整页唯一的 id（``<练习的 id>-content``）。
3. **点解答的标题就展开解答。** sphinx-exercise 把解答标题里 “练习（…）” 那几个字做成指回练习的链接；解答用
   ``:class: dropdown`` 折叠时，整条标题是展开按钮，点中那几个字却只是跳到练习、解答不展开（标题越长越容易点中）。
   解答就排在它的练习下面，这个链接用处不大：这里把它换成同样的文字。
4. **作业页上计分的题显示为“作业（…）”，它的解答显示为“解答 作业（…）”（网站与 PDF 相同）。**
   各节末尾不计分的练习仍是 sphinx-exercise 的“练习（…）”。sphinx-exercise 没有改标题前缀的选项，
   它的译文又对所有练习一起生效，所以这里只改带 ``:class: homework`` 的 {exercise}：
   读完文档（doctree-read）就把练习标题里的“练习”换成“作业”，文档里的节点和 sphinx-exercise
   登记处复制的那一份都换；解答的标题在之后的 post-transform 里从登记处那一份抄过去，也就跟着变了。
   网站和 LaTeX 用的是同一棵文档树，PDF 里也一样。
5. **学生版网站：``hide_solutions`` 为真时，参考答案从网站的每一处消失。**
   ``hide_solutions`` 是 sphinx-exercise 自己的配置项，_config.yml 里不设（默认 False：网站带参考答案，折叠着）；
   ``tools/build_book.py --student`` 构建时把它设为 True。配置做不到的是下面两件：

   a. **分段写的解答整块去掉。** 作业页的参考答案是 ``solution-start`` … ``solution-end`` 之间的一段（其中有代码单元
      和它们的输出）。sphinx-exercise 1.2.1 在 ``hide_solutions`` 下只让 ``solution-start`` 自己什么都不返回，
      中间的代码和输出照样留在页面上，只是没有了“解答”的外框——答案反而不折叠了。这里换上一个
      ``solution-start`` 指令：隐藏时留一个记号，再由一个变换把记号到 ``solution-end`` 之间的兄弟节点全部删掉，
      换成一句“这份网站不带参考答案”（页面上引出答案的那句话，例如“两问的参考答案：”，因而不会悬空）。
      文档树里没有了它们，网页、检索索引和读者笔记本（book_notebooks 由文档树生成）里就都没有。
   b. **页面的源文件里也去掉。** Sphinx 把每页的 MyST 源文件原样复制到 ``_sources/``（下载菜单里的 .md），
      那里有完整的参考答案。构建结束时把这些副本里的解答指令整段换成同一句话。
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.directive import SolutionStartDirective
from sphinx_exercise.nodes import solution_end_node


# ---- 1. 练习标题的全角括号 ---------------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u9fff]")


class FullWidthExerciseParens(SphinxPostTransform):
    """练习（及其解答）标题里包着中文的 “ (…)” 换成 “（…）”。"""

    default_priority = 25  # sphinx-exercise 在 20（练习）、21（解答）、22（链接文字）拼好标题

    def run(self, **kwargs) -> None:
        from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node, solution_node

        for box in self.document.findall(lambda n: isinstance(
                n, (exercise_node, exercise_enumerable_node, solution_node))):
            if box.children and isinstance(box.children[0], nodes.title):
                fullwidth_parens(box.children[0])


def fullwidth_parens(title: nodes.Element) -> None:
    """title 里最后一对 “ (” … “)” 之间有中文时，把这两个文字节点换成全角括号（就地修改）。"""
    texts = list(title.findall(nodes.Text))
    opens = [i for i, x in enumerate(texts) if str(x).endswith(" (")]
    closes = [i for i, x in enumerate(texts) if str(x) == ")"]
    if not opens or not closes or closes[-1] < opens[-1]:
        return
    start, end = opens[-1], closes[-1]
    if not _CJK.search("".join(str(x) for x in texts[start + 1:end])):
        return
    for i, text in ((start, str(texts[start])[:-2] + "（"), (end, "）")):
        texts[i].parent.replace(texts[i], nodes.Text(text))


# ---- 2. 练习与解答正文的 id ------------------------------------------------------------------

class UniqueExerciseContentIds(SphinxPostTransform):
    """练习与解答正文那一层 section 的固定 id 换成整页唯一的 id（见模块说明第 2 条）。"""

    default_priority = 25  # sphinx-exercise 在 20–22 建好练习与解答（解答的正文在 21 才放进 section）
    FIXED = {"exercise-content", "solution-content"}

    def run(self, **kwargs) -> None:
        from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node, solution_node

        for box in self.document.findall(lambda n: isinstance(
                n, (exercise_node, exercise_enumerable_node, solution_node))):
            for section in box.findall(nodes.section):
                fixed = [i for i in section["ids"] if i in self.FIXED]
                if not fixed:
                    continue
                section["ids"] = [i for i in section["ids"] if i not in self.FIXED]
                base = box["ids"][0] if box["ids"] else fixed[0]
                new_id, n = f"{base}-content", 1
                while new_id in self.document.ids:
                    n += 1
                    new_id = f"{base}-content-{n}"
                section["ids"].append(new_id)
                self.document.ids[new_id] = section


# ---- 3. 解答的标题不是链接 -------------------------------------------------------------------

class PlainSolutionTitles(SphinxPostTransform):
    """折叠的解答，标题里不带链接（见模块说明第 3 条）。"""

    default_priority = 25  # sphinx-exercise 在 22 把指回练习的链接放进解答标题

    def run(self, **kwargs) -> None:
        from sphinx_exercise.nodes import solution_node

        for box in self.document.findall(solution_node):
            if not box.children or not isinstance(box.children[0], nodes.title):
                continue
            for ref in list(box.children[0].findall(nodes.reference)):
                ref.replace_self(ref.children)


# ---- 4. 作业的标签 --------------------------------------------------------------------------

HOMEWORK_CLASS = "homework"
LABEL = "作业"


def _retitle(node) -> None:
    from sphinx_exercise.nodes import exercise_title

    title = node.children[0] if node.children else None
    if isinstance(title, exercise_title) and title.children and isinstance(title.children[0], nodes.Text):
        title.replace(title.children[0], nodes.Text(LABEL))


def homework_labels(app, doctree) -> None:
    """带 ``:class: homework`` 的练习：标题里的“练习”换成“作业”（见模块说明第 4 条）。"""
    from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node

    registry = getattr(app.env, "sphinx_exercise_registry", {})
    for node in doctree.findall(lambda n: isinstance(n, (exercise_node, exercise_enumerable_node))):
        if HOMEWORK_CLASS not in node.get("classes", []):
            continue
        _retitle(node)
        # 解答的标题抄的是登记处的那一份（sphinx-exercise 登记时复制了一份节点）
        entry = registry.get(node.get("label", ""))
        if entry is not None:
            _retitle(entry["node"])


# ---- 5. 学生版网站：去掉参考答案 --------------------------------------------------------------

# MyST 源文件里的解答：```{solution-start} … ```{solution-end} 再加它的收尾围栏；或者一整个 ```{solution} 指令
SOLUTION_SOURCE = re.compile(
    r"^(?P<f>`{3,}|:{3,})\{solution-start\}.*?^(?P=f)\{solution-end\}[^\n]*\n(?P=f)[ \t]*\n?"
    r"|^(?P<g>`{3,}|:{3,})\{solution\}.*?^(?P=g)[ \t]*\n?",
    re.S | re.M)


def strip_solutions(text: str) -> str:
    """把 MyST 源文字里的每个解答指令（连同其间的代码单元）换成一句 HIDDEN_NOTE。"""
    return SOLUTION_SOURCE.sub(HIDDEN_NOTE + "\n", text)


HIDDEN_NOTE = "（这是不带参考答案的学生版。）"


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
    app.add_post_transform(FullWidthExerciseParens)
    app.add_post_transform(UniqueExerciseContentIds)
    app.add_post_transform(PlainSolutionTitles)
    app.connect("doctree-read", homework_labels)
    app.add_node(hidden_solution)
    app.add_directive("solution-start", HidingSolutionStart, override=True)
    app.add_transform(RemoveHiddenSolutions)
    app.connect("html-page-context", remember_source)
    app.connect("build-finished", strip_copied_sources)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
