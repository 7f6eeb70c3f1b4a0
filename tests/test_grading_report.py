"""批改报告给教师用：每道小题的结果只看它自己的单元，每个问题只说一次，报告文件按教师的 umask 建，
无法批改的提交在 CSV 里留空，--resume 不沿用在别的上限下批改的结果。

判分的部分不启动内核：学生版笔记本的代码单元在本进程里依次 exec（和学生内核里一样，出错照样往下），
记下每个单元的异常，再取答案变量交给 judge——批改程序在沙箱外做的正是这一步。沙箱里的同一批情况见
tests/test_homework_grade.py 的 error_then_untouched、deleted_after_error。
"""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import io
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from support.book import REPO
from minigpt.grading import cli, judge, report
from minigpt.answer_format import MISSING, answers_from_output, decode_answer, parse_json, probe_source
from minigpt.grading.judge import judge_exercise
from minigpt.grading.submission import code_cells
from minigpt.grading.results import ExerciseResult, Problem, SubmissionResult, limits_record, short_name
from minigpt.grading.sandbox import Limits
from minigpt.homework import EXERCISES, exercise_inputs

SUBMISSIONS = REPO / "tests" / "fixtures" / "submissions"
_spec = importlib.util.spec_from_file_location("make_student_notebook", REPO / "tools" / "make_student_notebook.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


def _starter(cell) -> str | None:
    return next((t[len("hw-starter-"):] for t in cell["metadata"].get("tags", []) if t.startswith("hw-starter-")),
                None)


def _notebook(answers: dict[str, str], extra_after: dict[str, str] | None = None, last: str | None = None):
    """学生版笔记本的代码单元：按题号换掉初始代码，可在某题之后插一个单元、在最后加一个单元。"""
    nb = nbformat.read(REPO / "book" / "homework_student.ipynb", as_version=4)
    cells = code_cells(nb)
    out = []
    for cell in cells:
        key = _starter(cell)
        out.append({**cell, "source": answers.get(key, cell["source"]) if key else cell["source"]})
        if key and extra_after and key in extra_after:
            out.append({"source": extra_after[key], "metadata": {}})
    if last:
        out.append({"source": last, "metadata": {}})
    return out


def _snapshot(namespace: dict, names: list[str]) -> dict:
    """探针此刻写出的答案（和 runner 在每个单元之后做的一样）。"""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        exec(probe_source(names), namespace)
    return parse_json(answers_from_output(sink.getvalue()))


def _grade(cells) -> tuple[list[ExerciseResult], dict[int, Problem]]:
    """在本进程里依次运行每个单元（出错照样往下），每个单元之后记下答案的变化，再像批改程序那样判每道小题。"""
    namespace: dict = {}
    problems = {}
    names = judge.TRACKED_NAMES   # 和 runner 一样：答案变量，加上学生手里的题目数据
    history, last = [], {}
    for n, cell in enumerate(cells):
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(cell["source"], f"<cell {n + 1}>", "exec"), namespace)
        except Exception as err:  # noqa: BLE001  学生的单元抛什么都记下
            problems[n] = Problem(n + 1, "error", type(err).__name__, str(err).splitlines()[0][:160])
        raw = _snapshot(namespace, names)
        changed = {k: v for k, v in raw.items() if last.get(k, {"kind": "missing"}) != v}
        last.update(changed)
        if changed:
            history.append((n, {k: decode_answer(v) for k, v in changed.items()}))
    answers = {n: namespace.get(n, MISSING) for n in names}
    inputs = exercise_inputs()
    return [judge_exercise(e, answers, inputs, problems, cells, history) for e in EXERCISES], problems


def _by_key(results) -> dict[str, ExerciseResult]:
    return {r.key: r for r in results}


def test_an_exception_in_the_first_part_leaves_every_untouched_part_not_attempted():
    first = EXERCISES[0]
    cells = _notebook({first.key: "score = undefined_name"})
    results, _ = _grade(cells)
    got = _by_key(results)
    assert got[first.key].status == "error" and got[first.key].exception == "NameError"
    assert {r.status for r in results[1:]} == {"not_attempted"}, [(r.key, r.status) for r in results]


