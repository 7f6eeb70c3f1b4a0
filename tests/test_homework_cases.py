"""案例表（tests/support/homework_cases.py）上的两件事：

1. 一个判定：每个案例在笔记本里（check_xxx，拿着学生手里的题目数据）和在批改程序里（探针写出
   JSON、批改程序读回、grading.judge 判分）得到相同的结果和相同的说明；学生改动过题目数据时，
   笔记本只在说明前面多一句“你改动了题目给的 …”。
2. 提示是对的：每个错误答案得到它那一行诊断，少见但正确的写法全部通过。
"""

from __future__ import annotations

import contextlib
import io
from collections import Counter

import pytest

import minigpt.homework as homework
from support.homework_cases import CASES
from minigpt import answer_format as probe
from minigpt.grading.judge import judge_exercise
from minigpt.homework import EXERCISES, HomeworkNotFilled, HomeworkWrong, exercise_inputs

BY_KEY = {e.key: e for e in EXERCISES}


def in_notebook(case) -> tuple[str, str | None, str]:
    """(结果, 诊断名, 说明)：像学生在笔记本里那样调用检查器。"""
    x = exercise_inputs()
    exercise = BY_KEY[case.key]
    given = {n: x[n] for n in exercise.given} | case.given(x)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            getattr(homework, exercise.checker)(**case.make(x), **given)
    except HomeworkNotFilled as err:
        return "not_attempted", err.diagnosis, str(err)
    except HomeworkWrong as err:
        return "wrong", err.diagnosis, str(err)
    return "passed", None, out.getvalue().splitlines()[0]


def by_the_grader(case) -> tuple[str, str]:
    """(结果, 说明)：答案变量经过批改程序的探针和 JSON，由 grading.judge 判分。"""
    exercise = BY_KEY[case.key]
    values = case.make(exercise_inputs())
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        exec(probe.probe_source(list(values)), dict(values))
    decoded = probe.decode_answers(probe.parse_json(probe.answers_from_output(sink.getvalue())),
                                   list(values))
    result = judge_exercise(exercise, decoded, exercise_inputs(), {}, [])
    return result.status, result.message


def test_the_table_has_at_least_200_wrong_answers_across_all_exercises():
    wrong = Counter(c.key for c in CASES if c.expect != "pass")
    unusual_right = Counter(c.key for c in CASES if c.expect == "pass")
    assert sum(wrong.values()) >= 200, wrong
    assert set(wrong) == set(unusual_right) == set(BY_KEY), (wrong, unusual_right)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.key}-{c.label}")
def test_the_notebook_and_the_grader_give_the_same_verdict_and_message(case):
    status, _, message = in_notebook(case)
    grader_status, grader_message = by_the_grader(case)
    assert status == grader_status, (message, grader_message)
    if status == "passed":
        assert message == grader_message
    elif case.given(exercise_inputs()):
        # 这里的批改没有各单元的记录，不知道数据被改过：说的是按原来的数据下的诊断。笔记本知道，诊断对着
        # 学生手里的数据下（r36c F4）：答案按改动后的数据是对的，就说这个
        assert message.startswith("注意：你改动了题目给的 "), message
        assert message.endswith(grader_message) or "按你手里改动过的数据算是对的" in message, message
    else:
        assert message == grader_message


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.key}-{c.label}")
def test_each_answer_gets_the_diagnosis_of_its_own_mistake(case):
    status, diagnosis, message = in_notebook(case)
    if case.expect == "pass":
        assert status == "passed", message
    elif case.expect == "not_filled":
        assert status == "not_attempted", message
    else:
        assert (status, diagnosis) == ("wrong", case.expect), message


def test_the_page_names_every_answer_variable_and_every_given_name_before_the_first_exercise():
    from pathlib import Path
    import re

    page = (Path(__file__).resolve().parents[1] / "book" / "homework.md").read_text(encoding="utf-8")
    start = page.index("**判分看的是什么。**")
    assert start < page.index("(hw-score)=")  # 在第一道题之前
    intro = page[start:page.index("\n+++", start)]
    answers = "、".join(f"`{n}`" for e in EXERCISES for n in e.answers)
    assert answers in intro  # 按题目的顺序列出全部答案变量
    given_part = intro[intro.index("题目给的数据"):]
    listed = set(re.findall(r"`(\w+)`", given_part.split("不要重新赋值")[0]))
    assert {n for e in EXERCISES for n in e.given} <= listed, listed


def test_a_checker_leaves_the_students_random_numbers_alone():
    """检查器要重新生成题目数据（种子 42、4、5、6），但不能动学生笔记本里的随机数状态。"""
    import torch

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    x = exercise_inputs()
    homework.check_dot_score((x["q"] * x["k"]).sum(), x["q"], x["k"])
    assert torch.equal(torch.rand(3), expected)
