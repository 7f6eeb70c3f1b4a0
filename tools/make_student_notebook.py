"""从「作业」页（book/homework.md）生成学生版笔记本 book/homework_student.ipynb。

页面是唯一的来源：笔记本里的题目、初始代码和检查器调用都取自页面，参考答案一律不带。
页面里用单元标签标出要带走的内容：

- 代码单元 ``hw-student``：原样带走（导入、题目数据）；
- 代码单元 ``hw-starter-<编号>``：初始代码（带 ``None`` 占位和检查器调用），原样带走，标签保留，
  测试据此把它换成页面上标签为 ``hw-solution-<编号>`` 的参考答案再运行；
- Markdown 单元 ``hw-student``（MyST 写法 ``+++ {"tags": ["hw-student"]}``）：带走，其中的
  ``{exercise}`` 指令改写成普通 Markdown 的小标题加正文。

位于 ``solution-start`` 与 ``solution-end`` 之间的单元绝不会带走；要是那里出现了上面的标签，
本脚本报错退出，免得答案漏进学生版。

用法（在仓库根目录，用 .venv 里的 Python）::

    python tools/make_student_notebook.py          # 重新生成并写入
    python tools/make_student_notebook.py --check  # 只检查已提交的笔记本是否最新，过期时退出码 1
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat
from myst_nb.core.read import read_myst_markdown_notebook

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "book" / "homework.md"
NOTEBOOK = REPO / "book" / "homework_student.ipynb"

STUDENT_TAG = "hw-student"
STARTER_PREFIX = "hw-starter-"
SOLUTION_PREFIX = "hw-solution-"

HEADER = """\
# 作业：点积与分数矩阵、遮住未来、数出 FFN 的参数、多头注意力、LayerNorm 与 Block

这是《Attention 机制与 Transformer Block》一书「作业」一节的练习本，题目与书中相同，不含参考答案。

**准备**：照作业包里 `README.md` 的步骤，先在一个虚拟环境里装好只用 CPU 的 PyTorch，\
再在作业包的文件夹里运行 `pip install {wheel}`，装好本书的 Python 包 `minigpt`，检查器就在里面；\
然后用 Jupyter 打开这个笔记本。

**怎么做**：从上往下逐个运行。带 `# TODO` 的单元里有 `None` 占位，换成你的代码再运行；\
单元最后一行的检查器会告诉你对不对，错了会提示最可能错在哪一步。还没填的时候，\
运行到第一个检查器就会停下，提示“还没有填写”：这是正常的，填好它再往下走。

