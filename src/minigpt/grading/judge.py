"""判分：读笔记本、在沙箱里运行、读回纯数据的答案，在批改程序自己的进程里用本包的检查器判定。"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from ..homework import EXERCISES, HomeworkNotFilled, HomeworkWrong, exercise_inputs
from ..homework.checker import _same as same_as_given
from ..homework.checker import changed_note, on_changed_data
from ..homework.names import listing
from . import sandbox
from ..answer_format import MISSING, AnswerFileError, decode_answer, decode_answers, parse_json
from .submission import code_cells, read_submission
from .results import CHECKER_ERRORS, ExerciseResult, Problem, SubmissionResult, limits_record

ANSWER_NAMES = sorted({n for e in EXERCISES for n in e.answers})
# 也记下学生手里的题目数据（模块 mha、block 记下它们的参数）：
# 一道题答错时，若它的数据在它自己的单元运行完时已被改动，
# 批改的说明和笔记本里一样，以“注意：你改动了题目给的 …”开头
GIVEN_TRACKED = sorted(n for e in EXERCISES for n in e.given)
TRACKED_NAMES = sorted(set(ANSWER_NAMES) | set(GIVEN_TRACKED))

# 批改程序用线程同时批改几份提交（--jobs）。判分这一步会动整个进程共用的状态：
# exercise_inputs() 先 torch.manual_seed(42) 再从全局随机数发生器取数造题目数据，
# redirect_stdout 换掉的是全进程的 sys.stdout。两个线程同时做，一个线程的取数会插进
# 另一个线程的种子和取数之间（题目数据变了，对的答案被判错），sys.stdout 也可能再换不回来
# （批改表就打印不出来）。所以判分一次只让一个线程做；它只要几毫秒，沙箱里的运行照样并行。
JUDGE_LOCK = threading.Lock()


def _assignment(exercise) -> re.Pattern:
    """给这道题的答案变量赋值的一行：score = …、S[i, j] = …、S += …、w1_params, w2_params = …"""
    names = "|".join(map(re.escape, exercise.answers))
    other = r"[\w.]+"
    return re.compile(rf"^[ \t]*(?:{other}[ \t]*,[ \t]*)*(?:{names})\b(?:\[[^\n]*\])?"
                      rf"(?:[ \t]*,[ \t]*{other})*[ \t]*(?:[-+*/@%&|^]|//|\*\*)?=(?!=)", re.M)


def _anchor(cells: list[dict], exercise) -> int | None:
    """这道题的初始代码在第几个代码单元（从 0 数）：优先按标签 hw-starter-<key>，
    其次按检查器调用，再次按给答案变量赋值的单元。
    """
    for n, cell in enumerate(cells):
        if f"hw-starter-{exercise.key}" in (cell["metadata"].get("tags") or []):
            return n
    found = None
    for n, cell in enumerate(cells):
        if f"{exercise.checker}(" in cell["source"]:
            found = n
    if found is None:
        pattern = _assignment(exercise)
        for n, cell in enumerate(cells):
            if pattern.search(cell["source"]):
                found = n
    return found


def own_cells(cells: list[dict], exercise) -> set[int]:
    """这道题自己的代码单元（从 0 数）：初始代码那一个，加上给它的答案变量赋值的单元。
    只有这些单元出的问题算这道题“出错”：别的题出错、后面的单元删掉了变量，都不算在它头上。"""
    pattern = _assignment(exercise)
    own = {n for n, cell in enumerate(cells) if pattern.search(cell["source"])}
    anchor = _anchor(cells, exercise)
    return own | ({anchor} if anchor is not None else set())


WHAT = {"timeout": "超时", "crash": "内核崩溃", "not_run": "没有运行", "limit": "碰到上限"}


def _failure(problems: dict[int, Problem], own: set[int], anchor: int | None) -> Problem | None:
    """这道题自己的单元里出的问题（学生调用检查器报的 HomeworkWrong 之类除外）：
    初始代码那个单元的优先，否则取最早的一个。"""
    mine = {n: p for n, p in problems.items()
            if n in own and not (p.kind == "error" and p.exception in CHECKER_ERRORS)}
    if not mine:
        return None
    return mine.get(anchor) or mine[min(mine)]


def _verdict(exercise, answers: dict, inputs: dict) -> ExerciseResult:
    """只看答案变量此刻的值：没有这个变量、还没填、答错还是通过。"""
    mine = {n: answers[n] for n in exercise.answers}
    gone = [n for n, v in mine.items() if v is MISSING]
    if gone:
        gone_names = listing(gone)
        return ExerciseResult(exercise.key, exercise.title, "missing",
                              f"运行结束时没有变量 {gone_names}（从来没有定义，或者被后面的单元"
                              "删除了）：批改看的是运行结束时答案变量的值")
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


# ---------------------------------------------------------------- 各单元之后的答案（一个判定，跨单元）

MAX_STATES = 64   # 一道题的答案最多回看这么多次变化


def _states(exercise, history) -> list[tuple[int, dict]]:
    """这道题的答案每次变化之后的样子：[(改动它的单元，从 0 数, {变量名: 值})]。"""
    current = {n: MISSING for n in exercise.answers}
    out = []
    for cell, changed in history:
        touched = {n: v for n, v in changed.items() if n in current}
        if touched:
            current = {**current, **touched}
            out.append((cell, current))
    return out[-MAX_STATES:]


def _earlier_pass(exercise, history, inputs: dict, cells: list[dict] = ()):
    """答案现在不对、以前对过：(对的那一刻之后的单元, 改动它的单元, 改了哪些变量, 通过时的消息)，
    单元都从 0 数；没有对过（或没有各单元的记录）时返回 None。

    对了之后的改动里，有一个是这道题的单元有意做的（_on_purpose），“改动它的单元”就是最后那样一个：
    批改照最终值判（r36b F1：别的单元先 del 了答案，这道题的单元后来又赋了错的值，不能按 del 之前的值给分）。
    否则是对了之后的第一个改动。"""
    states = _states(exercise, history)
    for i in range(len(states) - 2, -1, -1):
        cell, values = states[i]
        verdict = _verdict(exercise, values, inputs)
        if verdict.status == "passed":
            changed_in, after = states[i + 1]
            purposeful = [(c, v) for c, v in states[i + 1:] if _on_purpose(cells, exercise, c)]
            if purposeful:
                changed_in, after = purposeful[-1][0], states[-1][1]
            names = [n for n in exercise.answers if after[n] is not values[n]]
            return cell, changed_in, names, verdict.message
    return None


def _given_at_anchor(exercise, history, cells: list[dict], inputs: dict) -> tuple[dict, dict[str, int]]:
    """这道题自己的单元（初始代码那个）运行完时学生手里的题目数据 {变量名: 值}（所有记下的题目数据，
    不只这道题的），和其中改动过的每个变量从哪个单元（从 0 数）起和原来的数据不一样了。"""
    anchor = _anchor(cells, exercise)
    if anchor is None:
        return {}, {}
    seen: dict = {}
    since: dict[str, int] = {}   # 变量名 → 从哪个单元（从 0 数）起和原来的数据不一样了
    for cell, changed in history:
        if cell > anchor:
            break
        for n, v in changed.items():
            if n not in GIVEN_TRACKED:
                continue
            seen[n] = v
            if v is MISSING or same_as_given(v, inputs[n]):
                since.pop(n, None)
            else:
                since.setdefault(n, cell)
    return {n: v for n, v in seen.items() if v is not MISSING}, since


def _given_note(exercise, history, cells: list[dict], inputs: dict) -> str:
    """这道题自己的单元（初始代码那个）运行完时，学生手里被改动过的题目数据：
    和笔记本里的检查器同一句提醒（changed_note），并写明是哪个单元改的；
    没改动、或者没有记录时返回空字符串。

    题目自己的数据单元（例如算 scores 的那个）用已被学生改动的数据（Q）算出的 scores 也不一样了：
    那不是那个单元的错，写明它是用哪个单元改动过的数据算出来的（r36c F4）。"""
    seen, since = _given_at_anchor(exercise, history, cells, inputs)
    names = [n for n in exercise.given if n in GIVEN_TRACKED]
    given = {n: seen[n] for n in names if n in seen}
    note = changed_note(given, inputs)
    if not note:
        return note
    by_cell: dict[int, list[str]] = {}
    for n in names:
        if n in since and n in given:
            by_cell.setdefault(since[n], []).append(n)
    for cell, changed in sorted(by_cell.items()):
        listed = listing(changed)
        source = cells[cell]["source"] if 0 <= cell < len(cells) else ""
        # 在这个单元之前就已被改动、这个单元又用到了的题目数据
        earlier = sorted((c, m) for m, c in since.items()
                         if c < cell and m not in changed and _mentions(m, source))
        if earlier and not any(_anchor(cells, e) == cell for e in EXERCISES):
            used = listing([m for _, m in earlier])
            where = "、".join(sorted({f"代码单元 {c + 1}" for c, _ in earlier}))
            note += (f"（{listed} 在代码单元 {cell + 1} 里是用已被改动的 {used} 算出来的；"
                     f"{used} 是在{where} 里改动的。）")
        elif len(changed) > 1:
            note += f"（{listed} 都是在代码单元 {cell + 1} 里改动的。{_through_view(changed, source)}）"
        else:
            note += f"（{listed} 是在代码单元 {cell + 1} 里改动的。{_through_view(changed, source)}）"
    return note


# 原地修改一个变量：x.mul_(…)、x[0] = …、x += …
_IN_PLACE = re.compile(r"\b([A-Za-z_]\w*)(?:\[[^\]\n]*\])*[ \t]*(?:\.[a-z]\w*_\(|(?<=\])[ \t]*=(?!=)|[-+*/@]=)")


def _mentions(name: str, source: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", source) is not None


def _through_view(changed: list[str], source: str) -> str:
    """改动题目数据的单元没有给这个名字赋值、也没有原地修改它：它原地修改的是 view 着这份数据的另一个张量（r36c F5：
    4(二) 里 heads.mul_(2.0)，heads 是 x 的 view）。说出是哪一个；都提到了时返回空字符串。"""
    written = set(_IN_PLACE.findall(source))
    if any(n in written or re.search(rf"^[ \t]*{re.escape(n)}[ \t]*=(?!=)", source, re.M) for n in changed):
        return ""
    listed = listing(changed)
    views = [m for m in dict.fromkeys(_IN_PLACE.findall(source)) if m not in changed]
    if views:
        return (f"那个单元没有给 {listed} 赋值，它原地修改了 {listing(views)}："
                f"那是 {listed} 的 view（和它共用数据），改它就是改 {listed}。")
    return f"那个单元没有给 {listed} 赋值：它大概原地修改了一个 view 着 {listed} 的张量（和它共用数据）。"


def _on_purpose(cells: list[dict], exercise, n: int) -> bool:
    """第 n 个单元改这道题的答案（重新赋值、原地修改、del）是不是有意的：
    这个单元就是这道题的
    （它的初始代码、调用它的检查器，或者给它的答案变量赋值、又不属于别的题）。
    别的单元（别的题的单元重用了 heads、scores 这样的名字，原地改了它 view 的张量，
    或者最后“收拾干净”时 del 了它）改了它，不是有意的：一道通过了的题保住它的分数。"""
    source = cells[n]["source"] if 0 <= n < len(cells) else ""
    if n == _anchor(cells, exercise) or f"{exercise.checker}(" in source:
        return True
    others = [e for e in EXERCISES if e.key != exercise.key]
    if any(n == _anchor(cells, e) or f"{e.checker}(" in source for e in others):
        return False
    return bool(_assignment(exercise).search(source))


def judge_exercise(exercise, answers: dict, inputs: dict, problems: dict[int, Problem],
                   cells: list[dict], history=()) -> ExerciseResult:
    """一道小题的结果。答案的最终值对了就是通过。

    否则，答案以前对过、后来被别的单元改了或删了
    （history：各单元之后答案的变化）：仍是通过，
    说明写明哪个单元改了哪个变量；这道题自己的单元有意改了它，就照最终值判，说明里也写明是哪个单元。
    再否则，这道题自己的单元出了问题（异常、超时、崩溃、没有运行）就是“出错”或“超时”，写明第几个单元；
    最后是值本身的结论（没有这个变量、未作答、答错）。"""
    verdict = _verdict(exercise, answers, inputs)
    if verdict.status == "passed":
        return verdict
    earlier = _earlier_pass(exercise, history, inputs, cells)
    if earlier is not None:
        passed_after, changed_in, names, message = earlier
        listed = listing(names)
        gone = any(answers[n] is MISSING for n in names)
        if not _on_purpose(cells, exercise, changed_in):
            how = "被删除了（del）" if gone else "被改动了"
            why = "" if gone else "（重新赋值，或者原地修改了它、它所 view 的张量）"
            source = cells[changed_in]["source"] if 0 <= changed_in < len(cells) else ""
            if not any(_mentions(n, source) for n in names):
                # 那个单元的代码里没有这些名字：也许原地改了它们 view 的张量，也许动了批改程序的探针（r36c F2：
                # 学生取得签名、让探针交回编的值）。只说看到了什么，不说那个单元做了什么
                if len(names) > 1:
                    note = (f"注意：代码单元 {changed_in + 1} 运行之后，批改程序读到的 {listed} 都变了，那个单元的代码里"
                            f"却没有这些名字（也许原地修改了它们所 view 的张量，也许动了批改程序读答案的探针）。")
                else:
                    note = (f"注意：代码单元 {changed_in + 1} 运行之后，批改程序读到的 {listed} 变了，那个单元的代码里"
                            f"却没有 {listed} 这个名字（也许原地修改了它所 view 的张量，也许动了批改程序读答案的探针）。")
            elif len(names) > 1:
                note = f"注意：{listed} 都在代码单元 {changed_in + 1} 里{how}{why}。"
            else:
                note = f"注意：{listed} 在代码单元 {changed_in + 1} 里{how}{why}。"
            note += (f"那个单元不是这道题的，"
                     f"所以批改按代码单元 {passed_after + 1} 运行完时的值给分。")
            return ExerciseResult(exercise.key, exercise.title, "passed", f"{message}。{note}",
                                  None, changed_in + 1)
        if gone:
            note = f"{listed} 在代码单元 {passed_after + 1} 运行完时是对的，代码单元 {changed_in + 1} 删除了它。"
        else:
            note = f"{listed} 在代码单元 {passed_after + 1} 运行完时是对的，代码单元 {changed_in + 1} 又改了它。"
        if not gone and changed_in != _anchor(cells, exercise):
            # 对了之后，别的单元（不是这道题的初始代码）又给它赋了值：检查器对这个值的诊断（“像是取了整”之类）
            # 说的不是学生做错了什么，只说它被改了
            verdict = replace(verdict, message=f"{note}批改看的是运行结束时答案变量的值，那时它已经不对了。")
        else:
            verdict = replace(verdict, message=f"{verdict.message}（{note}）")
        if verdict.status == "not_attempted":
            # 做对了、后来被这道题的单元（常常是不属于任何一道题的“收拾”单元）改回了 None：学生答过，
            # 不是“未作答”（那是初始代码原样没动）；记“答错”，说明写明哪个单元改了它（r36t2 第 4 条）
            verdict = replace(verdict, status="wrong")
    if verdict.status == "wrong":
        note = _given_note(exercise, history, cells, inputs)
        if note:
            # 诊断对着学生手里改动过的数据下（r36c F4）：按原来的数据下的“取了整”“循环没有写进去”说的不是学生
            seen, _ = _given_at_anchor(exercise, history, cells, inputs)
            mine = {n: answers[n] for n in exercise.answers}
            with contextlib.redirect_stdout(io.StringIO()):
                instead = on_changed_data(exercise, mine, {n: seen[n] for n in exercise.given if n in seen},
                                          inputs)
            if instead is not None and earlier is None:
                verdict = replace(verdict, message=f"{note}{instead}")
            else:
                verdict = replace(verdict, message=f"{note}{verdict.message}")
    p = _failure(problems, own_cells(cells, exercise), _anchor(cells, exercise))
    if p is None:
        return verdict
    status = "timeout" if p.kind == "timeout" or p.exception == "NotebookTimeout" else "error"
    what = WHAT.get(p.kind, "异常")
    return ExerciseResult(exercise.key, exercise.title, status,
                          f"代码单元 {p.cell} {what}：{p.exception or ''} {p.message}".strip(),
                          p.exception, p.cell)


# ---------------------------------------------------------------- 一份提交

class Ungradable(Exception):
    """整份提交没法逐题判：每道小题都记“出错”，说明写 message（异常名 ename）。"""

    def __init__(self, message: str, ename: str, note: str | None = None):
        super().__init__(message)
        self.message, self.ename, self.note = message, ename, note


INTERNAL_NOTE = "internal_error"   # 写在 SubmissionResult.notes 里：批改程序自己出错，这一行留空


def internal_error(path, err: BaseException, result: SubmissionResult | None = None) -> SubmissionResult:
    """批改一份提交时批改程序自己出了没有想到的错：这一份“无法批改”（各题“出错”、CSV 里留空），
    原因写在状态里；批改接着批下一份（r36c F1）。不记哈希：修好以后加 --resume 会重新批改它。"""
    text = f"{type(err).__name__}: {err}"[:200]
    message = f"批改程序内部出错（{text}），这份提交没有批改；请把这份笔记本和这句话报告给本书的作者"
    result = result or SubmissionResult(str(path), graded=False, started=time.time())
    result.graded, result.problem, result.sha256 = False, message, ""
    result.exercises = [ExerciseResult(e.key, e.title, "error", message, "InternalError") for e in EXERCISES]
    result.notes = [n for n in result.notes if n != INTERNAL_NOTE] + [INTERNAL_NOTE]
    result.finished = time.time()
    return result


class Tampered(Exception):
    """笔记本运行完了，但探针交回的答案输出被改动过（冒充的标记、伪造或超大的答案）：这是学生的代码干的，
    整份提交按 0 分计（各题“出错”），原因写明；不是“无法批改”（那在成绩册里是空着的）。"""


@dataclass
class RunnerReport:
    """runner 交回、核对过的结果。"""

    problems: dict[int, Problem]
    answers: dict
    history: list           # [(单元，从 0 数, {变了的答案变量: 值})]
    leftover: int
    answers_after: int | None = None   # 换内核失败：答案是第几个代码单元（从 1 数）运行完时记下的


def _problems_of(raw, n_cells: int) -> dict[int, Problem]:
    """runner 写的单元问题：核对格式（学生可能动过它），不合格就抛 AnswerFileError。"""
    if not isinstance(raw, list) or len(raw) > n_cells + 1:
        raise AnswerFileError("单元问题的格式不对")
    out = {}
    for item in raw:
        try:
            p = Problem(int(item["cell"]), str(item["kind"]),
                        None if item["exception"] is None else str(item["exception"])[:80],
                        str(item["message"])[:300])
        except (KeyError, TypeError, ValueError):
            raise AnswerFileError("单元问题的格式不对") from None
        if not 1 <= p.cell <= n_cells or p.kind not in (
                "error", "timeout", "crash", "not_run", "limit"):
            raise AnswerFileError("单元问题的格式不对")
        out[p.cell - 1] = p
    return out


def _history_of(raw, n_cells: int) -> list:
    """runner 记下的各单元之后答案的变化；格式哪里不对就当作没有记录（只按最终值判，和以前一样）。"""
    if not isinstance(raw, list) or len(raw) > n_cells:
        return []
    out, last = [], 0
    try:
        for item in raw:
            cell, changed = item["cell"], item["answers"]
            if type(cell) is not int or not last < cell <= n_cells or not isinstance(changed, dict) \
                    or not set(changed) <= set(TRACKED_NAMES):
                return []
            out.append((cell - 1, {n: decode_answer(v) for n, v in changed.items()}))
            last = cell
    except (AnswerFileError, KeyError, TypeError):
        return []
    return out


def _read(path: Path, result: SubmissionResult) -> list[dict]:
    """读提交，返回它的代码单元；读不了时抛 Ungradable。"""
    nb, digest, bad = read_submission(path)
    result.sha256 = digest
    if bad:
        ename, message = bad
        raise Ungradable(message, ename)
    return code_cells(nb)


def _run(cells: list[dict], limits: sandbox.Limits, sandboxed: bool) -> sandbox.RunOutcome:
    """在沙箱里运行这些代码单元。"""
    request = json.dumps({"sources": [c["source"] for c in cells],
                          "names": TRACKED_NAMES}).encode("utf-8")
    base = Path(tempfile.mkdtemp(prefix="minigpt-grade-"))
    try:
        return sandbox.run(request, limits, sandboxed, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _runner_report(outcome: sandbox.RunOutcome, limits: sandbox.Limits, n_cells: int) -> RunnerReport:
    """核对 runner 交回的结果；运行没有正常结束、结果不合格时抛 Ungradable。"""
    if outcome.returncode is None:
        raise Ungradable(f"沙箱运行超过 {limits.wall_clock():g} 秒，已从外面结束", "WallClockTimeout")
    if outcome.returncode != 0:
        last = (outcome.stderr.strip().splitlines() or [""])[-1][:200]
        raise Ungradable("批改程序在沙箱里没有正常结束（退出码 "
                         f"{outcome.returncode}），可能被笔记本里的代码结束了"
                         + (f"；它最后说：{last}" if last else ""), "RunnerDied")
    try:
        if outcome.too_big:
            raise AnswerFileError(f"沙箱交回的结果超过 {sandbox.MAX_RESULT_BYTES} 字节，已结束沙箱")
        lines = outcome.stdout.strip().splitlines()
        raw = parse_json(lines[-1] if lines else b"")
        if not isinstance(raw, dict):
            raise AnswerFileError("结果文件的格式不对")
        if raw.get("kernel_failed"):
            raise Ungradable(str(raw["kernel_failed"])[:300], "KernelStartError", "kernel_failed")
        if raw.get("runner_error"):
            raise Ungradable("运行笔记本时出了意外（内核发来的消息不合规？）："
                             f"{str(raw['runner_error'])[:200]}", "RunnerError")
        problems = _problems_of(raw.get("problems"), n_cells)
        try:
            if raw.get("answers_problem"):
                raise AnswerFileError(str(raw["answers_problem"])[:200])
            answers = (decode_answers(raw["answers"], TRACKED_NAMES)
                       if raw.get("answers") is not None
                       else {n: MISSING for n in TRACKED_NAMES})
        except AnswerFileError as err:
            raise Tampered(f"答案输出被改动过，按 0 分计：{err}") from None
        leftover = raw.get("leftover", 0)
        after = raw.get("answers_after_cell")
        if type(leftover) is not int or leftover < 0 or not (
                after is None or type(after) is int and 1 <= after <= n_cells):
            raise AnswerFileError("结果文件的格式不对")
    except AnswerFileError as err:
        raise Ungradable(f"答案文件不合格：{err}", "AnswerFileError") from None
    return RunnerReport(problems, answers, _history_of(raw.get("snapshots"), n_cells), leftover, after)


def _judge_all(result: SubmissionResult, report: RunnerReport, cells: list[dict]) -> None:
    """逐题判分，填进 result。"""
    if report.answers_after is not None:
        result.notes.append(f"没能换上新内核：答案按代码单元 {report.answers_after} 运行完时记下的值判分，"
                            "此后的单元没有运行")
    if report.leftover:
        result.notes.append(f"运行结束时笔记本还留着 {report.leftover} 个进程，已随沙箱全部结束")
    with JUDGE_LOCK:
        inputs = exercise_inputs()
        result.exercises = [judge_exercise(e, report.answers, inputs, report.problems, cells,
                                           report.history)
                            for e in EXERCISES]
    result.graded = True
    result.cell_problems = [report.problems[n] for n in sorted(report.problems)]


def grade_submission(path: Path, limits: sandbox.Limits | None = None, *,
                     sandboxed: bool = True) -> SubmissionResult:
    """批改一份提交：读它、在沙箱里运行、逐题判分。文件不存在、不是笔记本、答案文件不合格等情况
    也返回一行结果，不抛异常。

    内核在学生代码运行之前就起不来时，这一行是“出错”，并在 result.notes 里记下 "kernel_failed"。
    """
    limits = limits or sandbox.Limits()
    result = SubmissionResult(str(path), graded=False, sandboxed=sandboxed, started=time.time())
    try:
        cells = _read(path, result)
        result.limits = limits_record(limits, sandboxed)   # 从这里起，结果取决于上限
        report = _runner_report(_run(cells, limits, sandboxed), limits, len(cells))
        _judge_all(result, report, cells)
    except Tampered as err:
        result.graded = True
        result.problem = str(err)
        result.exercises = [ExerciseResult(e.key, e.title, "error", str(err), "AnswerFileError")
                            for e in EXERCISES]
    except Ungradable as err:
        if err.note:
            result.notes.append(err.note)
        result.problem = err.message
        result.exercises = [ExerciseResult(e.key, e.title, "error", err.message, err.ename)
                            for e in EXERCISES]
    except Exception as err:   # 批改程序自己的错：只让这一份无法批改，不让整批停下
        return internal_error(path, err, result)
    finally:
        result.finished = time.time()
    return result
