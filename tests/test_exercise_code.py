"""各节末尾“练习”里的起始代码：照页面原样复制下来，用本书的 minigpt 包就能运行，不报错、不往 stderr 写东西。

练习是开放题，没有要核对的答案；这里只保证读者拿到的起点能跑。
起始代码写在“## 练习”一节里的 ```python 代码块中（列表项里缩进的代码块也算），不是构建时执行的代码单元。
"""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "book"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)


def exercise_section(text: str) -> str:
    """页面里标题为“练习”的二级节（到下一个同级或更高级的标题为止）；没有就是空串。"""
    m = re.search(r"^## 练习[ \t]*$", text, re.M)
    if not m:
        return ""
    end = re.search(r"^#{1,2} ", text[m.end():], re.M)
    return text[m.end(): m.end() + end.start()] if end else text[m.end():]


def starter_code(page: Path) -> list[str]:
    """“练习”一节里每个 ```python 代码块的代码（去掉列表缩进）。"""
    return [textwrap.dedent(m.group("code")) for m in FENCE.finditer(exercise_section(page.read_text(encoding="utf-8")))]


CASES = [(page.stem, i, code) for page in sorted(BOOK.glob("*.md")) for i, code in enumerate(starter_code(page), 1)]


def test_starter_code_is_found_in_indented_list_items():
    text = "## 练习\n\n1. 题\n\n   ```python\n   print(1)\n   ```\n\n## 下一节\n\n```python\nprint(2)\n```\n"
    page = Path(__file__).parent / "_tmp_exercise_page.md"
    try:
        page.write_text(text, encoding="utf-8")
        assert starter_code(page) == ["print(1)\n"]
    finally:
        page.unlink()


def test_sections_one_and_two_have_starter_code():
    pages = {name for name, _, _ in CASES}
    assert {"s1_intuition", "s2_scaled_dot_product"} <= pages, pages


@pytest.mark.slow  # 每段起始代码一个 Python 进程（由 conftest.fork_runner 从预先 import 了 torch 的母体 fork 出来）
@pytest.mark.parametrize("page,number,code", CASES, ids=[f"{p}-练习{n}" for p, n, _ in CASES])
def test_exercise_starter_code_runs_with_the_books_package(page, number, code, tmp_path, fork_runner):
    script = tmp_path / "exercise.py"  # 读者把代码存成文件、在它所在的目录里运行
    script.write_text(code, encoding="utf-8")
    run = fork_runner.run(script, cwd=tmp_path, env=dict(os.environ), timeout=300)
    assert run.returncode == 0, f"{page} 练习 {number} 的起始代码运行失败：\n{run.stderr[-3000:]}"
    assert not run.stderr.strip(), f"{page} 练习 {number} 的起始代码往 stderr 写了东西：\n{run.stderr[-3000:]}"
    assert run.stdout.strip(), f"{page} 练习 {number} 的起始代码什么也没打印"
