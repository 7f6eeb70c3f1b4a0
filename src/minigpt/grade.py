"""批改作业的命令（见「作业」一节的「给教师」）::

    python -m minigpt.grade 提交.ipynb … [--json 报告.json] [--csv 成绩.csv]

代码在子包 ``minigpt.grading`` 里（一个模块一件事）；这个文件只是命令的入口，
``python -m minigpt.grade --help`` 列出全部选项。
"""

import sys

from .grading import main

__all__ = ["grade_submission", "main"]


def __getattr__(name: str):
    """``grade_submission`` 用到时才导入（它连带导入 torch 和检查器）：
    只看 --help、选项写错、拒绝运行的时候，命令不必先花一两秒导入它们。"""
    if name == "grade_submission":
        from .grading import grade_submission

        return grade_submission
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
