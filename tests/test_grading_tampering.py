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
