"""批改程序用线程同时批改几份提交（--jobs）：一份的判分不能改动另一份的题目数据，也不能换掉批改表要用的标准输出。

这里不启动内核，也不用沙箱：把 sandbox.run 换成直接交回“答案全对”的结果，只考判分这一步。
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from minigpt import answer_format as answers
from minigpt.grading import judge, sandbox
from minigpt.homework import EXERCISES, exercise_inputs

CORRECT = Path(__file__).parent / "fixtures" / "submissions" / "correct.ipynb"


def _right_answers() -> dict:
    x = exercise_inputs()
    mask = torch.tril(torch.ones(x["seq_len"], x["seq_len"]))
    h, d_ff = x["hidden_size"], x["d_ff"]
    return {"score": (x["q"] * x["k"]).sum(), "S": x["Q"] @ x["K"].T, "mask": mask,
            "weights": torch.softmax(x["scores"].masked_fill(mask == 0, float("-inf")), dim=-1),
            "w1_params": h * d_ff + d_ff, "w2_params": d_ff * h + h,
            "total_params": 2 * h * d_ff + d_ff + h,
            "heads": x["x"].view(1, 3, 2, 4).transpose(1, 2), "merged": x["x"],
            "attn_out": x["mha"](x["x"], mask), "block_out": x["block"](x["x"], mask),
            "ln_out": torch.nn.functional.layer_norm(x["h"], (8,), x["gamma"], x["beta"], x["eps"])}


@pytest.fixture
def sandbox_says_all_right(monkeypatch):
    """sandbox.run 交回 runner 会交回的那一行：全部答案正确、没有单元出问题。"""
    namespace = _right_answers()
    assert set(namespace) == set(judge.ANSWER_NAMES)
    given = exercise_inputs()
    namespace.update({name: given[name] for name in judge.GIVEN_TRACKED})  # 题目给的数据，学生没动过
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        exec(answers.probe_source(judge.TRACKED_NAMES), namespace)
    raw = answers.parse_json(answers.answers_from_output(sink.getvalue()))
    line = json.dumps({"answers": raw, "problems": [], "leftover": 0}).encode()
    monkeypatch.setattr(judge.sandbox, "run",
                        lambda *a, **k: sandbox.RunOutcome(returncode=0, stdout=line, stderr=""))


def _passed(result) -> bool:
    return result.graded and all(e.status == "passed" for e in result.exercises)


def test_a_right_submission_passes_every_exercise(sandbox_says_all_right):
    result = judge.grade_submission(CORRECT, sandboxed=False)
    assert _passed(result), [(e.key, e.status, e.message) for e in result.exercises]


def test_judging_holds_the_lock_that_guards_the_global_rng_and_stdout(sandbox_says_all_right, monkeypatch):
    """题目数据靠 torch.manual_seed(42) 和全局随机数造出来，检查器在 redirect_stdout 里跑：两样都只能在锁里做。"""
    held = []
    real_inputs, real_judge = judge.exercise_inputs, judge.judge_exercise
    monkeypatch.setattr(judge, "exercise_inputs",
                        lambda: (held.append(judge.JUDGE_LOCK.locked()), real_inputs())[1])
    monkeypatch.setattr(judge, "judge_exercise",
                        lambda *a: (held.append(judge.JUDGE_LOCK.locked()), real_judge(*a))[1])
    assert _passed(judge.grade_submission(CORRECT, sandboxed=False))
    assert held == [True] * (1 + len(EXERCISES))
    assert not judge.JUDGE_LOCK.locked()


def test_many_right_submissions_graded_at_once_all_pass_and_stdout_survives(sandbox_says_all_right):
    """没有锁时，这样并行批改会有几份对的提交被判错（题目数据被另一线程的取数打乱），
    sys.stdout 也可能停在某个线程的 StringIO 上，批改表就打印不出来。"""
    stdout = sys.stdout
    start = threading.Barrier(4)

    def one(_):
        start.wait()
        return [_passed(judge.grade_submission(CORRECT, sandboxed=False)) for _ in range(25)]

    with ThreadPoolExecutor(4) as pool:
        outcomes = [ok for batch in pool.map(one, range(4)) for ok in batch]
    assert outcomes == [True] * 100
    assert sys.stdout is stdout