def test_a_correct_part_deleted_by_another_cell_keeps_its_points_and_no_earlier_cells_error():
    """最后加的一个单元 del 掉了最后一道题的答案：那个单元不是这道题的，仍得分，说明写出那个单元；
    第一道题的 NameError 不算在它头上。"""
    solutions = tool.solutions()
    first, last = EXERCISES[0], EXERCISES[-1]
    cells = _notebook({**solutions, first.key: "score = undefined_name"},
                      last="del " + ", ".join(last.answers))
    got = _by_key(_grade(cells)[0])
    assert got[first.key].status == "error"
    assert got[last.key].status == "passed" and got[last.key].exception is None
    assert "NameError" not in got[last.key].message
    assert f"在代码单元 {len(cells)} 里被删除了" in got[last.key].message
    assert {got[e.key].status for e in EXERCISES[1:-1]} == {"passed"}


def test_a_part_that_deletes_its_own_answer_in_its_own_cell_is_missing():
    """同一道题的单元里先做对、再 del 掉答案：这是有意的，批改按运行结束时的值判——没有这个变量。"""
    solutions = tool.solutions()
    last = EXERCISES[-1]
    own = solutions[last.key] + "\ndel " + ", ".join(last.answers)
    got = _by_key(_grade(_notebook({**solutions, last.key: own}))[0])
    assert got[last.key].status == "missing", got[last.key].message


def test_an_error_in_a_cell_that_assigns_the_answer_is_this_parts_error():
    """学生把答案写在自己加的单元里，这个单元出错：算这道题“出错”，写明是哪个单元。"""
    solutions = tool.solutions()
    first = EXERCISES[0]
    cells = _notebook({**solutions, first.key: "pass"},
                      extra_after={first.key: "score = (q * k).sum() / undefined_name"})
    got = _by_key(_grade(cells)[0])
    own = next(n for n, c in enumerate(cells) if "undefined_name" in c["source"]) + 1
    assert got[first.key].status == "error" and got[first.key].cell == own
    assert f"代码单元 {own}" in got[first.key].message


def test_the_final_value_counts_even_after_the_checker_complained():
    solutions = tool.solutions()
    first = EXERCISES[0]
    cells = _notebook({**solutions, first.key: "score = q * k\ncheck_dot_score(score, q, k, Q, K)"},
                      extra_after={first.key: "score = (q * k).sum()"})
    results, problems = _grade(cells)
    assert any(p.exception == "HomeworkWrong" for p in problems.values())
    r = SubmissionResult("s.ipynb", True, exercises=results, cell_problems=[problems[n] for n in sorted(problems)])
    assert r.passed == len(EXERCISES)
    assert report.details(r) == [], "通过的题旁边不该有检查器当时的抱怨"


@pytest.mark.parametrize("key,cell,changed,part", [
    ("4b", "heads = 1 - x  # 重用了作业 4（一）的名字\n" + "{4b}", "4a", "heads"),
    ("4b", "{4b}\nweights = torch.softmax(head_scores, dim=-1)  # 重用了作业 2（二）的名字", "2b", "weights"),
    ("4b", "{4b}\nscores = 0  # 题目数据，不是答案\nmerged = attn_out", "4a", "merged"),
    ("5b", "x.mul_(2)  # 原地改了 x：heads、merged 是它的 view\n{5b}", "4a", "heads 和 merged"),
    ("5b", "ln_out = 0\n{5b}", "5a", "ln_out"),
])
def test_an_answer_a_later_part_changes_keeps_its_points_with_the_cell_named(key, cell, changed, part):
    solutions = tool.solutions()
    cells = _notebook({**solutions, key: cell.format(**solutions)})
    got = _by_key(_grade(cells)[0])
    where = next(n for n, c in enumerate(cells) if _starter(c) == key) + 1
    assert got[changed].status == "passed", got[changed].message
    both = "都" if " 和 " in part else ""
    assert f"{part} {both}在代码单元 {where} 里被改动了" in got[changed].message
    r = SubmissionResult("s.ipynb", True, exercises=list(got.values()))
    assert any(f"代码单元 {where}" in line for line in report.details(r))


