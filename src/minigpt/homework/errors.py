"""检查器的两个异常（见「作业」页）：都是 AssertionError 的子类，在 Jupyter 里只显示一行。"""

from __future__ import annotations


class _OneLineInJupyter(AssertionError):
    def __init__(self, message: str = "", diagnosis: str | None = None) -> None:
        super().__init__(message)
        # 哪一条诊断（表里的名字）给出了这条消息；测试据此核对“提示对不对得上错误”
        self.diagnosis = diagnosis

    def _render_traceback_(self) -> list[str]:
        """IPython 显示异常时调用它（代替调用栈）：检查器的提示就是全部，
        检查器内部的代码行对学生没有用，还会露出正确答案是怎样算的。
        """
        return [f"{type(self).__name__}: {self}"]


class HomeworkNotFilled(_OneLineInJupyter):
    """答案还没有填写（仍是 None 或 ...）（见「作业」页）。"""


class HomeworkWrong(_OneLineInJupyter):
    """答案填了但不对，或类型、形状不对；消息说明检查了什么、
    为什么不对（见「作业」页）。
    """
