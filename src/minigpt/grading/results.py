"""批改结果的数据：每道小题一格、每个出问题的代码单元一条、每份提交一行（见「教师指南」一页）。"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

# 每道小题的结果只看运行结束时答案变量的值和这道题自己的代码单元（judge.py）
STATUS_TEXT = {"passed": "通过", "wrong": "答错", "not_attempted": "未作答",
               "missing": "没有这个变量", "error": "出错", "timeout": "超时"}
# 学生自己调用检查器报的错，不算“出错”：这道题的结果已经说了同一件事
CHECKER_ERRORS = {"HomeworkWrong", "HomeworkNotFilled"}
_ORDINALS = "一二三四五六七八九十"
_PARENS = "（）"  # 小题短名里的一对括号，和正文的“作业 1（一）”一样


def exercises() -> tuple:
    """作业的各道小题（``minigpt.homework.EXERCISES``，分值定义在检查器旁边）。
    用到时才导入：homework 要导入 torch，而批改程序在开始批改之前
    （--help、选项写错、拒绝运行）用不到它，不必先花一两秒 CPU。"""
    from ..homework import EXERCISES

    return EXERCISES


def short_name(key: str) -> str:
    """表格和 CSV 里小题的短名：1a → 1（一）、2b → 2（二）、3 → 3（编号是数字加一个小写字母时）。"""
    found = re.fullmatch(r"(\d+)([a-j])", key)
    if found:
        return f"{found[1]}{_PARENS[0]}{_ORDINALS[ord(found[2]) - ord('a')]}{_PARENS[1]}"
    return key


def student_id(path: str) -> str:
    """学号：文件名去掉 .ipynb（CSV 的第一列）。"""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-len(".ipynb")] if name.endswith(".ipynb") else name


def total_points() -> int:
    return sum(e.points for e in exercises())


@dataclass
class ExerciseResult:
    key: str
    title: str
    status: str                 # passed / wrong / not_attempted / missing / error / timeout
    message: str = ""
    exception: str | None = None
    cell: int | None = None     # 第几个代码单元（从 1 数）


@dataclass
class Problem:
    cell: int                   # 代码单元编号（从 1 数）；0 表示不属于哪个单元
    kind: str                   # error / timeout / crash / not_run / limit
    exception: str | None = None
    message: str = ""


@dataclass
class SubmissionResult:
    path: str
    # 笔记本运行了（哪怕有单元出错）；文件不存在、不是笔记本时为 False
    graded: bool
    problem: str = ""           # 整份提交的问题（文件不存在、JSON 无效、答案文件不合格……）
    exercises: list[ExerciseResult] = field(default_factory=list)
    cell_problems: list[Problem] = field(default_factory=list)
    sha256: str = ""            # 文件内容的哈希（--resume 按它判断是否已经批改过）
    sandboxed: bool = True
    notes: list[str] = field(default_factory=list)   # 沙箱报告的其他情况（留下的进程……）
    started: float = 0.0        # 开始、结束时刻（time.time()），报告里用来看并行
    finished: float = 0.0
    # 在什么上限下运行的（时限、内存……、是否在沙箱里）；笔记本没有运行（文件读不了）时为 None。
    # --resume 只沿用上限与这次相同的结果
    limits: dict | None = None

    @property
    def student_id(self) -> str:
        """学号：文件名去掉 .ipynb。"""
        return student_id(self.path)

    @property
    def passed(self) -> int:
        return sum(e.status == "passed" for e in self.exercises)

    @property
    def points(self) -> int:
        worth = {e.key: e.points for e in exercises()}
        return sum(worth.get(e.key, 0) for e in self.exercises if e.status == "passed")

    def to_json(self) -> dict:
        return {"path": self.path, "id": self.student_id, "sha256": self.sha256,
                "graded": self.graded, "problem": self.problem,
                "sandboxed": self.sandboxed,
                # 无法批改的提交没有成绩：null，和 CSV 里留空一样（0 分是一个成绩）
                "passed": self.passed if self.graded else None, "total": len(exercises()),
                "points": self.points if self.graded else None, "max_points": total_points(),
                "exercises": {e.key: {k: v for k, v in asdict(e).items()
                                      if k not in ("key", "title")}
                              for e in self.exercises},
                "cell_problems": [asdict(p) for p in self.cell_problems],
                "notes": list(self.notes),
                "started": self.started, "finished": self.finished, "limits": self.limits}

    @classmethod
    def from_json(cls, data: dict) -> "SubmissionResult":
        """读回报告里的一行（--resume）；格式不对时抛 KeyError / TypeError / ValueError。"""
        titles = {e.key: e.title for e in exercises()}
        graded = [ExerciseResult(key, titles[key], **value) for key, value in data["exercises"].items()]
        if [e.key for e in graded] != [e.key for e in exercises()]:
            raise ValueError("小题与本包的不一致")
        return cls(path=str(data["path"]), graded=bool(data["graded"]),
                   problem=str(data["problem"]), exercises=graded,
                   cell_problems=[Problem(**p) for p in data["cell_problems"]],
                   sha256=str(data["sha256"]), sandboxed=bool(data["sandboxed"]),
                   notes=[str(n) for n in data.get("notes", [])],
                   started=float(data.get("started", 0)),
                   finished=float(data.get("finished", 0)),
                   limits=_limits(data.get("limits", "没有记下")))


def _limits(raw) -> dict | None:
    """报告里记下的上限：{名字: 数}；旧版报告没有这一项时当作“不知道”，与任何上限都不同。"""
    if raw is None:
        return None
    if raw == "没有记下":
        return {"unknown": 1.0}
    if not isinstance(raw, dict):
        raise ValueError("上限的格式不对")
    return {str(k): float(v) for k, v in raw.items()}


def limits_record(limits, sandboxed: bool) -> dict:
    """一次运行的上限，写进结果里（--resume 拿它和这次的比）。"""
    return {**{k: float(v) for k, v in asdict(limits).items()}, "sandboxed": float(sandboxed)}