def test_given_data_changed_by_another_parts_cell_is_traced_to_that_cell():
    """作业 5（一）的单元里 x.zero_()：作业 5（二）按原来的 x 判，答错；说明开头提醒 x 被改动了，并写出是哪个单元。"""
    solutions = tool.solutions()
    cells = _notebook({**solutions, "5a": solutions["5a"] + "\nx.zero_()  # 清空草稿"})
    got = _by_key(_grade(cells)[0])
    where = next(n for n, c in enumerate(cells) if _starter(c) == "5a") + 1
    assert got["5b"].status == "wrong"
    assert got["5b"].message.startswith("注意：你改动了题目给的 x")
    assert f"x 是在代码单元 {where} 里改动的" in got["5b"].message, got["5b"].message


def test_an_answer_rebound_in_a_cell_of_its_own_part_is_graded_on_its_final_value():
    """之后在一个不属于别的题的单元里又给答案赋了值：有意的，按最终值判；说明写出哪个单元改了它。"""
    solutions = tool.solutions()
    cells = _notebook(solutions, last="score = 0.5")
    got = _by_key(_grade(cells)[0])
    assert got["1a"].status == "wrong"
    assert f"代码单元 {len(cells)} 又改了它" in got["1a"].message


@pytest.mark.parametrize("case, extra_after, own_prefix, last, key", [
    ("h13", {"1b": "del score"}, {}, "score = 5.0", "1a"),
    ("h13c", {}, {"3": "del score\n"}, "score = 5.0", "1a"),
    ("h13d", {"1b": "del S"}, {}, "S = torch.zeros(3, 3)", "1b"),
])
def test_a_wrong_reassignment_after_a_del_in_another_cell_is_graded_on_the_final_value(
        case, extra_after, own_prefix, last, key):
    """r36b F1：别的单元先 del 了答案，之后一个不属于别的题的单元又给它赋了错的值。这个赋值是这道题的（有意的），
    按最终值判答错；以前批改只看 del，按 del 之前的值给了满分。"""
    solutions = tool.solutions()
    answers = {**solutions, **{k: prefix + solutions[k] for k, prefix in own_prefix.items()}}
    cells = _notebook(answers, extra_after=extra_after, last=last)
    got = _by_key(_grade(cells)[0])
    assert got[key].status == "wrong", (case, got[key].message)
    assert f"代码单元 {len(cells)} 又改了它" in got[key].message, got[key].message


@pytest.mark.parametrize("key, change, name", [
    ("4b", "with torch.no_grad():\n    mha.W_O.weight.mul_(2)", "mha"),
    ("5b", "with torch.no_grad():\n    block.ln_ffn.weight.fill_(1.0)", "block"),
])
def test_a_changed_given_module_is_noted_in_the_graders_message_like_in_the_notebook(key, change, name):
    """r36b F4（h04b）：改了题目给的 mha、block，笔记本里的检查器说“你改动了题目给的 mha”，批改的说明却没有。"""
    solutions = tool.solutions()
    before = {"4b": "4a", "5b": "5a"}[key]
    cells = _notebook(solutions, extra_after={before: change})
    got = _by_key(_grade(cells)[0])
    assert got[key].status == "wrong", got[key].message
    assert got[key].message.startswith(f"注意：你改动了题目给的 {name}"), got[key].message
    changed_in = next(n for n, c in enumerate(cells) if c["source"] == change) + 1
    assert f"是在代码单元 {changed_in} 里改动的" in got[key].message, got[key].message


def test_an_answer_overwritten_by_a_later_stand_alone_cell_is_said_to_be_overwritten_not_rounded():
    """score 对了之后，最后一个单元 score = 0（教师试用的 s09）：判的是最终值（答错），说明讲它被哪个单元改了，
    不套用检查器对 0 这个值的诊断（“像是取了整”）。"""
    solutions = tool.solutions()
    cells = _notebook(solutions, last="score = 0")
    got = _by_key(_grade(cells)[0])
    assert got["1a"].status == "wrong"
    assert f"代码单元 {len(cells)} 又改了它" in got["1a"].message
    assert "取了整" not in got["1a"].message, got["1a"].message


