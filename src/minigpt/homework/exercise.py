"""一道小题的描述（批改程序的题目清单用它），以及把判题函数包成笔记本里的检查器（见「作业」一节）。"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Callable


def prints(judge: Callable[..., str]) -> Callable[..., None]:
    """把判题函数（通过时返回一行消息）包成给学生调用的检查器：
    通过时打印那一行，返回 None。

    返回 None，Jupyter 就不会在打印的那一行下面再显示一遍返回值
    （所以调用不需要分号）。
    判题函数本身留在 ``check_xxx.judge``：批改程序要的是消息，不是打印。
    """

    @functools.wraps(judge)
    def check(*args, **kwargs) -> None:
        print(judge(*args, **kwargs))

    check.__annotations__ = {**judge.__annotations__, "return": "None"}
    check.__signature__ = inspect.signature(judge).replace(return_annotation="None")
    check.judge = judge
    return check


@dataclass(frozen=True)
class Exercise:
    """一道（小）题：编号、标题、笔记本里的答案变量名、以及怎样用检查器判它。"""

    # key 与学生版笔记本里初始代码单元的标签 hw-starter-<key> 一致
    key: str
    title: str
    answers: tuple[str, ...]      # 答案变量名
    checker: str                  # 检查函数名（批改时判定未作答的单元要找它的调用）
    # run(答案, 题目数据) → 通过时的消息；答错、没填时抛出检查器的异常
    run: Callable[[dict, dict], str]
    points: int = 2               # 这道小题的分数（批改表、CSV 和作业页都用它）
