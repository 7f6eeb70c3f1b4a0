"""批改报告：终端上的表、JSON（每批改完一份就原子地重写一次）、给成绩册导入的 CSV。"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
import unicodedata
from pathlib import Path

from .results import (CHECKER_ERRORS, STATUS_TEXT, SubmissionResult, exercises, short_name,
                      total_points)


def visible(text: str) -> str:
    """表和 CSV 里的文字只占一行、不指挥终端：控制字符（换行、回车、ESC 开头的终端控制序列……）、
    方向控制符（U+202E 之类）和文件名里不是 UTF-8 的字节（surrogateescape 解出的 U+DC80–U+DCFF）
    都换成看得见的转义，例如 \\n、\\x1b、\\u202e、\\xd5。文件名、学生代码的异常和答案的 repr 都经过它。"""
    out = []
    for ch in text:
        code = ord(ch)
        if unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            out.append(ch)
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def _cell(text: str) -> str:
    """CSV 的一格：看得见的文字；以 = + - @ 开头的加一个 '，Excel 和 LibreOffice 不把它当公式。"""
    text = visible(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


MAX_NAME = 60   # 表里的文件名最多这么多个字符（JSON 和 CSV 里是全名）


def _name(r: SubmissionResult) -> str:
    """表里的文件名：看得见的文字；太长的留开头和结尾，中间写 …（一个 255 字节的名字不该把表撑破）。"""
    name = visible(Path(r.path).name)
    return name if len(name) <= MAX_NAME else name[:MAX_NAME // 2] + "…" + name[-(MAX_NAME // 2 - 1):]


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def points_line() -> str:
    """每道小题的分数，例如“各小题的分值（共 10 分）：1（一） 1 分；…；3 题 2 分”。"""
    parts = "；".join(_points_of(e.key, e.points) for e in exercises())
    return f"各小题的分值（共 {total_points()} 分）：{parts}"


def _points_of(key: str, points: int) -> str:
    """一道小题的分值；只有数字的编号（作业 3）加个“题”字，免得两个数挨在一起。"""
    if key.isdigit():
        return f"{short_name(key)} 题 {points} 分"
    return f"{short_name(key)} {points} 分"


def status_of(r: SubmissionResult) -> str:
    """CSV 里的简短状态。"""
    if not r.graded:
        return f"无法批改：{r.problem}"
    if r.problem:   # 运行了，但整份按 0 分计（答案输出被改动过）
        return f"已批改：{r.problem}"
    problems = [p for p in r.cell_problems if p.kind != "error"]
    if any(p.kind == "limit" for p in problems):
        return "已批改（碰到资源上限）"
    if any(p.kind in ("timeout", "crash", "not_run") for p in problems):
        return "已批改（有单元超时或崩溃）"
    return "已批改"


def format_table(results: list[SubmissionResult], timeout: float,
                 notebook_timeout: float | None = None) -> str:
    header = ["提交"] + [short_name(e.key) for e in exercises()] + ["通过", "得分"]
    rows = []
    for r in results:
        # 无法批改的提交没有成绩：和 CSV 里留空一样，不写 0 分（0 分是一个成绩）
        tally = [f"{r.passed}/{len(exercises())}", f"{r.points}/{total_points()}"] if r.graded \
            else ["—", "无法批改"]
        rows.append([_name(r)] + [STATUS_TEXT[e.status] for e in r.exercises] + tally)
    widths = [max(_width(row[i]) for row in [header] + rows) + 2 for i in range(len(header))]
    limit = f"每个代码单元最多运行 {timeout:g} 秒"
    if notebook_timeout is not None:
        limit += f"，整份笔记本最多 {notebook_timeout:g} 秒"
    lines = [f"作业批改：{len(results)} 份提交，{limit}", points_line(), ""]
    lines.append("".join(_pad(h, w) for h, w in zip(header, widths)).rstrip())
    lines.append("".join("-" * (w - 2) + "  " for w in widths).rstrip())
    for row in rows:
        lines.append("".join(_pad(c, w) for c, w in zip(row, widths)).rstrip())
    lines += ["", "详情（通过的题不列出，除非它的答案被别的题的单元改过）："]
    for r in results:
        notes = details(r)
        if notes:
            lines.append(_name(r))
            lines += [visible(n) for n in notes]
    return "\n".join(lines)


def details(r: SubmissionResult, account: bool = False, chosen: bool = False) -> list[str]:
    """表下一份提交的详情，每个问题只说一次：整份无法批改时只说原因；没通过的小题各一行
    （说明里已经写了它自己那个单元的问题），没作答的小题合成一行；不属于任何小题的单元问题各一行。
    学生自己调用检查器报的 HomeworkWrong、HomeworkNotFilled 不另列：那道题的结果说的就是它。"""
    notes = []
    if not r.graded:
        notes.append(f"  无法批改：{r.problem}")
    elif r.problem:
        notes.append(f"  {r.problem}")
    else:
        for e in r.exercises:
            if e.status not in ("passed", "not_attempted") or e.status == "passed" and e.cell:
                # 通过却带着单元号：答案后来被别的题的单元改了，按改之前的值给的分
                notes.append(f"  {short_name(e.key)} {STATUS_TEXT[e.status]}：{e.message}")
        blank = [short_name(e.key) for e in r.exercises if e.status == "not_attempted"]
        if blank:
            notes.append("  未作答：" + ("全部小题" if len(blank) == len(r.exercises) else "、".join(blank)))
        named = {e.cell for e in r.exercises if e.cell is not None}
        for p in r.cell_problems:
            if p.cell in named or p.exception in CHECKER_ERRORS and p.kind == "error":
                continue
            if p.kind in ("timeout", "crash"):
                notes.append(f"  （代码单元 {p.cell}：{p.message}，之后换了新内核，"
                             "跳过它重跑其余单元）")
            elif p.kind in ("limit", "error"):
                what = f"{p.exception} " if p.exception else ""
                notes.append(f"  （代码单元 {p.cell}：{what}{p.message}）")
    for note in r.notes:
        if note not in ("kernel_failed", "internal_error"):
            notes.append(f"  （{note}）")
    if not r.sandboxed and account and chosen:   # 教师用 --isolation account 选了这条路，bubblewrap 也许能用
        notes.append("  （没有在沙箱里运行：批改程序用 --isolation account 选定了换用户号，学生的代码以一个单独的、"
                     "没有特权的用户号运行）")
    elif not r.sandboxed and account:   # Gradescope 的容器里没有 bubblewrap（gradescope.py 的 isolation）
        notes.append("  （没有在沙箱里运行：这个容器里用不了 bubblewrap，学生的代码以一个单独的、"
                     "没有特权的用户号运行）")
    elif not r.sandboxed:
        notes.append("  （没有在沙箱里运行：--no-sandbox）")
    return notes


def to_json(results: list[SubmissionResult], options: dict) -> dict:
    return {
        **options,
        "exercises": [{"key": e.key, "title": e.title, "answers": list(e.answers),
                       "points": e.points} for e in exercises()],
        "max_points": total_points(),
        "submissions": [r.to_json() for r in results],
    }


def current_umask() -> int:
    """本进程的 umask（Linux 从 /proc/self/status 读，不必改它；别处先设再改回）。"""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str, encoding: str = "utf-8") -> None:
    """先写同一文件夹里的临时文件再改名：读的人只会看到旧的或新的完整文件。

    文件名里不是 UTF-8 的字节（surrogateescape）写成 \\udcXX：在 JSON 的字符串里它正好是合法的转义，
    读回来（--resume）还是原来的文件名。"""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp 建的文件是 0600：换成新建文件本该有的权限（0666 去掉教师的 umask），
        # 用 sudo 批改时，教师自己的账号也打得开报告
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "w", encoding=encoding, errors="backslashreplace", newline="") as f:
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
    """成绩册用的 CSV：学号（文件名去掉 .ipynb）、每道小题的得分、总分、状态。
    无法批改的提交（文件读不了、答案文件不合格、沙箱没有正常结束……）得分各格留空，原因写在状态里：
    成绩册里空着的格子是“还没有成绩”，0 分却是一个成绩。"""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["学号"] + [f"{short_name(e.key)}（{e.points} 分）" for e in exercises()]
               + [f"总分（{total_points()} 分）", "状态"])
    for r in results:
        got = {e.key: e.status == "passed" for e in r.exercises}
        if r.graded:
            scores = [e.points if got.get(e.key) else 0 for e in exercises()] + [r.points]
        else:
            scores = [""] * (len(exercises()) + 1)
        w.writerow([_cell(r.student_id)] + scores + [_cell(status_of(r))])
    return "\ufeff" + buf.getvalue()
