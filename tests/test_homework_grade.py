"""批改程序 python -m minigpt.grade，用 tests/fixtures/submissions/ 里的样例提交（由同目录的 generate.py 生成）。

批改程序只跑一次（整个模块共用）：全部样例 + 一个不存在的文件，--timeout 4（死循环的那份 4 秒后被结束）。
每个测试核对一种情况的结果；提交文件在批改前后逐字节相同、修改时间不变。
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import REPO

SUBMISSIONS = REPO / "tests" / "fixtures" / "submissions"
TIMEOUT = 4
KEYS = ["1a", "1b", "2a", "2b", "3"]

_spec = importlib.util.spec_from_file_location("generate_submissions", SUBMISSIONS / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


def _fingerprint(paths):
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in paths}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    files = sorted(SUBMISSIONS.glob("*.ipynb"))
    before = _fingerprint(files)
    report = tmp_path_factory.mktemp("grade") / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "minigpt.grade", *map(str, files), str(SUBMISSIONS / generate.MISSING),
         "--json", str(report), "--timeout", str(TIMEOUT)],
        capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path_factory.mktemp("cwd"))
    data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else None
    by_name = {Path(s["path"]).name: s for s in data["submissions"]} if data else {}
    return proc, data, by_name, before, _fingerprint(files)


def _statuses(sub) -> dict[str, str]:
    return {k: sub["exercises"][k]["status"] for k in KEYS}


def _code_cell_of(name: str, key: str) -> int:
    """样例笔记本里第几个代码单元（从 1 数）是初始代码 key。"""
    nb = nbformat.read(SUBMISSIONS / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return next(i + 1 for i, c in enumerate(code) if f"hw-starter-{key}" in c.metadata.get("tags", []))


def test_committed_fixtures_are_what_the_generator_makes():
    expected = generate.build()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in SUBMISSIONS.glob("*.ipynb")}
    assert on_disk == expected, "样例提交已过期：运行 .venv/bin/python tests/fixtures/submissions/generate.py"
    assert not (SUBMISSIONS / generate.MISSING).exists()


def test_grader_exits_zero_and_reports_every_submission(graded):
    proc, data, by_name, _, _ = graded
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    expected = {p.name for p in SUBMISSIONS.glob("*.ipynb")} | {generate.MISSING}
    assert set(by_name) == expected
    assert data["timeout_seconds"] == TIMEOUT and [e["key"] for e in data["exercises"]] == KEYS


def test_submissions_are_never_modified(graded):
    _, _, _, before, after = graded
    assert before == after


def test_stdout_table_has_one_row_per_submission_with_each_exercise_status(graded):
    proc, _, by_name, _, _ = graded
    lines = proc.stdout.splitlines()
    header = next(line for line in lines if line.startswith("提交"))
    assert header.split() == ["提交", "1(一)", "1(二)", "2(一)", "2(二)", "3", "通过", "得分"]
    words = {"passed": "通过", "wrong": "答错", "not_attempted": "未作答", "error": "出错", "timeout": "超时"}
    for name, sub in by_name.items():
        row = next(line for line in lines if line.split() and line.split()[0] == name)
        assert row.split()[1:] == [words[s] for s in _statuses(sub).values()] + [
            f"{sub['passed']}/5", f"{sub['points']}/{sub['max_points']}"]


def test_correct_submission_passes_every_exercise(graded):
    sub = graded[2]["correct.ipynb"]
    assert _statuses(sub) == dict.fromkeys(KEYS, "passed") and sub["passed"] == 5
    assert all(e["message"].startswith("✔") for e in sub["exercises"].values())


def test_placeholders_are_not_attempted(graded):
    sub = graded[2]["placeholders.ipynb"]
    assert _statuses(sub) == dict.fromkeys(KEYS, "not_attempted")
    assert all("还没有填写" in e["message"] for e in sub["exercises"].values())


@pytest.mark.parametrize("name,key,phrase", [
    ("mistakes_identity.ipynb", "1a", "还没有求和"),
    ("mistakes_identity.ipynb", "1b", "转置"),
    ("mistakes_identity.ipynb", "2a", "torch.tril 而不是 torch.triu"),
    ("mistakes_identity.ipynb", "2b", "单位矩阵"),
    ("mistakes_identity.ipynb", "3", "漏了偏置"),
    ("mistakes_uniform.ipynb", "2b", "平均分配"),
    ("mistakes_unscaled.ipynb", "2b", "没有除以 √d_k"),
    ("mistakes_mask_after_softmax.ipynb", "2b", "先 softmax、再把未来位置乘 0"),
    ("types.ipynb", "3", "total_params 必须是整数"),
])
def test_typical_mistakes_are_wrong_with_the_checkers_message(graded, name, key, phrase):
    sub = graded[2][name]
    assert sub["exercises"][key]["status"] == "wrong"
    assert phrase in sub["exercises"][key]["message"]
    wrong = {key} if name != "mistakes_identity.ipynb" else set(KEYS)
    if name == "types.ipynb":
        wrong = {"3"}
    assert {k for k, s in _statuses(sub).items() if s != "passed"} == wrong


def test_numpy_and_python_number_answers_are_accepted(graded):
    sub = graded[2]["types.ipynb"]
    assert _statuses(sub) == {"1a": "passed", "1b": "passed", "2a": "passed", "2b": "passed", "3": "wrong"}


def test_redefined_checkers_and_changed_data_gain_nothing(graded):
    """cheat.ipynb 把 check_* 换成只打印“✔ 通过”的函数、把 Q、K、scores 改成全 0，答案与改过的数据自洽。"""
    sub = graded[2]["cheat.ipynb"]
    assert "✔ 作业" in (SUBMISSIONS / "cheat.ipynb").read_text(encoding="utf-8")
    assert _statuses(sub) == dict.fromkeys(KEYS, "wrong") and sub["passed"] == 0


@pytest.mark.parametrize("name,key,status,exception", [
    ("syntax_error.ipynb", "2b", "error", "SyntaxError"),
    ("sys_exit.ipynb", "3", "error", "SystemExit"),
    ("kernel_crash.ipynb", "1a", "error", "DeadKernelError"),
    ("infinite_loop.ipynb", "1b", "timeout", "CellTimeoutError"),
])
def test_broken_cells_get_their_own_status_and_the_rest_is_still_graded(graded, name, key, status, exception):
    sub = graded[2][name]
    result = sub["exercises"][key]
    assert (result["status"], result["exception"]) == (status, exception)
    assert result["cell"] == _code_cell_of(name, key)
    assert f"代码单元 {result['cell']}" in result["message"]
    others = {k: s for k, s in _statuses(sub).items() if k != key}
    assert set(others.values()) == {"passed"}, others


def test_deleted_answer_variables_are_not_attempted(graded):
    sub = graded[2]["deleted_answers.ipynb"]
    assert _statuses(sub) == dict.fromkeys(KEYS, "not_attempted")
    assert all("运行结束时没有变量" in e["message"] for e in sub["exercises"].values())


@pytest.mark.parametrize("name,exception,phrase", [
    ("invalid_json.ipynb", "JSONDecodeError", "不是有效的 JSON"),
    (generate.MISSING, "FileNotFoundError", "文件不存在"),
])
def test_unreadable_submissions_get_a_row(graded, name, exception, phrase):
    proc, _, by_name, _, _ = graded
    sub = by_name[name]
    assert sub["graded"] is False and phrase in sub["problem"]
    assert {e["status"] for e in sub["exercises"].values()} == {"error"}
    assert {e["exception"] for e in sub["exercises"].values()} == {exception}
    assert phrase in proc.stdout


def _run_grader(args, env_path, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = str(env_path)
    return subprocess.run([sys.executable, "-m", "minigpt.grade", *args], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)


def test_without_bubblewrap_the_grader_refuses_and_says_what_to_install(tmp_path):
    """PATH 上没有 bwrap（就像 macOS 或没装 bubblewrap 的 Linux）：拒绝运行提交，退出码非 0，没有表格。"""
    (tmp_path / "bin").mkdir()
    proc = _run_grader([str(SUBMISSIONS / "correct.ipynb")], tmp_path / "bin", tmp_path)
    assert proc.returncode == 2
    assert "拒绝运行提交" in proc.stderr and "apt-get install bubblewrap" in proc.stderr
    assert "--no-sandbox" in proc.stderr and "Traceback" not in proc.stderr
    assert "提交" not in proc.stdout


def test_a_sandbox_that_cannot_start_is_refused_with_its_reason(tmp_path):
    """bwrap 在，但建不了命名空间（这里用一个照样报错退出的假 bwrap）：同样拒绝，并转述 bwrap 的话。"""
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    proc = _run_grader([str(SUBMISSIONS / "correct.ipynb")], fake.parent, tmp_path)
    assert proc.returncode == 2
    assert "启动不了" in proc.stderr and "No permissions to create new namespace" in proc.stderr
    assert "提交" not in proc.stdout


def test_no_sandbox_runs_anyway_with_one_warning(tmp_path):
    (tmp_path / "bin").mkdir()
    proc = _run_grader([str(SUBMISSIONS / "invalid_json.ipynb"), str(SUBMISSIONS / generate.MISSING), "--no-sandbox"],
                       tmp_path / "bin", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("警告：--no-sandbox") == 1
    assert "invalid_json.ipynb" in proc.stdout and "没有在沙箱里运行" in proc.stdout
