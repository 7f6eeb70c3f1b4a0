"""说给学生听的一串变量名（见「作业」一节）：检查器和批改程序的说明里，几个答案一起提到时怎么连。"""

from __future__ import annotations

from collections.abc import Iterable

SEPARATOR = "、"   # 名字之间
LAST = " 和 "      # 最后两个名字之间


def listing(names: Iterable[str]) -> str:
    """["heads", "merged"] → "heads 和 merged"；三个以上："a、b 和 c"。"""
    names = [str(name) for name in names]
    if len(names) < 2:
        return "".join(names)
    return SEPARATOR.join(names[:-1]) + LAST + names[-1]
