"""第 5、6 节末尾的“练习”：开放题，各带一个折叠的提示、没有答案；题里给出的起步代码照原样能跑。"""

from __future__ import annotations

import contextlib
import io
import re
import textwrap
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"


def exercise_section(doc: str) -> str:
    text = (BOOK / f"{doc}.md").read_text(encoding="utf-8")
    assert text.count("\n## 练习\n") == 1, f"{doc} 没有（或不止一个）“练习”一节"
    return text.split("\n## 练习\n", 1)[1].split("\n## ", 1)[0]


def starter_code(section: str) -> list[str]:
    return [textwrap.dedent(m.group(1)) for m in re.finditer(r"^ *```python\n(.*?)^ *```$", section, re.S | re.M)]


@pytest.mark.parametrize("doc", ["s5_ffn", "s6_block"])
def test_exercises_are_open_with_a_hint_and_no_answer(doc):
    section = exercise_section(doc)
    items = re.findall(r"^\d+\. ", section, re.M)
    assert 1 <= len(items) <= 2, items
    assert section.count(":::{admonition} 提示") == len(items)  # 每道题一个提示
    assert "答案" not in section


@pytest.mark.parametrize("doc", ["s5_ffn", "s6_block"])
def test_exercise_starter_code_runs_with_the_package(doc):
    codes = starter_code(exercise_section(doc))
    assert codes, f"{doc} 的练习没有起步代码"
    for code in codes:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"<{doc} 练习>", "exec"), {})
        assert out.getvalue().strip(), "起步代码什么也没打印"
