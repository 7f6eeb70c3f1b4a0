"""一道小题的描述（见「作业」页）：编号、标题、判题函数和分值。

判题函数的参数就是这道题的一切：不是题目数据的参数是答案变量（笔记本里的变量名），
是题目数据的（``GIVEN_NAMES``）由包重新生成（``exercise_inputs``）。
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

from .given_data import GIVEN_NAMES

ORDINALS = "一二三四五六七八九十"   # 小题的序号：作业 4（一）、4（二）


@dataclass(frozen=True)
class Exercise:
    """一道（小）题。key 与学生版笔记本里初始代码单元的标签 hw-starter-<key> 一致。"""

    key: str
    title: str
    judge: Callable[..., str]     # judge(答案…, 题目数据…) → 通过时的消息；不对时抛检查器的异常
    points: int = 2               # 这道小题的分数（批改表、CSV 和作业页都用它）
    section: int = 0              # 讲这道题的内容的那一节（check_xxx? 的说明里指给学生）

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(inspect.signature(self.judge).parameters)

    @property
    def answers(self) -> tuple[str, ...]:
        """答案变量名：判题函数里不是题目数据的参数。"""
        return tuple(p for p in self.parameters if p not in GIVEN_NAMES)

    @property
    def given(self) -> tuple[str, ...]:
        """笔记本里传给检查器的题目数据（判分用包重新生成的那一份）。"""
        return tuple(p for p in self.parameters if p in GIVEN_NAMES)

    @property
    def checker(self) -> str:
        """笔记本里调用的检查函数名：judge_xxx → check_xxx（批改时判定未作答的单元要找它的调用）。"""
        return "check_" + self.judge.__name__.removeprefix("judge_")

    @property
    def part(self) -> str:
        """提示里的短名：作业 4（一）、作业 3。"""
        number = self.key.rstrip("abcdefghij")
        if number == self.key:
            return f"作业 {number}"
        ordinal = ORDINALS[ord(self.key[len(number)]) - ord("a")]
        return f"作业 {number}（{ordinal}）"

    @property
    def doc(self) -> str:
        """笔记本里 ``check_xxx?`` 显示的说明：检查哪些变量、不对时会怎样，不写怎么算。

        判题函数的文档写着正确答案的算法，是给维护者看的，不给学生的 ``check_xxx?``。
        """
        sep = "、"
        answers, given = sep.join(self.answers), sep.join(self.given)
        data = f"，题目数据 {given} 照初始代码传进来" if given else ""
        return (f"{self.title}（见第 {self.section} 节），{self.points} 分。\n\n"
                f"检查答案变量 {answers}{data}。对了打印一行 ✔；"
                "没填抛出 HomeworkNotFilled，不对抛出 HomeworkWrong，"
                "说明最可能错在哪一步，但不给出正确的值。批改程序判的是同一件事。")

    def run(self, answers: dict, inputs: dict) -> str:
        """用答案变量和题目数据判这道题：通过时返回消息，答错、没填时抛检查器的异常。"""
        return self.judge(**{n: answers[n] for n in self.answers}, **{n: inputs[n] for n in self.given})