**交作业**：做完后“重启内核并运行全部”一次，保存，交回这个 `.ipynb` 文件。"""

# ```{exercise} 标题      （反引号或冒号围栏，三个以上）
#   :选项: 值
#
#   正文
# ```
_EXERCISE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{exercise\}[ \t]*(?P<title>[^\n]*)\n"
    r"(?P<options>(?:[ \t]*:[\w-]+:[^\n]*\n)*)"
    r"(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.S | re.M,
)


# 术语表链接 {term}`术语` 或 {term}`显示文字 <术语>`：Jupyter 不认识，学生版里只留显示的文字
_TERM = re.compile(r"\{term\}`(?:(?P<text>[^`<]*?)\s*<(?P<target>[^`>]+)>|(?P<plain>[^`]+))`")


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def exercise_to_markdown(text: str, number: int) -> tuple[str, int]:
    """把 MyST 的 {exercise} 指令改写成 Jupyter 能显示的 Markdown：小标题「作业 N：标题」+ 正文。

    number 是这一段里第一道题的编号（与检查器说的“作业 N”一致）；返回改写结果和下一个编号。
    """

    def repl(m: re.Match) -> str:
        nonlocal number
        title = m.group("title").strip()
        heading = f"作业 {number}：{title}" if title else f"作业 {number}"
        number += 1
        return f"## {heading}\n\n{m.group('body').strip()}\n"

    out = _TERM.sub(lambda m: m.group("text") or m.group("plain"), _EXERCISE.sub(repl, text))
    if "{exercise}" in out or re.search(r"^(`{3,}|:{3,})\{", out, re.M) or re.search(r"\{[\w:-]+\}`", out):
        raise ValueError(f"学生版里不能留下 MyST 指令（Jupyter 显示不了）：\n{out}")
    return out.strip(), number


def page_cells(page: Path = PAGE) -> list:
    """读出页面的单元（myst-nb 的读法，与构建时一致），并标出哪些位于参考答案之内。

    返回 [(cell, in_solution)]。
    """
    nb = read_myst_markdown_notebook(page.read_text(encoding="utf-8"), path=page)
    cells, in_solution = [], False
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "{solution-start}" in cell.source:
            if in_solution:
                raise ValueError("solution-start 嵌套：上一个参考答案还没有 solution-end")
            in_solution = True
        cells.append((cell, in_solution and "{solution-end}" not in cell.source))
        if cell.cell_type == "markdown" and "{solution-end}" in cell.source:
            in_solution = False
    if in_solution:
        raise ValueError("页面结尾还有没关上的 solution-start")
    return cells


def solutions(page: Path = PAGE) -> dict[str, str]:
    """页面上的参考答案：{编号: 代码}，编号来自标签 hw-solution-<编号>。"""
    found = {}
    for cell, in_solution in page_cells(page):
        for tag in _tags(cell):
            if tag.startswith(SOLUTION_PREFIX):
                if not in_solution:
                    raise ValueError(f"标签 {tag} 的单元不在 solution-start / solution-end 之内")
                found[tag[len(SOLUTION_PREFIX):]] = cell.source
    return found


def wheel_name() -> str:
    """作业包里 wheel 的全名（发行名取自 pyproject.toml，版本取自 minigpt.__version__）。

    笔记本里写全名而不写 ``minigpt_book-*.whl``：Windows 的 cmd 和 PowerShell 不展开 ``*``，pip 自己也不展开。
    """
    import tomllib

    import minigpt

    name = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    return f"{name.replace('-', '_')}-{minigpt.__version__}-py3-none-any.whl"


def build_notebook(page: Path = PAGE) -> nbformat.NotebookNode:
    """按页面生成学生版笔记本（只在内存里，不写文件）。"""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    nb.cells.append(nbformat.v4.new_markdown_cell(HEADER.format(wheel=wheel_name())))
    starters, number = [], 1
    for cell, in_solution in page_cells(page):
        tags = _tags(cell)
        starter = [t for t in tags if t.startswith(STARTER_PREFIX)]
        wanted = STUDENT_TAG in tags or bool(starter)
        if not wanted:
            continue
        if in_solution:
            raise ValueError(f"参考答案里的单元带了学生版标签 {tags}：答案会漏进学生版")
        if cell.cell_type == "markdown":
            text, number = exercise_to_markdown(cell.source, number)
            nb.cells.append(nbformat.v4.new_markdown_cell(text))
        elif cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(cell.source.strip())
            if starter:
                new.metadata["tags"] = starter
                starters += starter
            nb.cells.append(new)
    if not starters:
        raise ValueError(f"{page} 里没有找到任何 {STARTER_PREFIX}* 单元")
    missing = {t[len(STARTER_PREFIX):] for t in starters} - set(solutions(page))
    if missing:
        raise ValueError(f"这些初始代码在页面上没有对应的参考答案（hw-solution-…）：{sorted(missing)}")
    for i, cell in enumerate(nb.cells):  # 固定的单元 id：重新生成时文件逐字节不变
        cell["id"] = f"hw-{i:02d}"
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb, version=4) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="只检查，不写文件；过期时退出码 1")
    args = parser.parse_args(argv)
    text = render(build_notebook())
    current = NOTEBOOK.read_text(encoding="utf-8") if NOTEBOOK.exists() else None
    if args.check:
        if current != text:
            print(f"{NOTEBOOK.relative_to(REPO)} 已过期：请运行 python tools/make_student_notebook.py",
                  file=sys.stderr)
            return 1
        print(f"{NOTEBOOK.relative_to(REPO)} 是最新的")
        return 0
    if current == text:
        print(f"{NOTEBOOK.relative_to(REPO)} 没有变化")
    else:
        NOTEBOOK.write_text(text, encoding="utf-8")
        print(f"已写入 {NOTEBOOK.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
