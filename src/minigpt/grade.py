"""批改作业：逐份运行学生交回的笔记本，逐题判分（见「作业」一节的「给教师」）。

用法::

    python -m minigpt.grade 提交.ipynb … [--json 报告.json] [--timeout 秒]

- 每份笔记本在一个全新的内核里从头运行（nbclient），工作目录是临时目录；
  交上来的文件只读不写。
- 一个单元出错之后，照样运行后面的单元（不像“运行全部”遇错即停），
  后面的题仍能得分。
- 单元运行超过 ``--timeout`` 秒（默认 30）就结束内核，换一个新内核，
  重跑它之前的单元（跳过超时的那个），再接着往下。内核崩溃
  （例如 ``os._exit(1)``）也这样处理。
- 判分不看笔记本打印了什么：运行结束后，批改程序从内核里取出答案变量
  （``score``、``S``、``mask``、``weights``、``w1_params`` …），
  在自己的进程里用本包的检查器判定；题目数据（q、K、scores……）也由本包重新生成。
  学生改写 ``check_*`` 函数、改题目数据或者打印“✔ 通过”都不起作用。
- 每题的结果：通过 / 答错（附检查器的说明）/ 未作答 /
  出错（异常类型、第几个代码单元）/ 超时。
  文件不存在、不是合法的笔记本，也各占一行。
- 退出码：每份提交都批改完（不论成绩）是 0；
  批改程序自己无法运行（缺 nbclient、内核起不来）时非 0。

代码单元从 1 数，只数代码单元：在 Jupyter 里“重启内核并运行全部”之后，
它就是单元左边的 ``[N]``。
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import io
import json
import re
import subprocess
import sys
import tempfile
import unicodedata
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .homework import EXERCISES, HomeworkNotFilled, HomeworkWrong, exercise_inputs

STATUS_TEXT = {"passed": "通过", "wrong": "答错", "not_attempted": "未作答",
               "error": "出错", "timeout": "超时"}
# 学生自己调用检查器报的错，不算“出错”
CHECKER_ERRORS = {"HomeworkWrong", "HomeworkNotFilled"}
MAX_RESTARTS = 3  # 一份笔记本最多换几次内核（超时、崩溃），之后剩下的单元不再运行


class GraderError(Exception):
    """批改程序自己无法运行（不是学生的问题）。"""


@dataclass
class ExerciseResult:
    key: str
    title: str
    status: str                 # passed / wrong / not_attempted / error / timeout
    message: str = ""
    exception: str | None = None
    cell: int | None = None     # 第几个代码单元（从 1 数）


@dataclass
class Problem:
    cell: int                   # 代码单元编号（从 1 数）
    kind: str                   # error / timeout / crash / not_run
    exception: str | None = None
    message: str = ""


@dataclass
class SubmissionResult:
    path: str
    # 笔记本运行了（哪怕有单元出错）；文件不存在、不是笔记本时为 False
    graded: bool
    problem: str = ""           # 整份提交的问题（文件不存在、JSON 无效……）
    exercises: list[ExerciseResult] = field(default_factory=list)
    cell_problems: list[Problem] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(e.status == "passed" for e in self.exercises)


# ---------------------------------------------------------------- 读笔记本


def read_submission(path: Path):
    """读入一份提交；返回 (笔记本, None) 或 (None, (异常类型, 说明))。不修改文件。"""
    import nbformat

    if not path.exists():
        return None, ("FileNotFoundError", "文件不存在")
    if not path.is_file():
        return None, ("IsADirectoryError", "不是文件")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None, ("UnicodeDecodeError", "不是 UTF-8 文本，不像 .ipynb 笔记本")
    except OSError as err:
        return None, (type(err).__name__, f"无法读取：{err.strerror or err}")
    try:
        json.loads(text)
    except json.JSONDecodeError as err:
        return None, ("JSONDecodeError", f"不是有效的 JSON（第 {err.lineno} 行第 "
                                         f"{err.colno} 列：{err.msg}），"
                                         "文件可能损坏或被截断")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
            nbformat.validate(nb)
    except Exception as err:  # nbformat 对各种不合格的 JSON 抛出不同的异常
        return None, (type(err).__name__,
                      "是 JSON，但不是合格的 Jupyter 笔记本（nbformat 4）")
    return nb, None


# ---------------------------------------------------------------- 在内核里运行

# 在学生的内核里运行：把答案变量存成只含张量、数字、字符串和列表的文件，批改程序用
# torch.load(weights_only=True) 读回（读回时不会执行学生的任何代码）。
_DUMP = r"""
def __minigpt_grade_dump(__path, __names):
    import numbers, torch
    def conv(v, depth=0):
        if v is None:
            return ("none",)
        if v is Ellipsis:
            return ("ellipsis",)
        if isinstance(v, torch.Tensor):
            v = v.detach().as_subclass(torch.Tensor)
            if v.device.type == "meta":
                return ("opaque", "Tensor", "meta 设备上的张量（没有数据）")
            return ("value", v.cpu().clone())
        if type(v) in (bool, int, float, str):
            return ("value", v[:200] if isinstance(v, str) else v)
        module = type(v).__module__ or ""
        if module.startswith("numpy"):
            if type(v).__name__ == "ndarray":
                if v.dtype.kind in "biuf":
                    return ("value", torch.from_numpy(v.copy()))
            elif v.dtype.kind == "b":
                return ("value", bool(v))
            elif v.dtype.kind in "iu":
                return ("value", int(v))
            elif v.dtype.kind == "f":
                return ("value", float(v))
        if isinstance(v, (list, tuple)) and depth < 3 and len(v) <= 10000:
            items = [conv(x, depth + 1) for x in v]
            if all(i[0] == "value" for i in items):
                return ("value", [i[1] for i in items])
        try:
            text = repr(v)[:80]
        except Exception:
            text = "?"
        return ("opaque", type(v).__name__, text)
    g = globals()
    torch.save({n: (conv(g[n]) if n in g else ("missing",)) for n in __names}, __path)
