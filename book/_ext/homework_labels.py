"""作业页上计分的题显示为“作业（…）”，它的解答显示为“解答 作业（…）”（网站与 PDF 相同）。

各节末尾不计分的练习仍是 sphinx-exercise 的“练习（…）”。sphinx-exercise 没有改标题前缀的选项，
它的译文又对所有练习一起生效，所以这里只改带 ``:class: homework`` 的 {exercise}：
读完文档（doctree-read）就把练习标题里的“练习”换成“作业”，文档里的节点和 sphinx-exercise
登记处复制的那一份都换；解答的标题在之后的 post-transform 里从登记处那一份抄过去，也就跟着变了。
网站和 LaTeX 用的是同一棵文档树，PDF 里也一样。
"""

from __future__ import annotations

from docutils import nodes

HOMEWORK_CLASS = "homework"
LABEL = "作业"


def _retitle(node) -> None:
    from sphinx_exercise.nodes import exercise_title

    title = node.children[0] if node.children else None
    if isinstance(title, exercise_title) and title.children and isinstance(title.children[0], nodes.Text):
        title.replace(title.children[0], nodes.Text(LABEL))


def _relabel(app, doctree) -> None:
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


def setup(app):
    app.connect("doctree-read", _relabel)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
