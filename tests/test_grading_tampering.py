"""学生的代码冒充探针的标记（教师试用报告 r36t 的 F2）。

标记 MINIGPT-GRADE-ANSWERS: 是公开的。以前批改程序取输出里最后一个标记：一个 post_run_cell 钩子在每个单元
（包括探针）之后打印一行假的标记，这份提交就成了“无法批改”，成绩册里空着（像是还没批改），而不是 0 分。
现在每次探针的标记带一个 runner 新取的随机数，固定的假标记不算数：这份提交照常批改。
"""

from __future__ import annotations

import copy

import nbformat
import pytest

from minigpt.answer_format import MARKER
from support.book import REPO

CORRECT = REPO / "tests" / "fixtures" / "submissions" / "correct.ipynb"

FORGE_HOOK = f"""\
get_ipython().events.register(
    "post_run_cell", lambda result: print("\\n{MARKER}" + '{{"score": {{"kind": "str", "value": "x"}}}}'))
score = 0"""


@pytest.mark.kernel
def test_a_hook_printing_the_public_marker_neither_blanks_the_grade_nor_changes_the_answers(tmp_path):
    from minigpt.grading import sandbox
    from minigpt.grading.judge import grade_submission
    from minigpt.grading.report import status_of

    reason = sandbox.unavailable()
    if reason:
        pytest.skip(f"这台机器上沙箱起不来：{reason}")
    nb = copy.deepcopy(nbformat.read(CORRECT, as_version=4))
    nb.cells.append(nbformat.v4.new_code_cell(FORGE_HOOK))
    path = tmp_path / "student.ipynb"
    nbformat.write(nb, path)
    result = grade_submission(path, sandbox.Limits(timeout=30, notebook_timeout=200))
    assert result.graded and not result.problem, result
    statuses = {e.key: e.status for e in result.exercises}
    # score = 0 是学生自己在最后一个单元改的（这道题的答案变量）：判的是它，不是钩子打印的假答案
    assert statuses == {**dict.fromkeys(statuses, "passed"), "1a": "wrong"}, result.exercises
    assert status_of(result).startswith("已批改")


# ---------------------------------------------------------------- 签了名的古怪答案、不回答的探针（r36c F1、F3）

FORGED_BATCH = ["hostile_forge_overflow_float", "hostile_forge_uint8_overflow",
                "hostile_forge_snapshot_int_overflow", "hostile_probe_target_hang", "correct"]


@pytest.fixture(scope="module")
def forged_batch(tmp_path_factory):
    """用命令行批改 r36c 让整批停下的三份笔记本（学生取得签名、签了装不下的数）、一份换上不回答的探针的，
    和一份正确的（排在最后：前面的出了事，它也要批改）。"""
    import json
    import os
    import shutil
    import subprocess
    import sys

    from minigpt.grading import sandbox

    reason = sandbox.unavailable()
    if reason:
        pytest.skip(f"这台机器上沙箱起不来：{reason}")
    folder = tmp_path_factory.mktemp("forged")
    for name in FORGED_BATCH:
        shutil.copy(REPO / "tests" / "fixtures" / "submissions" / f"{name}.ipynb", folder / f"{name}.ipynb")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "minigpt.grade", "--jobs", "2", "--json", "r.json", "--",
                           *[f"{n}.ipynb" for n in FORGED_BATCH]],
                          capture_output=True, text=True, env=env, cwd=folder, timeout=900)
    subs = json.loads((folder / "r.json").read_text(encoding="utf-8"))["submissions"]
    return proc, {s["path"].removesuffix(".ipynb"): s for s in subs}


@pytest.mark.kernel
def test_signed_answers_with_out_of_range_numbers_are_graded_and_the_batch_goes_on(forged_batch):
    """r36c F1：以前 H02、H03、H04 让批改程序抛 OverflowError / RuntimeError，整批停下，后面的不批改。现在每份
    都有结果，退出码 0，没有 Traceback；伪造的最终答案记“答案输出被改动过”（0 分），快照里的伪造只让
    快照不算数（最终答案是真的探针读的，照常判）。"""
    proc, subs = forged_batch
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert set(subs) == set(FORGED_BATCH)
    for name in ("hostile_forge_overflow_float", "hostile_forge_uint8_overflow"):
        assert subs[name]["graded"] and "答案输出被改动过" in subs[name]["problem"], subs[name]
        assert subs[name]["points"] == 0
    for name in ("hostile_forge_snapshot_int_overflow", "correct"):
        assert subs[name]["graded"] and {e["status"] for e in subs[name]["exercises"].values()} == {"passed"}


@pytest.mark.kernel
def test_a_probe_target_that_never_answers_is_said_to_give_no_answer_not_missing_variables(forged_batch):
    """r36c F3：学生换上一个永远不回答的探针。以前每道题都说“没有这个变量”（变量其实都在）；现在和探针被注销
    一样，说探针没有输出答案。"""
    _, subs = forged_batch
    sub = subs["hostile_probe_target_hang"]
    assert sub["graded"] and "探针没有输出答案" in sub["problem"], sub
    assert not any("没有变量" in e["message"] for e in sub["exercises"].values())


SHADOW_BUILTINS = """\
import builtins
builtins.isinstance = lambda *a, **k: True
builtins.len = lambda x: 0
builtins.repr = lambda x: 'forged'
builtins.__import__ = None"""


@pytest.mark.kernel
def test_a_kernel_hung_by_replaced_builtins_is_not_reported_as_a_slow_cell(tmp_path):
    """r36c F8（H05）：最后一个单元换掉内置函数，它自己一下子就运行完了，内核却再也不回到空闲。以前只说
    “运行超过 30 秒，已结束内核”，像是单元里的循环太慢；现在说出它换掉了内置函数、内核因此卡住。分数照旧。"""
    from minigpt.grading import sandbox
    from minigpt.grading.judge import grade_submission

    reason = sandbox.unavailable()
    if reason:
        pytest.skip(f"这台机器上沙箱起不来：{reason}")
    nb = copy.deepcopy(nbformat.read(CORRECT, as_version=4))
    nb.cells.append(nbformat.v4.new_code_cell(SHADOW_BUILTINS))
    path = tmp_path / "student.ipynb"
    nbformat.write(nb, path)
    result = grade_submission(path, sandbox.Limits(timeout=5, notebook_timeout=200))
    assert result.graded and {e.status for e in result.exercises} == {"passed"}, result.exercises
    last = [p for p in result.cell_problems if p.cell == len([c for c in nb.cells if c.cell_type == "code"])]
    assert len(last) == 1 and last[0].kind == "timeout", result.cell_problems
    assert "换掉了内置函数（builtins）" in last[0].message and "内核因此卡住" in last[0].message
