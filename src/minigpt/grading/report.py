"""批改报告：终端上的表、JSON（每批改完一份就原子地重写一次）、给成绩册导入的 CSV。"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
import unicodedata
from pathlib import Path

from ..homework import EXERCISES
from .results import STATUS_TEXT, SubmissionResult, short_name, total_points


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def points_line() -> str:
    """每道小题的分数，例如“分值：1(一) 1 分，1(二) 2 分 …，共 10 分”。"""
    parts = "，".join(f"{short_name(e.key)} {e.points} 分" for e in EXERCISES)
    return f"分值：{parts}；共 {total_points()} 分"


def status_of(r: SubmissionResult) -> str:
    """CSV 里的简短状态。"""
    if not r.graded:
        return f"无法批改：{r.problem}"
    problems = [p for p in r.cell_problems if p.kind != "error"]
    if any(p.kind == "limit" for p in problems):
        return "已批改（碰到资源上限）"
    if any(p.kind in ("timeout", "crash", "not_run") for p in problems):
        return "已批改（有单元超时或崩溃）"
    return "已批改"


def format_table(results: list[SubmissionResult], timeout: float,
                 notebook_timeout: float | None = None) -> str:
    header = ["提交"] + [short_name(e.key) for e in EXERCISES] + ["通过", "得分"]
    rows = []
    for r in results:
        rows.append([Path(r.path).name] + [STATUS_TEXT[e.status] for e in r.exercises]
                    + [f"{r.passed}/{len(EXERCISES)}", f"{r.points}/{total_points()}"])
    widths = [max(_width(row[i]) for row in [header] + rows) + 2 for i in range(len(header))]
    limit = f"每个代码单元最多运行 {timeout:g} 秒"
    if notebook_timeout is not None:
        limit += f"，整份笔记本最多 {notebook_timeout:g} 秒"
    lines = [f"作业批改：{len(results)} 份提交，{limit}", points_line(), ""]
    lines.append("".join(_pad(h, w) for h, w in zip(header, widths)).rstrip())
    lines.append("".join("-" * (w - 2) + "  " for w in widths).rstrip())
    for row in rows:
        lines.append("".join(_pad(c, w) for c, w in zip(row, widths)).rstrip())
    lines += ["", "详情（通过的题不列出）："]
    for r in results:
        notes = []
        if r.problem:
            notes.append(f"  无法批改：{r.problem}")
        for e in r.exercises:
            if e.status != "passed" and not r.problem:
                notes.append(f"  {short_name(e.key)} {STATUS_TEXT[e.status]}：{e.message}")
        named = {e.cell for e in r.exercises}
        for p in r.cell_problems:
            if p.cell in named:
                continue
            if p.kind in ("timeout", "crash"):
                notes.append(f"  （代码单元 {p.cell}：{p.message}，之后换了新内核，"
                             "跳过它重跑其余单元）")
            elif p.kind in ("limit", "error"):
                what = f"{p.exception} " if p.exception else ""
                notes.append(f"  （代码单元 {p.cell}：{what}{p.message}）")
        for note in r.notes:
            if note != "kernel_failed":
                notes.append(f"  （{note}）")
        if not r.sandboxed:
            notes.append("  （没有在沙箱里运行：--no-sandbox）")
        if notes:
            lines.append(Path(r.path).name)
            lines += notes
    return "\n".join(lines)


def to_json(results: list[SubmissionResult], options: dict) -> dict:
    return {
        **options,
        "exercises": [{"key": e.key, "title": e.title, "answers": list(e.answers),
                       "points": e.points} for e in EXERCISES],
        "max_points": total_points(),
        "submissions": [r.to_json() for r in results],
    }


def write_atomic(path: Path, text: str, encoding: str = "utf-8") -> None:
    """先写同一文件夹里的临时文件再改名：读的人只会看到旧的或新的完整文件。"""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, results: list[SubmissionResult], options: dict) -> None:
    write_atomic(path, json.dumps(to_json(results, options), ensure_ascii=False, indent=2) + "\n")


def read_json(path: Path) -> dict[tuple[str, str], SubmissionResult]:
    """读回一份报告（--resume）：{(文件名, sha256): 结果}。读不了就抛 ValueError（中文说明）。"""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        rows = [SubmissionResult.from_json(s) for s in data["submissions"]]
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path} 不是本批改程序写的报告（{type(err).__name__}），"
                         "不能用 --resume 接着批改") from None
    return {(Path(r.path).name, r.sha256): r for r in rows if r.sha256}


def to_csv(results: list[SubmissionResult]) -> str:
    """成绩册用的 CSV：学号（文件名去掉 .ipynb）、每道小题的得分、总分、状态。"""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["学号"] + [f"{short_name(e.key)}（{e.points} 分）" for e in EXERCISES]
               + [f"总分（{total_points()} 分）", "状态"])
    for r in results:
        got = {e.key: e.status == "passed" for e in r.exercises}
        w.writerow([r.student_id] + [e.points if got.get(e.key) else 0 for e in EXERCISES]
                   + [r.points, status_of(r)])
    return "\ufeff" + buf.getvalue()