__minigpt_grade_dump(%r, %r)
del __minigpt_grade_dump
"""


_WARM_UP = "import torch, minigpt.homework, minigpt.data, minigpt.attention"


def _error_of(cell) -> tuple[str, str] | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return out.get("ename", "Error"), out.get("evalue", "")
    return None


async def _run_notebook(nb, timeout: float, workdir: Path, names: list[str]):
    """运行笔记本的全部代码单元。

    返回 ({代码单元序号（从 0 数）: Problem}, 答案文件路径或 None)。
    """
    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    code = [c for c in nb.cells if c.cell_type == "code"]
    problems: dict[int, Problem] = {}
    skip: set[int] = set()
    restarts = 0
    dump = workdir / "answers.pt"
    while True:
        km = AsyncKernelManager(kernel_name="python3")
        client = NotebookClient(
            nb, km=km, timeout=timeout, allow_errors=True, startup_timeout=120,
            interrupt_on_timeout=False, shutdown_kernel="immediate",
            record_timing=False, kernel_name="python3")
        client.reset_execution_trackers()
        broke, started = None, False
        try:
            # 内核自己的日志（例如 TCP 未加密的提示）不混进批改报告；
            # 学生代码的输出走消息通道，不受影响
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            async with client.async_setup_kernel(cwd=str(workdir), **quiet):
                started = True
                # 先把 torch 和本包导入好（不计入学生单元的时限）：
                # 繁忙的机器上光 import torch 就要好几秒
                client.timeout = max(120, timeout)
                warm = nbformat.v4.new_code_cell(_WARM_UP)
                try:
                    await client.async_execute_cell(warm, 0, store_history=False)
                except (CellTimeoutError, DeadKernelError) as err:
                    raise GraderError("内核里导入 torch 和 minigpt 失败："
                                      f"{type(err).__name__}") from None
                if _error_of(warm):
                    ename, evalue = _error_of(warm)
                    raise GraderError(
                        f"内核里导入 torch 和 minigpt 失败：{ename}: {evalue}")
                client.timeout = timeout
                for n, cell in enumerate(code):
                    if n in skip:
                        continue
                    cell.outputs = []
                    try:
                        await client.async_execute_cell(cell, nb.cells.index(cell))
                    except CellTimeoutError:
                        broke = Problem(n + 1, "timeout", "CellTimeoutError",
                                        f"运行超过 {timeout:g} 秒，已结束内核")
                    except DeadKernelError:
                        broke = Problem(n + 1, "crash", "DeadKernelError",
                                        "内核退出了（崩溃或被结束）")
                    if broke:
                        problems[n] = broke
                        skip.add(n)
                        break
                    err = _error_of(cell)
                    if err and n not in problems:
                        first = (err[1].strip().splitlines() or [""])[0]
                        problems[n] = Problem(n + 1, "error", err[0], first[:160])
                if broke is None:
                    dump.unlink(missing_ok=True)
                    probe = nbformat.v4.new_code_cell(_DUMP % (str(dump), names))
                    nb.cells.append(probe)
                    try:
                        await client.async_execute_cell(probe, len(nb.cells) - 1)
                    except (CellTimeoutError, DeadKernelError):
                        pass
                    finally:
                        nb.cells.pop()
                    return problems, (dump if dump.is_file() else None)
        except Exception as err:  # 内核起不来，或者关内核时出错
            if not started:
                raise GraderError(
                    f"无法启动 Python 内核：{type(err).__name__}: {err}") from None
            if broke is None:
                raise
        restarts += 1
        if restarts > MAX_RESTARTS:
            for n in range(len(code)):
                if n not in skip and n not in problems:
                    problems[n] = Problem(n + 1, "not_run", None,
                                          f"内核已换过 {MAX_RESTARTS} 次，"
                                          "没有再运行这个单元")
            return problems, None


def _load_answers(dump: Path | None, names: list[str]) -> dict:
    """读回答案文件：{变量名: 值}；变量不存在时值为 _Missing。"""
    if dump is None:
        return {n: _MISSING for n in names}
    import torch

    try:
        raw = torch.load(dump, weights_only=True, map_location="cpu")
    except Exception:
        return {n: _MISSING for n in names}
    answers = {}
    for n in names:
        item = raw.get(n, ("missing",))
        kind = item[0]
        if kind == "missing":
            answers[n] = _MISSING
        elif kind == "none":
            answers[n] = None
        elif kind == "ellipsis":
            answers[n] = Ellipsis
        elif kind == "value":
            answers[n] = item[1]
        else:  # 别的类型：用一个同名的替身，让检查器说“收到的是 XXX”
            stand_in = {"__repr__": lambda self, t=item[2]: t}
            answers[n] = type(str(item[1]), (), stand_in)()
    return answers


class _Missing:
    def __repr__(self) -> str:
        return "<不存在>"


_MISSING = _Missing()


# ---------------------------------------------------------------- 判分


def _anchor(nb, exercise) -> int | None:
    """这道题的初始代码在第几个代码单元（从 0 数）：优先按标签 hw-starter-<key>，
    其次按检查器调用。
    """
    code = [c for c in nb.cells if c.cell_type == "code"]
    for n, cell in enumerate(code):
        if f"hw-starter-{exercise.key}" in cell.get("metadata", {}).get("tags", []):
            return n
    found = None
    for n, cell in enumerate(code):
        if f"{exercise.checker}(" in cell.source:
            found = n
    if found is None:
        names = "|".join(map(re.escape, exercise.answers))
        pattern = re.compile(r"^\s*(" + names + r")\s*=", re.M)
        for n, cell in enumerate(code):
            if pattern.search(cell.source):
                found = n
    return found


def _judge(exercise, answers: dict, inputs: dict, problems: dict,
           anchor: int | None) -> ExerciseResult:
    mine = {n: answers[n] for n in exercise.answers}
    empty = [n for n, v in mine.items() if v is _MISSING]
    unfilled = all(v is None or v is Ellipsis or v is _MISSING for v in mine.values())
    if empty or unfilled:
        relevant = [p for n, p in problems.items()
                    if (anchor is None or n <= anchor)
                    and not (p.kind == "error" and p.exception in CHECKER_ERRORS)]
        if relevant:
            at_anchor = [p for p in relevant
                         if anchor is not None and p.cell == anchor + 1]
            p = at_anchor[0] if at_anchor else max(relevant, key=lambda p: p.cell)
            status = "timeout" if p.kind == "timeout" else "error"
            what = {"timeout": "超时", "crash": "内核崩溃",
                    "not_run": "没有运行"}.get(p.kind, "异常")
            return ExerciseResult(exercise.key, exercise.title, status,
                                  f"代码单元 {p.cell} {what}：{p.exception or ''} "
                                  f"{p.message}".strip(),
                                  p.exception, p.cell)
        if empty:
            return ExerciseResult(exercise.key, exercise.title, "not_attempted",
                                  f"运行结束时没有变量 {'、'.join(empty)}（被删除了，"
                                  "或者从来没有定义）")
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink):
            message = exercise.run(mine, inputs)
    except HomeworkNotFilled as err:
        return ExerciseResult(exercise.key, exercise.title, "not_attempted", str(err))
    except HomeworkWrong as err:
        return ExerciseResult(exercise.key, exercise.title, "wrong", str(err))
    except Exception as err:  # 检查器本不该抛别的异常；万一抛了，也只影响这一格
        name = type(err).__name__
        return ExerciseResult(exercise.key, exercise.title, "error",
                              f"检查器出错：{name}: {err}", name)
    return ExerciseResult(exercise.key, exercise.title, "passed", message)


def grade_submission(path: Path, timeout: float = 30) -> SubmissionResult:
    """批改一份提交。文件不存在、不是笔记本等情况也返回一行结果，
    不抛异常（GraderError 除外）。
    """
    result = SubmissionResult(str(path), graded=False)
    nb, bad = read_submission(path)
    if bad:
        ename, message = bad
        result.problem = message
        result.exercises = [ExerciseResult(e.key, e.title, "error", message, ename)
                            for e in EXERCISES]
        return result
    names = sorted({n for e in EXERCISES for n in e.answers})
    work = copy.deepcopy(nb)
    with tempfile.TemporaryDirectory(prefix="minigpt-grade-") as tmp:
        problems, dump = asyncio.run(_run_notebook(work, timeout, Path(tmp), names))
        answers = _load_answers(dump, names)
    inputs = exercise_inputs()
    result.graded = True
    result.cell_problems = [problems[n] for n in sorted(problems)]
    result.exercises = [_judge(e, answers, inputs, problems, _anchor(nb, e))
                        for e in EXERCISES]
    return result


# ---------------------------------------------------------------- 报告


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def format_table(results: list[SubmissionResult], timeout: float) -> str:
    short = {"1a": "1(一)", "1b": "1(二)", "2a": "2(一)", "2b": "2(二)", "3": "3"}
    header = ["提交"] + [short.get(e.key, e.key) for e in EXERCISES] + ["通过"]
    rows = []
    for r in results:
        rows.append([Path(r.path).name] + [STATUS_TEXT[e.status] for e in r.exercises]
                    + [f"{r.passed}/{len(EXERCISES)}"])
    widths = [max(_width(row[i]) for row in [header] + rows) + 2
              for i in range(len(header))]
    lines = [f"作业批改：{len(results)} 份提交，"
             f"每个代码单元最多运行 {timeout:g} 秒", ""]
    lines.append("".join(_pad(h, w) for h, w in zip(header, widths)).rstrip())
    lines.append("".join("-" * (w - 2) + "  " for w in widths).rstrip())
    for row in rows:
        lines.append("".join(_pad(c, w) for c, w in zip(row, widths)).rstrip())
    lines += ["", "详情（通过的题不列出）："]
    for r in results:
        notes = []
        if r.problem:
            notes.append(f"  无法运行：{r.problem}")
        for e in r.exercises:
            if e.status != "passed" and not r.problem:
                notes.append(f"  {short.get(e.key, e.key)} {STATUS_TEXT[e.status]}："
                             f"{e.message}")
        named = {e.cell for e in r.exercises}
        for p in r.cell_problems:
            if p.kind in ("timeout", "crash") and p.cell not in named:
                notes.append(f"  （代码单元 {p.cell}：{p.message}，之后换了新内核，"
                             "跳过它重跑其余单元）")
        if notes:
            lines.append(Path(r.path).name)
            lines += notes
    return "\n".join(lines)


def to_json(results: list[SubmissionResult], timeout: float) -> dict:
    return {
        "timeout_seconds": timeout,
        "exercises": [{"key": e.key, "title": e.title, "answers": list(e.answers)}
                      for e in EXERCISES],
        "submissions": [
            {"path": r.path, "graded": r.graded, "problem": r.problem,
             "passed": r.passed, "total": len(EXERCISES),
             "exercises": {e.key: {k: v for k, v in asdict(e).items()
                                   if k not in ("key", "title")}
                           for e in r.exercises},
             "cell_problems": [asdict(p) for p in r.cell_problems]}
            for r in results
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minigpt.grade",
        description="批改《Attention 机制与 Transformer Block》的作业笔记本："
                    "逐份运行、逐题判分。")
    parser.add_argument("submissions", nargs="+", type=Path,
                        metavar="SUBMISSION.ipynb", help="学生交回的笔记本")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="另把结果写成 JSON 文件")
    parser.add_argument("--timeout", type=float, default=30, metavar="SECONDS",
                        help="每个代码单元最多运行的秒数（默认 30），超时即结束内核")
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout 必须是正数")
    try:
        import nbclient  # noqa: F401
        import ipykernel  # noqa: F401
    except ImportError as err:
        print("批改需要 nbclient 和 ipykernel：pip install nbclient ipykernel（缺少 "
              f"{err.name}）", file=sys.stderr)
        return 2
    results = []
    try:
        for path in args.submissions:
            print(f"批改 {path} …", file=sys.stderr, flush=True)
            results.append(grade_submission(path, args.timeout))
    except GraderError as err:
        print(f"批改程序无法运行：{err}", file=sys.stderr)
        return 2
    print(format_table(results, args.timeout))
    if args.json:
        try:
            report = json.dumps(to_json(results, args.timeout),
                                ensure_ascii=False, indent=2)
            args.json.write_text(report + "\n", encoding="utf-8")
        except OSError as err:
            print(f"无法写入 {args.json}：{err.strerror or err}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
