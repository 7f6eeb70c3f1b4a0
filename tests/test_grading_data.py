"""批改程序不启动内核的部分：答案的纯数据格式（探针写、批改程序核对着读）、沙箱的命令行、报告的读写。

探针在这里直接对一个字典执行（和它在学生内核里对 globals() 做的一样），不用内核。
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from minigpt import answer_format as answers
from minigpt.grading import report, sandbox
from minigpt.answer_format import MISSING, AnswerFileError, decode_answers, parse_json
from minigpt.grading.results import ExerciseResult, SubmissionResult
from minigpt.homework import EXERCISES


def _probe(namespace: dict, names: list[str]) -> bytes:
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        exec(answers.probe_source(names), namespace)
    return answers.answers_from_output(sink.getvalue())


def test_probe_is_immune_to_student_variables_named_like_builtins():
    """学生的 min = …、list = …、print = …、globals = … 不影响探针：它从 builtins 取内置函数。"""
    ns = {"S": torch.tensor([[1.0, 2.0]]), "L": [1, (2, 3.5)], "min": torch.tensor(0.5), "list": [1, 2],
          "str": "the cat sat", "type": "causal", "len": 3, "isinstance": None, "tuple": (), "repr": 1,
          "abs": 2, "int": 0, "float": 0.0, "bool": 1, "Exception": ValueError, "Ellipsis": 0,
          "print": lambda *a, **k: None, "globals": lambda: {"S": 0}}
    got = decode_answers(parse_json(_probe(ns, ["S", "L", "gone"])), ["S", "L", "gone"])
    assert torch.equal(got["S"], ns["S"]) and got["L"] == [1, (2, 3.5)] and got["gone"] is MISSING


def test_probe_output_round_trips_tensors_numbers_lists_and_numpy():
    ns = {"t": torch.tensor([[1.5, -2.0], [0.25, 3.0]]), "i": 7, "f": 0.1, "b": True, "n": None,
          "e": ..., "arr": np.tril(np.ones((2, 2), dtype=bool)), "np_int": np.int64(5),
          "lst": [1, 2.5], "s": "文字", "big": torch.zeros(100, 100), "obj": object()}
    names = sorted(ns) + ["gone"]
    got = decode_answers(parse_json(_probe(dict(ns), names)), names)
    assert torch.equal(got["t"], ns["t"]) and got["t"].dtype == torch.float32
    assert got["i"] == 7 and type(got["i"]) is int and got["f"] == 0.1 and got["b"] is True
    assert got["n"] is None and got["e"] is Ellipsis and got["gone"] is MISSING
    assert torch.equal(got["arr"], torch.tensor([[True, False], [True, True]]))
    assert got["np_int"] == 5 and got["lst"] == [1, 2.5] and got["s"] == "文字"
    # 太大的张量和别的对象：用一个同名的替身，检查器会说“收到的是 Tensor / object”
    assert type(got["big"]).__name__ == "Tensor" and not isinstance(got["big"], torch.Tensor)
    assert "形状 (100, 100)" in repr(got["big"]) and type(got["obj"]).__name__ == "object"


@pytest.mark.parametrize("item", [
    {"kind": "pickle", "data": "gASVAAAA"},
    {"kind": "tensor", "dtype": "float32", "shape": [2, 2], "data": [1.0, 2.0, 3.0]},
    {"kind": "tensor", "dtype": "complex64", "shape": [1], "data": [1.0]},
    {"kind": "tensor", "dtype": "int64", "shape": [1], "data": [1.5]},
    {"kind": "tensor", "dtype": "float32", "shape": [10**9], "data": []},
    {"kind": "int", "value": "7"},
    {"kind": "int", "value": 2**70},
    {"kind": "opaque", "type": "__import__('os')", "repr": "x"},
    {"kind": "list", "items": "abc"},
    "passed",
    None,
])
def test_forged_answer_items_are_refused(item):
    with pytest.raises(AnswerFileError):
        decode_answers({"score": item}, ["score"])


# 签名对得上、数却装不下的答案（r36c F1：学生挖出密钥自己签的 H02、H03、H04）：以前 float()、torch.tensor
# 抛 OverflowError / RuntimeError，整批批改停下
OUT_OF_RANGE = [
    {"kind": "float", "value": 10**400},
    {"kind": "tensor", "dtype": "uint8", "shape": [1], "data": [300]},
    {"kind": "tensor", "dtype": "int8", "shape": [1], "data": [-129]},
    {"kind": "tensor", "dtype": "int64", "shape": [1], "data": [2**70]},
    {"kind": "tensor", "dtype": "float32", "shape": [1], "data": [10**400]},
    {"kind": "list", "items": [{"kind": "float", "value": -10**400}]},
    {"kind": "module", "type": "MultiheadAttention",
     "state": {"w": {"kind": "tensor", "dtype": "int32", "shape": [1], "data": [2**40]}}},
]


@pytest.mark.parametrize("item", OUT_OF_RANGE)
def test_signed_answers_with_out_of_range_numbers_are_refused_not_raised(item):
    with pytest.raises(AnswerFileError):
        decode_answers({"score": item}, ["score"])
    with pytest.raises(AnswerFileError):
        answers.decode_answer(item)


def test_any_unexpected_error_while_decoding_becomes_an_answer_file_error(monkeypatch):
    """还原答案时出的、上面没有想到的错（这里让 torch.tensor 抛 MemoryError）也只是“答案不合格”。"""
    def boom(*args, **kwargs):
        raise MemoryError("no")

    monkeypatch.setattr(torch, "tensor", boom)
    with pytest.raises(AnswerFileError, match="MemoryError"):
        decode_answers({"score": {"kind": "tensor", "dtype": "float32", "shape": [1], "data": [1.0]}},
                       ["score"])


def test_answers_with_other_names_or_not_json_are_refused():
    with pytest.raises(AnswerFileError):
        decode_answers({"score": {"kind": "int", "value": 1}, "status": "passed"}, ["score"])
    with pytest.raises(AnswerFileError):
        parse_json(b"\x80\x04\x95")   # pickle 的开头
    with pytest.raises(AnswerFileError):
        answers.answers_from_output("学生自己打印的东西")


def test_answers_over_1_mb_are_refused_before_parsing():
    text = answers.MARKER + "[" + " " * answers.MAX_ANSWER_BYTES + "]"
    with pytest.raises(AnswerFileError, match="超过上限"):
        answers.answers_from_output(text)


def test_the_sandbox_mounts_nothing_writable_from_the_host():
    cmd = sandbox.bwrap_command(sandbox.Limits(), as_root=True)
    assert "--bind" not in cmd and "--bind-try" not in cmd        # 只有 --ro-bind 和 tmpfs
    assert {"--unshare-net", "--unshare-pid", "--clearenv", "--die-with-parent"} <= set(cmd)
    binds = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--ro-bind"]
    cwd = str(Path.cwd().resolve())
    assert cwd not in binds and os.path.expanduser("~") not in binds
    names = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--setenv"]
    assert not set(names) & {"PYTHONPATH", "JUPYTER_PATH", "SSH_AUTH_SOCK", "PWD"}


def _result(name: str, statuses: list[str]) -> SubmissionResult:
    return SubmissionResult(f"/subs/{name}.ipynb", True, sha256="ab" * 32, exercises=[
        ExerciseResult(e.key, e.title, s) for e, s in zip(EXERCISES, statuses)])


def test_report_json_is_read_back_for_resume_and_a_foreign_file_is_refused(tmp_path):
    rows = [_result("2024001", ["passed"] * len(EXERCISES)), _result("2024002", ["wrong"] * len(EXERCISES))]
    path = tmp_path / "r.json"
    report.write_json(path, rows, {"timeout_seconds": 30})
    back = report.read_json(path)
    assert [r.to_json() for r in back.values()] == [r.to_json() for r in rows]
    assert list(back) == [("2024001.ipynb", "ab" * 32), ("2024002.ipynb", "ab" * 32)]
    assert not list(tmp_path.glob(".r.json.*"))   # 原子写：临时文件改名后不留下
    path.write_text(json.dumps({"submissions": [{"path": "x"}]}), encoding="utf-8")
    with pytest.raises(ValueError, match="不能用 --resume"):
        report.read_json(path)


def test_points_are_summed_per_sub_exercise():
    r = _result("2024003", ["passed", "wrong", "passed", "passed", "not_attempted"])
    want = EXERCISES[0].points + EXERCISES[2].points + EXERCISES[3].points
    assert r.points == want and r.student_id == "2024003"
    assert str(want) in report.to_csv([r]).splitlines()[1].split(",")


def test_the_teachers_guide_states_the_file_count_limit_of_the_sandbox():
    from minigpt.grading import runner

    page = (Path(__file__).resolve().parents[1] / "book" / "teacher_guide.md").read_text(encoding="utf-8")
    assert f"私有 `/tmp` 里的文件和文件夹最多 {runner.MAX_FILES} 个" in page
    assert runner.LIMIT_TEXT["files"] == "超出文件数上限" and "超出文件数上限" in page


def test_a_printed_marker_without_the_runs_nonce_is_ignored_and_a_second_one_with_it_is_refused():
    """批改时标记后面跟着 runner 这次取的随机数：学生打印的固定标记 MINIGPT-GRADE-ANSWERS:… 冒充不了探针；
    带这个随机数的行多于一行，就是输出被改动过。"""
    nonce = answers.new_nonce()
    real = f'\n{answers.MARKER}{nonce}:{{"score": {{"kind": "int", "value": 1}}}}\n'
    forged = f'\n{answers.MARKER}{{"score": {{"kind": "int", "value": 2}}}}\n'
    assert answers.answers_from_output(real + forged, nonce) == b'{"score": {"kind": "int", "value": 1}}'
    with pytest.raises(AnswerFileError, match="探针没有输出答案"):
        answers.answers_from_output(forged, nonce)
    with pytest.raises(AnswerFileError, match="出现了 2 次"):
        answers.answers_from_output(real + real, nonce)
    assert answers.new_nonce() != nonce


def test_the_probe_reads_any_tensor_layout_and_an_unreadable_value_spoils_only_its_own_variable():
    """r36b F3：稀疏的 mask 让旧探针整个出错，9 道题全成 0 分，还被说成“答案输出被改动过”。"""
    class Raising(torch.Tensor):
        @classmethod
        def __torch_function__(cls, *args, **kwargs):
            raise RuntimeError("学生的子类")

    class Odd:
        __module__ = "numpy"            # 装成 numpy 的对象，一读 dtype 就出错

        @property
        def dtype(self):
            raise ValueError("读不得")

    dense = torch.tril(torch.ones(3, 3))
    ns = {"coo": dense.to_sparse(), "csr": dense.to_sparse_csr(), "t": torch.arange(6.0).reshape(2, 3).t(),
          "sub": dense.clone().as_subclass(Raising), "odd": Odd(), "ok": torch.tensor(2.5)}
    names = sorted(ns)
    got = decode_answers(parse_json(_probe(dict(ns), names)), names)
    for name in ("coo", "csr", "sub"):
        assert type(got[name]) is torch.Tensor and torch.equal(got[name], dense), name
    assert torch.equal(got["t"], torch.arange(6.0).reshape(2, 3).t())
    assert type(got["odd"]).__name__ == "Odd" and "ValueError" in repr(got["odd"])
    assert torch.equal(got["ok"], torch.tensor(2.5))


def test_kernel_probe_output_counts_only_with_the_runs_key_and_nonce():
    """批改用的探针输出带 HMAC：没有密钥写不出算数的答案，旧的（别的 nonce 的）答案也不能重放。"""
    import hashlib
    import hmac

    key, nonce = "ab" * 32, "n1"

    def line(k, n, answers_):
        payload = json.dumps({"nonce": n, "answers": answers_})
        mac = hmac.new(bytes.fromhex(k), payload.encode(), hashlib.sha256).hexdigest()
        return "\n" + answers.KERNEL_MARKER + mac + ":" + payload + "\n"

    real = line(key, nonce, {"score": {"kind": "int", "value": 1}})
    forged = line("cd" * 32, nonce, {"score": {"kind": "int", "value": 2}})
    replayed = line(key, "n0", {"score": {"kind": "int", "value": 3}})
    assert json.loads(answers.signed_answers(forged + replayed + real, key, nonce)) == {
        "score": {"kind": "int", "value": 1}}
    for text in (forged, replayed, forged + replayed):
        with pytest.raises(AnswerFileError, match="核验"):
            answers.signed_answers(text, key, nonce)
    with pytest.raises(AnswerFileError, match="没有输出"):
        answers.signed_answers("学生打印的东西", key, nonce)