def test_an_empty_notebook_gets_one_detail_line_not_one_per_part_and_per_checker():
    results, problems = _grade(_notebook({}))
    r = SubmissionResult("s.ipynb", True, exercises=results, cell_problems=[problems[n] for n in sorted(problems)])
    assert len(problems) >= 1 and {p.exception for p in problems.values()} == {"HomeworkNotFilled"}
    assert report.details(r) == ["  未作答：全部小题"]


def test_each_problem_is_listed_once_in_the_details():
    """一道题自己的单元出错：只在那道题的一行里说；不属于任何题的单元出错：单独一行。"""
    solutions = tool.solutions()
    first = EXERCISES[0]
    cells = _notebook({**solutions, first.key: "score = undefined_name"}, last="1 / 0")
    results, problems = _grade(cells)
    r = SubmissionResult("s.ipynb", True, exercises=results, cell_problems=[problems[n] for n in sorted(problems)])
    lines = report.details(r)
    assert sum("NameError" in line for line in lines) == 1
    assert sum("ZeroDivisionError" in line for line in lines) == 1 and len(lines) == 2, lines


def test_short_names_follow_the_exercise_keys():
    assert [short_name(k) for k in ("1a", "1b", "2a", "3", "4c", "10b")] == [
        "1（一）", "1（二）", "2（一）", "3", "4（三）", "10（二）"]
    assert all(short_name(e.key) for e in EXERCISES)


# ---------------------------------------------------------------- CSV、文件权限

def _ungradable(name: str, reason: str) -> SubmissionResult:
    return SubmissionResult(f"/subs/{name}.ipynb", False, problem=reason,
                            exercises=[ExerciseResult(e.key, e.title, "error", reason, "X") for e in EXERCISES])


def test_ungradable_rows_have_blank_scores_and_the_reason_in_the_status_column():
    done = SubmissionResult("/subs/2024001.ipynb", True, exercises=[
        ExerciseResult(e.key, e.title, "wrong") for e in EXERCISES])
    rows = list(csv.reader(io.StringIO(report.to_csv([done, _ungradable("2024002", "文件不存在")])[1:])))
    assert rows[1][1:-1] == ["0"] * (len(EXERCISES) + 1)
    assert rows[2][1:-1] == [""] * (len(EXERCISES) + 1) and rows[2][-1] == "无法批改：文件不存在"


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_report_files_are_created_with_the_teachers_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        assert report.current_umask() == umask
        report.write_json(tmp_path / "r.json", [_ungradable("a", "x")], {})
        report.write_atomic(tmp_path / "g.csv", "学号\r\n")
    finally:
        os.umask(old)
    for name in ("r.json", "g.csv"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name


def test_the_grader_writes_json_and_csv_readable_by_the_group_under_umask_027(tmp_path):
    """以前报告是 0600：用 sudo 批改，教师自己的账号打不开。这里真的运行批改程序（坏的 JSON，不用内核）。"""
    shutil.copy(SUBMISSIONS / "invalid_json.ipynb", tmp_path / "a.ipynb")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "minigpt.grade", "--no-sandbox", "a.ipynb", "--json", "r.json",
                           "--csv", "g.csv"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
                          preexec_fn=lambda: os.umask(0o027))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {n: stat.S_IMODE((tmp_path / n).stat().st_mode) for n in ("r.json", "g.csv")} == {
        "r.json": 0o640, "g.csv": 0o640}


# ---------------------------------------------------------------- --resume 与上限

def test_a_result_remembers_its_limits_through_the_json_report(tmp_path):
    r = _ungradable("a", "x")
    r.sha256 = "ab" * 32
    r.limits = limits_record(Limits(timeout=4), sandboxed=True)
    report.write_json(tmp_path / "r.json", [r], {})
    back = next(iter(report.read_json(tmp_path / "r.json").values()))
    assert back.limits == r.limits == limits_record(Limits(timeout=4.0), True)
    assert back.limits != limits_record(Limits(timeout=60), True)
    assert back.limits != limits_record(Limits(timeout=4), False)


