"""换内核：上一个内核留下的东西不让已经对了的题丢分（教师试用报告 r36t 的 F3）。

两份提交都是正确的笔记本，末尾加两个单元：先留下东西，再让内核崩溃。批改要换新内核、重跑前面的单元。
- fork 出的进程占满进程数上限（256，按用户号计）：以前它们活到沙箱结束，新内核起不来，9 道题全成了“出错”。
  现在换内核之前先结束沙箱里的其余进程，等它们都没了再启动新内核：满分。
- 写满私有的 /tmp（--disk）：新内核确实起不来（导入时找不到能写的临时目录）。以前 9 道题全成了“出错”；
  现在按上一个内核里最后一次记下的答案判（崩溃之前的单元都运行过），并写明是哪个单元之后的答案。
"""

from __future__ import annotations

import copy

import nbformat
import pytest

from support.book import REPO
from support.hostile_cells import CRASH, FORK_BOMB

CORRECT = REPO / "tests" / "fixtures" / "submissions" / "correct.ipynb"


FILL_TMP = """\
import itertools
try:
    for i in itertools.count():
        with open(f"/tmp/fill{i}.bin", "wb") as f:
            f.write(bytes(8 * 2**20))
except OSError as err:
    print(i, err)"""


def _sandbox_or_skip():
    from minigpt.grading import sandbox

    reason = sandbox.unavailable()
    if reason:
        pytest.skip(f"这台机器上沙箱起不来：{reason}")


def _grade(tmp_path, *extra: str, **limits):
    from minigpt.grading import sandbox
    from minigpt.grading.judge import grade_submission

    nb = nbformat.read(CORRECT, as_version=4)
    nb = copy.deepcopy(nb)
    nb.cells += [nbformat.v4.new_code_cell(src) for src in extra]
    path = tmp_path / "student.ipynb"
    nbformat.write(nb, path)
    n_code = sum(c.cell_type == "code" for c in nb.cells)
    return grade_submission(path, sandbox.Limits(timeout=30, notebook_timeout=200, **limits)), n_code


@pytest.mark.kernel
def test_processes_left_by_a_crashed_kernel_are_ended_before_the_new_kernel_starts(tmp_path):
    _sandbox_or_skip()
    result, n_code = _grade(tmp_path, FORK_BOMB, CRASH)
    assert result.graded and not result.problem, result
    assert {e.key: e.status for e in result.exercises} == {e.key: "passed" for e in result.exercises}
    kinds = {p.cell: p.kind for p in result.cell_problems}
    assert kinds == {n_code: "crash"}, result.cell_problems


@pytest.mark.kernel
def test_when_no_new_kernel_can_start_the_answers_recorded_before_the_crash_are_judged(tmp_path):
    _sandbox_or_skip()
    result, n_code = _grade(tmp_path, FILL_TMP, CRASH, disk=64 * 2**20)
    assert result.graded and not result.problem, result
    assert {e.key: e.status for e in result.exercises} == {e.key: "passed" for e in result.exercises}
    # 新内核确实没起来（否则这个测试证明不了退路）：崩溃单元之外的单元都记为“没有运行”
    assert {p.kind for p in result.cell_problems if p.cell != n_code} == {"not_run"}
    assert any(f"代码单元 {n_code - 1} 运行完时记下的值" in note for note in result.notes), result.notes
