"""批改作业（见「教师指南」一页）：``python -m minigpt.grade 提交.ipynb …``。

每份提交关在自己的 bubblewrap 沙箱里，从头运行；答案以纯数据（JSON）传回，批改程序自己判分。
一个模块一件事：

- ``submission``：读提交（只读不写；各种保存方式都接受）；
- ``sandbox``：沙箱（bubblewrap 的命令行、干净的环境变量、沙箱能不能用）；
- ``runner``：沙箱里运行笔记本的程序（资源上限、换内核、每个单元之后和最后的探针、结束留下的进程）；
- ``judge``：判分（用 ``minigpt.homework`` 的判题函数；答案以前对过、后来被别的题的单元改了，也在这里判）；
- ``results``：结果的数据；``report``：表、JSON、CSV；``cli``：命令行。

答案的纯数据格式（探针写、批改程序核对着读，笔记本里的检查器也用它）在 ``minigpt.answer_format``：
它既不属于作业，也不属于批改。
"""

__all__ = ["grade_submission", "ExerciseResult", "Problem", "SubmissionResult", "main"]

# 用到时才导入：沙箱里的 runner（python -m minigpt.grading.runner）也先导入本文件，
# 而 judge 要导入 torch（检查器）——runner 自己用不到 torch，每份提交白白多花一两秒 CPU
_LAZY = {"grade_submission": "judge", "ExerciseResult": "results", "Problem": "results",
         "SubmissionResult": "results"}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv=None) -> int:
    from .cli import main as _main
    return _main(argv)