def test_a_report_from_before_limits_were_recorded_counts_as_other_limits(tmp_path):
    r = _ungradable("a", "x")
    r.sha256 = "ab" * 32
    report.write_json(tmp_path / "r.json", [r], {})
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    del data["submissions"][0]["limits"]
    (tmp_path / "r.json").write_text(json.dumps(data), encoding="utf-8")
    back = next(iter(report.read_json(tmp_path / "r.json").values()))
    assert back.limits not in (None, limits_record(Limits(), True))
    assert cli.limits_change(back.limits, limits_record(Limits(), True)) == "旧报告没有记下上限"


def test_the_change_of_limits_is_said_with_the_options_names():
    old, new = limits_record(Limits(timeout=60, memory=2**31), True), limits_record(Limits(timeout=4), False)
    assert cli.limits_change(old, new) == "--timeout 60 秒 → 4 秒，沙箱里 → 沙箱外"


@pytest.mark.kernel
def test_resume_regrades_a_result_made_under_another_timeout_and_reuses_one_made_under_the_same(tmp_path):
    from minigpt.grading import sandbox

    sandboxed = not sandbox.unavailable()
    shutil.copy(SUBMISSIONS / "placeholders.ipynb", tmp_path / "a.ipynb")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    base = [sys.executable, "-m", "minigpt.grade", "a.ipynb", "--json", "r.json"] + ([] if sandboxed else
                                                                                      ["--no-sandbox"])

    def run(*extra):
        proc = subprocess.run(base + list(extra), capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc, json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["submissions"][0]

    _, first = run("--timeout", "20")
    assert first["graded"] and first["limits"]["timeout"] == 20
    proc, second = run("--timeout", "21", "--resume")
    assert "0 份沿用" in proc.stderr and "另一组上限" in proc.stderr and "--timeout 20 秒 → 21 秒" in proc.stderr
    assert second["limits"]["timeout"] == 21 and second["started"] > first["finished"]
    proc, third = run("--timeout", "21", "--resume")
    assert "1 份沿用" in proc.stderr and "另一组上限" not in proc.stderr and third == second


def test_a_right_answer_set_back_to_none_by_a_free_cell_is_wrong_with_the_reason_in_the_details():
    """r36t2 第 4 条（10overwrite）：S 做对了，最后一个不属于任何一道题的单元 S = None。学生答过这道题，
    不是“未作答”（初始代码原样没动）：记“答错”，表下的详情和 JSON 的说明一样，写明哪个单元改了它。"""
    solutions = tool.solutions()
    cells = _notebook(solutions, last="S = None")
    got = _by_key(_grade(cells)[0])
    assert got["1b"].status == "wrong", got["1b"].message
    assert f"代码单元 {len(cells)} 又改了它" in got["1b"].message
    r = SubmissionResult("s.ipynb", True, exercises=list(got.values()))
    lines = report.details(r)
    assert any(line.startswith(f"  {short_name('1b')} 答错：") and f"代码单元 {len(cells)} 又改了它" in line
               for line in lines), lines
    assert not any(line.startswith("  未作答") for line in lines), lines


def test_an_ungradable_submission_shows_no_score_in_the_table_and_null_points_in_the_json():
    """r36t2 第 5 条（14notjson）：CSV 把无法批改的提交的得分留空，终端的表却印 0/9、0/20。
    0 分是一个成绩：表里写“—”和“无法批改”，--json 的 passed 与 points 是 null。"""
    ungradable = SubmissionResult("bad.ipynb", False, problem="不是有效的 JSON",
                                  exercises=[ExerciseResult(e.key, e.title, "error", "不是有效的 JSON")
                                             for e in EXERCISES])
    row = next(line for line in report.format_table([ungradable], 30).splitlines()
               if line.startswith("bad.ipynb"))
    assert row.split()[-2:] == ["—", "无法批改"], row
    assert "0/" not in row, row
    data = ungradable.to_json()
    assert data["points"] is None and data["passed"] is None
    csv_row = list(csv.reader(io.StringIO(report.to_csv([ungradable]).lstrip("\ufeff"))))[1]
    assert csv_row[1:-1] == [""] * (len(EXERCISES) + 1)
    again = SubmissionResult.from_json(json.loads(json.dumps(data)))   # --resume 读得回
    assert not again.graded and again.problem == ungradable.problem


# ---------------------------------------------------------------- 一份提交再古怪，也不让整批停下（r36c F1）

def _outcome(answers: dict, snapshots: list | None = None):
    from minigpt.grading import sandbox

    raw = {"version": 1, "problems": [], "answers": answers, "answers_problem": None, "leftover": 0,
           "snapshots": snapshots or []}
    return sandbox.RunOutcome(0, ("\n" + json.dumps(raw) + "\n").encode("utf-8"), "")


def _all_missing() -> dict:
    return {n: {"kind": "missing"} for n in judge.TRACKED_NAMES}


@pytest.mark.parametrize("item", [
    {"kind": "float", "value": 10**400},                                      # H02
    {"kind": "tensor", "dtype": "uint8", "shape": [1], "data": [300]},        # H03
])
def test_a_signed_final_answer_with_out_of_range_numbers_is_graded_as_tampered_not_raised(monkeypatch, item):
    """学生挖出密钥、自己签了装不下的数（r36c H02、H03）：这一份记“答案输出被改动过”（各题“出错”，0 分），
    不抛异常。"""
    monkeypatch.setattr(judge, "_run", lambda cells, limits, sandboxed: _outcome({**_all_missing(), "score": item}))
    result = judge.grade_submission(SUBMISSIONS / "correct.ipynb")
    assert result.graded and "答案输出被改动过" in result.problem, result.problem
    assert {e.status for e in result.exercises} == {"error"}


def test_a_signed_step_snapshot_with_out_of_range_numbers_does_not_stop_the_grading(monkeypatch):
    """r36c H04：装不下的数在某个单元之后的快照里（int64 张量里的 2**70）。快照不合格就当没有记录，
    最终答案照常判。"""
    cells = code_cells(nbformat.read(SUBMISSIONS / "correct.ipynb", as_version=4))
    bad = {"cell": 1, "answers": {"mask": {"kind": "tensor", "dtype": "int64", "shape": [1], "data": [2**70]}}}
    monkeypatch.setattr(judge, "_run", lambda c, limits, sandboxed: _outcome(_all_missing(), [bad]))
    result = judge.grade_submission(SUBMISSIONS / "correct.ipynb")
    assert result.graded and not result.problem and len(cells) >= 1
    assert {e.status for e in result.exercises} == {"missing"}


def test_an_unexpected_error_while_grading_one_submission_makes_only_that_one_ungradable(monkeypatch):
    def boom(cells, limits, sandboxed):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(judge, "_run", boom)
    result = judge.grade_submission(SUBMISSIONS / "correct.ipynb")
    assert not result.graded and result.problem.startswith("批改程序内部出错（OverflowError"), result.problem
    assert judge.INTERNAL_NOTE in result.notes and not result.sha256


def test_the_cli_grades_every_other_submission_when_one_raises_and_exits_2(monkeypatch, tmp_path, capsys):
    """批改一份提交时无论出了什么错（这里让判分直接抛 OverflowError），这一份“无法批改”、写明“批改程序内部出错”，
    其余照常批改、写进表和 --json；退出码 2（批改程序自己的问题，见教师指南的退出码一节）。"""
    for name in ("a.ipynb", "bad.ipynb", "z.ipynb"):
        shutil.copy(SUBMISSIONS / "placeholders.ipynb", tmp_path / name)

    def fake(path, limits=None, *, sandboxed=True):
        if path.name == "bad.ipynb":
            raise OverflowError("int too large to convert to float")
        return SubmissionResult(str(path), True, exercises=[ExerciseResult(e.key, e.title, "passed", "✔")
                                                            for e in EXERCISES])

    monkeypatch.setattr(judge, "grade_submission", fake)
    paths = [str(tmp_path / n) for n in ("a.ipynb", "bad.ipynb", "z.ipynb")]
    code = cli.main(["--no-sandbox", "--jobs", "1", "--json", str(tmp_path / "r.json"), "--", *paths])
    out, err = capsys.readouterr()
    assert code == 2
    subs = {Path(s["path"]).name: s for s in json.loads((tmp_path / "r.json").read_text())["submissions"]}
    assert subs["a.ipynb"]["graded"] and subs["z.ipynb"]["graded"]
    assert not subs["bad.ipynb"]["graded"] and "批改程序内部出错" in subs["bad.ipynb"]["problem"]
    assert "无法批改：批改程序内部出错（OverflowError" in out and "Traceback" not in out + err
    assert "1 份提交批改时批改程序内部出错" in err


# ---------------------------------------------------------------- 学生改动了题目数据之后的诊断（r36c F4）

ZEROED_Q = "Q.mul_(0)\nscore = q @ k\n\ncheck_dot_score(score, q, k, Q, K)"


def test_after_given_data_were_zeroed_the_diagnoses_are_made_against_the_students_data():
    """r36c H11：1(一) 里 Q.mul_(0)。提醒说得对，但接下去按原来的数据下的诊断说的不是学生做了什么：
    0 像是“取了整”，einsum 算出的全 0 的 S 像是“循环没有写进去”。现在答案按学生手里的数据是对的，就说这个。"""
    solutions = tool.solutions()
    cells = _notebook({**solutions, "1a": ZEROED_Q,
                       "1b": "S = torch.einsum('id,jd->ij', Q, K)\n\ncheck_score_matrix(S, Q, K)"})
    got = _by_key(_grade(cells)[0])
    for key in ("1a", "1b"):
        message = got[key].message
        assert got[key].status == "wrong" and message.startswith("注意：你改动了题目给的"), message
        assert "按你手里改动过的数据算是对的" in message, message
        assert "取了整" not in message and "循环" not in message, message


def test_given_data_a_book_cell_computes_from_altered_data_are_traced_to_the_cell_that_altered_them():
    """同一个笔记本的 2(二)：scores 是题目自己的数据单元用清零的 Q 算出的。以前说“scores 是在代码单元 5
    里改动的”（那是书里给数据的单元，学生没有碰它）；现在说它是用哪个单元改动过的 Q 算出来的。"""
    cells = _notebook({**tool.solutions(), "1a": ZEROED_Q})
    anchor_1a = next(i for i, c in enumerate(cells) if _starter(c) == "1a")
    message = _by_key(_grade(cells)[0])["2b"].message
    assert "用已被改动的 Q" in message and f"Q 是在代码单元 {anchor_1a + 1} 里改动的" in message, message
    assert "分数没有参与计算" not in message, message


def test_given_data_changed_through_a_view_name_the_view():
    """r36c F5（K17）：4(二) 里 heads.mul_(2.0)，heads 是 x 的 view。以前只说“x 是在代码单元 11 里改动的”，
    那个单元却没有给 x 赋值；现在说它原地修改了 heads，那是 x 的 view。"""
    solutions = tool.solutions()
    cells = _notebook({**solutions, "4b": solutions["4b"].replace("check_mha_output",
                                                                    "heads.mul_(2.0)\ncheck_mha_output")})
    message = _by_key(_grade(cells)[0])["5b"].message
    assert "原地修改了 heads：那是 x 的 view" in message, message


def test_a_change_by_a_cell_that_never_names_the_answer_does_not_say_that_cell_changed_it():
    """r36c F2（H01、H24）：学生取得签名，让探针在最后一个单元之后交回编的值。那个单元的代码里没有 score：
    以前说“score 在代码单元 15 里被改动了”；现在只说批改程序读到的值在它运行之后变了，以及可能的原因。"""
    solutions = tool.solutions()
    cells = _notebook(solutions, last="globals().update({\"sc\" + \"ore\": 1.0})  # 冒充探针交回的编的值")
    got = _by_key(_grade(cells)[0])["1a"]
    assert got.status == "passed", got.message
    assert f"代码单元 {len(cells)} 运行之后，批改程序读到的 score 变了" in got.message, got.message
    assert "里被改动了" not in got.message
