"""笔记本里的检查器（见「作业」页）：笔记本里的 ✔ 就是批改时的分数。

检查器把答案变成批改程序读到的样子（同一个探针、同一种 JSON：``minigpt.answer_format``），
再用包重新生成的题目数据、和批改程序同一个判题函数判它。学生手里的题目数据（q、Q、scores……）
只用来提醒：它们被改动过时，检查器在消息前面加一句“你改动了题目给的 …”。
前面通过了的题被后来的单元改坏了，也在当场说出来。
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import sys
from typing import Callable

import torch

from ..answer_format import AnswerFileError, answers_from_output, parse_json, probe_source, round_trip
from .errors import HomeworkNotFilled, HomeworkWrong
from .exercise import Exercise
from .given_data import exercise_inputs
from .names import listing
from .values import close


def as_the_grader_sees(values: dict) -> dict:
    """答案经过批改程序的探针之后的样子；读不回来时抛 HomeworkWrong（批改时这份提交也会出错）。"""
    try:
        return round_trip(values)
    except AnswerFileError as err:
        raise HomeworkWrong(f"{listing(values)} 的值批改程序读不回来（{err}）："
                            "请交张量、数字或列表", "unreadable") from None


def _same(value, original) -> bool:
    """学生手里的题目数据是否仍等于包重新生成的那一份。"""
    try:
        if isinstance(original, torch.nn.Module):
            mine, theirs = value.state_dict(), original.state_dict()
            return mine.keys() == theirs.keys() and all(
                _same(mine[n], theirs[n]) for n in theirs)
        if isinstance(original, torch.Tensor):
            t = torch.as_tensor(value)
            return (t.device.type == "cpu" and not t.is_complex()
                    and close(t.detach().double(), original.double()))
        return bool(value == original) and not isinstance(value, bool)
    except Exception:  # 学生换成了别的东西：比不了就是改过了
        return False


def changed_note(given: dict, inputs: dict) -> str:
    """学生改动过的题目数据：一句提醒；都没改时返回空字符串。"""
    changed = [name for name, value in given.items() if not _same(value, inputs[name])]
    if not changed:
        return ""
    names = listing(changed)
    return (f"注意：你改动了题目给的 {names}（和上面数据单元算出的不一样了）。"
            "检查器和批改程序都按原来的数据判分；"
            f"请重新运行给出数据的单元，之后别再给 {names} 赋别的值，也别原地修改它们"
            "（例如 .mul_()、/=）。")


def on_changed_data(exercise: Exercise, answers: dict, given: dict, inputs: dict) -> str | None:
    """学生改动了题目数据（changed_note 不为空）、答案按原来的数据不对时，诊断要对着学生手里的数据下：
    按原来的数据，把 Q 清零后算出的 0 像是“取了整”、全 0 的 S 像是“循环没有写进去”（r36c F4），
    说的都不是学生做了什么。返回接在提醒后面的话：答案按改动后的数据是对的，就说这个；否则是对着改动后的
    数据下的诊断。改动后的数据用不了（模块、别的类型）时返回 None（照原来的诊断）。"""
    changed = {n: v for n, v in given.items() if not _same(v, inputs[n])}
    if not changed or not all(isinstance(inputs[n], torch.Tensor) for n in changed):
        return None
    try:
        theirs = {**inputs, **{n: torch.as_tensor(v).detach().to(inputs[n].dtype).reshape(inputs[n].shape)
                               for n, v in changed.items()}}
    except Exception:  # 形状对不上之类：比不了
        return None
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink):
            exercise.run(answers, theirs)
    except (HomeworkNotFilled, HomeworkWrong) as err:
        if getattr(err, "diagnosis", None) == "given":
            return None
        return f"按你手里改动过的数据看：{err}"
    except Exception:
        return None
    return "你的答案按你手里改动过的数据算是对的，按原来的数据就不对了：恢复数据以后再运行一遍你的代码。"


# 笔记本里已经通过的小题：{编号: (学生的命名空间, 通过时每个答案变量的样子)}。之后每次调用检查器，
# 都重新判一遍同一命名空间里这些题的答案：被别的单元改坏了（重新赋值、原地修改、改了它 view 的张量），
# 当场说出来，只点出真的变了的变量
_PASSED: dict[str, tuple[dict, dict]] = {}


def _seen(values: dict) -> dict:
    """每个答案变量经探针写成的 JSON 文字（逐个变量比较它后来变了没有）；读不回来的是 None。"""
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink):
            exec(probe_source(list(values)), dict(values))  # noqa: S102
        raw = parse_json(answers_from_output(sink.getvalue()))
    except Exception:
        return dict.fromkeys(values)
    return {n: json.dumps(raw.get(n), sort_keys=True) for n in values}


def _lead(exercise: Exercise, changed: list[str]) -> str:
    """提醒的开头：只点出 changed 里的变量（删了的，或值和通过时不一样了的）。"""
    names = listing(changed)
    if len(changed) > 1:
        return f"注意：{exercise.part} 已经通过的答案 {names} 都"
    return f"注意：{exercise.part} 已经通过的答案 {names} "


def _broken_since_passed(namespace: dict, current: Exercise, exercises) -> str:
    """namespace 里以前通过、现在却过不了的小题：一句提醒（并把它们从 _PASSED 里去掉）；都好好的时返回空字符串。"""
    notes = []
    for exercise in exercises:
        passed = _PASSED.get(exercise.key)
        if exercise.key == current.key or passed is None or passed[0] is not namespace:
            continue
        gone = [n for n in exercise.answers if n not in namespace]
        if gone:
            # 删除它的单元是哪一个，检查器不知道：两种情形的后果都说清楚（r36c F6：只说“若是别的题的单元”，
            # 在这道题自己的单元里 del 的学生读成了“没关系”，批改却说没有这个变量）
            notes.append(f"{_lead(exercise, gone)}后来被删除了（del）。"
                         f"删除它的若是 {exercise.part} 自己的单元（例如在检查器之后 del），"
                         f"批改就说没有这个变量，这道题不得分；若是别的题的单元，"
                         f"批改仍按 {exercise.part} 自己的单元运行完时的值给分。"
                         f"请删掉那一行 del，重新运行 {exercise.part} 的单元。")
            del _PASSED[exercise.key]
            continue
        try:
            answers = as_the_grader_sees({n: namespace[n] for n in exercise.answers})
            with contextlib.redirect_stdout(io.StringIO()):
                exercise.run(answers, exercise_inputs())
            continue
        except (HomeworkWrong, HomeworkNotFilled):
            pass
        del _PASSED[exercise.key]
        now = _seen({n: namespace[n] for n in exercise.answers})
        changed = ([n for n in exercise.answers if now[n] is None or now[n] != passed[1].get(n)]
                   or list(exercise.answers))
        notes.append(
            f"{_lead(exercise, changed)}后来被改动了（重新赋值，或者原地修改了它、它所 view 的张量），"
            f"现在过不了 {exercise.checker} 的检查。"
            f"改动它的若是别的题的单元，批改仍按 {exercise.part} 自己的单元运行完时的值给分。"
            "不过最好在那里换个变量名，原地修改（x += …）也改成新建张量（x = x + …）。")
    return "".join(notes)


def notebook_checker(exercise: Exercise, exercises: tuple = ()) -> Callable[..., None]:
    """笔记本里调用的检查器：参数和 exercise.judge 相同；通过时打印一行，返回 None（不必用分号）。

    判的是 ``exercise.run(答案, exercise_inputs())``——批改程序判的也正是它。exercises 是全部小题
    （每次调用都重新判一遍其中已经通过的）。judge 本身留在 ``check_xxx.judge``：它按传进来的数据判，
    测试和别的数据都能用它。
    """
    judge = exercise.judge
    signature = inspect.signature(judge)

    def check(*args, **kwargs) -> None:
        namespace = sys._getframe(1).f_globals   # 调用者（笔记本的单元）的全局变量
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as err:
            raise HomeworkWrong(f"{exercise.checker} 的参数不对（{err}）：照初始代码里的那一行调用它",
                                "call") from None
        mine = {n: bound.arguments.get(n) for n in exercise.answers}
        note = _broken_since_passed(namespace, exercise, exercises)
        answers = as_the_grader_sees(mine)
        inputs = exercise_inputs()
        note += changed_note({n: bound.arguments[n] for n in exercise.given
                              if bound.arguments.get(n) is not None}, inputs)
        try:
            message = exercise.run(answers, inputs)
        except (HomeworkNotFilled, HomeworkWrong) as err:
            _PASSED.pop(exercise.key, None)
            if not note:
                raise
            given = {n: bound.arguments[n] for n in exercise.given if bound.arguments.get(n) is not None}
            instead = on_changed_data(exercise, answers, given, inputs) if isinstance(err, HomeworkWrong) else None
            raise type(err)(f"{note}{instead or err}", err.diagnosis) from None
        if all(namespace.get(n) is v for n, v in mine.items()):
            _PASSED[exercise.key] = (namespace, _seen(mine))
        print(f"{message}\n{note}" if note else message)

    check.__name__ = check.__qualname__ = exercise.checker
    check.__doc__ = exercise.doc   # 不是 judge.__doc__：那里写着怎么算出正确答案
    check.__module__ = judge.__module__
    check.__signature__ = signature.replace(return_annotation="None")
    check.judge = judge
    check.exercise = exercise
    return check
