"""批改环境的问题不算在学生头上（minigpt.grading.environment，见「教师指南」的「批改」一节）。

CUDA 版的 PyTorch 在这台机器上装不了（也不该下载），它的症状——内核在给定的内存上限下连 ``import torch``
都做不完——用一个很小的 ``--memory`` 造出来：那时每份提交都“出错”，校准笔记本也运行不了，
于是这些提交在 CSV 里留空、状态写明是批改环境的问题，批改程序以 2 退出。
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from support.book import REPO
from minigpt.grading import environment, sandbox
from minigpt.grading.results import ExerciseResult, Problem, SubmissionResult
from minigpt.homework import EXERCISES

SUBMISSIONS = REPO / "tests" / "fixtures" / "submissions"
TINY_MEMORY = "0.25"   # GiB：内核里 import torch 就超出地址空间上限


def test_a_cuda_build_is_named_with_the_cpu_install_command_and_a_memory_that_works(monkeypatch):
    monkeypatch.setattr(environment, "torch_build", lambda: ("2.13.0+cu126", "12.6"))
    tried = []

    def calibrate(limits, sandboxed):
        tried.append(limits.memory)
        return "内核起不来" if limits.memory <= 2 * 2**30 else None

    monkeypatch.setattr(environment, "calibrate", calibrate)
    message = environment.setup_problem(sandbox.Limits(), True)
    assert tried == [2 * 2**30, 8 * 2**30]
    assert "CUDA 版（torch 2.13.0+cu126，CUDA 12.6）" in message
    assert "pip uninstall torch" in message
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in message
    assert "--memory 8 时可以运行" in message and "留空" in message


def test_a_working_installation_is_not_blamed(monkeypatch):
    monkeypatch.setattr(environment, "calibrate", lambda limits, sandboxed: None)
    assert environment.setup_problem(sandbox.Limits(), True) is None


def _result(kind: str) -> SubmissionResult:
    return SubmissionResult("s.ipynb", graded=True, sha256="abc",
                            exercises=[ExerciseResult(e.key, e.title, "error", "x") for e in EXERCISES],
                            cell_problems=[Problem(3, kind, "MemoryError", "超出内存上限")])


def test_only_suspect_problems_trigger_one_calibration_and_the_verdict_is_shared(monkeypatch):
    calls = []
    monkeypatch.setattr(environment, "setup_problem", lambda limits, sandboxed: calls.append(1) or "环境坏了")
    check = environment.SetupCheck(sandbox.Limits(), True)
    plain = check.blame(_result("error"))          # 学生自己的异常：不查环境
    assert plain.graded and calls == []
    first, second = check.blame(_result("limit")), check.blame(_result("crash"))
    assert calls == [1]
    for r in (first, second):
        assert not r.graded and r.problem == "环境坏了" and r.sha256 == ""
        assert environment.SETUP_NOTE in r.notes
        assert {e.status for e in r.exercises} == {"error"}


def test_a_student_who_hits_a_limit_on_a_working_installation_keeps_the_grade(monkeypatch):
    monkeypatch.setattr(environment, "setup_problem", lambda limits, sandboxed: None)
    r = environment.SetupCheck(sandbox.Limits(), True).blame(_result("limit"))
    assert r.graded and r.sha256 == "abc"


@pytest.mark.kernel
def test_an_installation_that_cannot_run_torch_leaves_the_rows_blank_and_says_why(tmp_path):
    reason = sandbox.unavailable()
    if reason:
        pytest.skip(f"这台机器上沙箱起不来：{reason}")
    files = [SUBMISSIONS / "correct.ipynb", SUBMISSIONS / "placeholders.ipynb"]
    gradebook, report = tmp_path / "grades.csv", tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "minigpt.grade", *map(str, files), "--memory", TINY_MEMORY,
                           "--csv", str(gradebook), "--json", str(report), "--jobs", "2"],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "批改环境的问题，不是学生的" in proc.stderr and f"--memory {TINY_MEMORY} GiB" in proc.stderr
    rows = list(csv.reader(io.StringIO(gradebook.read_text(encoding="utf-8-sig"))))
    assert [r[0] for r in rows[1:]] == ["correct", "placeholders"]
    for row in rows[1:]:
        assert row[1:-1] == [""] * (len(EXERCISES) + 1), row     # 各小题与总分留空，不是 0
        assert row[-1].startswith("无法批改：批改环境的问题"), row[-1]
        assert "碰到资源上限" not in row[-1]
    data = json.loads(report.read_text(encoding="utf-8"))
    assert all(not s["graded"] and s["sha256"] == "" for s in data["submissions"])
