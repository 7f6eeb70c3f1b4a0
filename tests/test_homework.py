"""作业检查器：和由输入重新算出的正确答案比较；典型错误各有对应的提示，且提示里不出现正确的数值；
任何奇怪的输入都只得到 HomeworkWrong / HomeworkNotFilled（中文说明），不会有别的异常从检查器里冒出来。"""

import math

import numpy as np
import pytest
import torch

from minigpt.homework import (
    EXERCISES, TOLERANCE, HomeworkNotFilled, HomeworkWrong, check_causal_mask, check_dot_score,
    check_ffn_params, check_masked_weights, check_score_matrix, exercise_inputs,
)

q = torch.tensor([1.0, -2.0, 0.5, 3.0])
k = torch.tensor([0.5, 1.0, -1.0, 2.0])
Q = torch.tensor([[1.0, 0.0, 2.0, -1.0], [0.5, 1.0, -1.0, 0.0], [2.0, -1.0, 0.0, 1.0]])
K = torch.tensor([[0.0, 1.0, 1.0, 2.0], [1.0, 1.0, 0.0, -1.0], [-1.0, 0.5, 2.0, 0.0]])
D_K = 4
SCORES = torch.randn(4, 4, generator=torch.Generator().manual_seed(0))  # 当作缩放后的分数
TRIL = torch.tril(torch.ones(4, 4))


def _weights(scores=SCORES):
    return torch.softmax(scores.masked_fill(TRIL == 0, float("-inf")), dim=-1)


def _no_number_of(message: str, truth: torch.Tensor) -> None:
    """提示里不能出现正确答案的任何一个元素（按常见的几种小数位数格式化）。"""
    for value in truth.flatten().tolist():
        if abs(value) < 1e-9 or value == 1.0:
            continue  # 0 和 1 在说明文字里处处可见（“每行加起来等于 1”），不算泄露
        for fmt in ("{:.2f}", "{:.3f}", "{:.4f}", "{:.6f}"):
            assert fmt.format(value) not in message, f"提示泄露了正确值 {value}: {message}"


def test_exceptions_are_assertion_errors():
    assert issubclass(HomeworkNotFilled, AssertionError) and issubclass(HomeworkWrong, AssertionError)


# ---------------------------------------------------------------- 作业 1

def test_dot_score_accepts_tensor_float_and_numpy(capsys):
    msg = check_dot_score((q * k).sum(), q, k)
    assert msg.startswith("✔ 作业 1 通过") and "✔ 作业 1 通过" in capsys.readouterr().out
    check_dot_score(float((q * k).sum()), q, k)
    check_dot_score(np.float64((q * k).sum()), q, k)
    check_dot_score(q.double() @ k.double(), q, k)


def test_dot_score_tolerance_is_the_stated_one():
    truth = float((q * k).sum())
    inside = truth + 0.5 * (TOLERANCE["atol"] + TOLERANCE["rtol"] * abs(truth))
    outside = truth + 2 * (TOLERANCE["atol"] + TOLERANCE["rtol"] * abs(truth))
    check_dot_score(inside, q, k)
    with pytest.raises(HomeworkWrong, match="容差"):
        check_dot_score(outside, q, k)


@pytest.mark.parametrize("answer,pattern", [
    (None, "score 还没有填写"),
    (q * k, "还没有求和"),
    (torch.outer(q, k), "外积"),
    (q[None] @ k[:, None], r"形状 \(1, 1\).*标量"),
    ((q * k).sum() / 2, "√d_k"),
    (q.sum() * k.sum(), "先各自求和再相乘"),
    ((q * q).sum(), "q 和自己"),
    ((q - k).pow(2).sum(), "距离"),
    (1.0, "不相等"),
])
def test_dot_score_rejects_typical_mistakes_without_revealing_the_answer(answer, pattern):
    with pytest.raises(AssertionError, match=pattern) as info:
        check_dot_score(answer, q, k)
    assert isinstance(info.value, HomeworkNotFilled if answer is None else HomeworkWrong)
    _no_number_of(str(info.value), (q * k).sum())


def test_score_matrix_accepts_q_kt():
    assert check_score_matrix(Q @ K.T, Q, K).startswith("✔ 作业 1 通过")
    check_score_matrix((Q @ K.T).numpy(), Q, K)


@pytest.mark.parametrize("answer,pattern", [
    (None, "S 还没有填写"),
    (K @ Q.T, "转置"),
    (Q.T @ K, r"应该是 \(3, 3\).*收到 \(4, 4\).*Q\.T @ K"),
    (Q * K, "逐元素相乘"),
    (Q @ K.T / 2, "√d_k"),
])
def test_score_matrix_rejects_typical_mistakes_without_revealing_the_answer(answer, pattern):
    with pytest.raises(AssertionError, match=pattern) as info:
        check_score_matrix(answer, Q, K)
    _no_number_of(str(info.value), Q @ K.T)


def test_score_matrix_names_the_wrong_cell_but_not_its_value():
    S = Q @ K.T
    S[1, 2] += 1
    with pytest.raises(HomeworkWrong, match="第 1 行第 2 列") as info:
        check_score_matrix(S, Q, K)
    _no_number_of(str(info.value), Q @ K.T)


# ---------------------------------------------------------------- 作业 2（一）

@pytest.mark.parametrize("mask", [
    torch.tril(torch.ones(4, 4)), torch.tril(torch.ones(4, 4)).bool(), torch.tril(torch.ones(4, 4, dtype=torch.int64)),
    [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], np.tril(np.ones((4, 4), dtype=bool)),
])
def test_causal_mask_accepts_lower_triangular(mask):
    assert check_causal_mask(mask, 4).startswith("✔ 作业 2 通过")
    check_causal_mask(mask, np.int64(4))
    check_causal_mask(mask, torch.tensor(4))


@pytest.mark.parametrize("mask,pattern", [
    (None, "mask 还没有填写"),
    (torch.triu(torch.ones(4, 4)), "转置"),
    (torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1), "含义反了"),
    (torch.ones(4, 4), "什么都没有遮住"),
    (torch.tril(torch.ones(4, 4), diagonal=-1), "对角线"),
    (torch.eye(4), "单位矩阵"),
    (torch.tril(torch.ones(3, 3)), r"应该是 \(4, 4\).*收到 \(3, 3\)"),
    (torch.zeros(4, 4).masked_fill(TRIL == 0, float("-inf")), "加性"),
    (torch.tril(torch.ones(4, 4)) * 2, "只能是 0 和 1"),
    (torch.full((4, 4), float("nan")), "NaN"),
])
def test_causal_mask_rejects_typical_mistakes(mask, pattern):
    with pytest.raises(AssertionError, match=pattern):
        check_causal_mask(mask, 4)


# ---------------------------------------------------------------- 作业 2（二）

def test_masked_weights_accepts_the_weights_recomputed_from_the_scores(capsys):
    assert check_masked_weights(_weights(), SCORES, D_K).startswith("✔ 作业 2 通过")
    check_masked_weights(_weights().double(), SCORES)
    check_masked_weights(_weights().numpy(), SCORES.numpy(), np.int64(D_K))
    # 学生把遮蔽后的分数当作 scores 传进来，正确答案不变
    check_masked_weights(_weights(), SCORES.masked_fill(TRIL == 0, float("-inf")), D_K)
    # 先 softmax、遮蔽、再按行重新归一化，数学上与正确做法相同，也算对
    p = torch.softmax(SCORES, dim=-1) * TRIL
    check_masked_weights(p / p.sum(dim=-1, keepdim=True), SCORES, D_K)


def test_masked_weights_is_compared_with_the_truth_not_only_its_properties():
    # 性质都对（下三角、每行和为 1、非负），数值却不是这组 scores 的：必须不通过
    other = _weights(torch.randn(4, 4, generator=torch.Generator().manual_seed(1)))
    with pytest.raises(HomeworkWrong, match="数值与由 scores 算出的权重不一致"):
        check_masked_weights(other, SCORES, D_K)


@pytest.mark.parametrize("make,pattern", [
    (lambda s: torch.eye(4), "单位矩阵"),
    (lambda s: TRIL / TRIL.sum(dim=-1, keepdim=True), "平均分配"),
    (lambda s: torch.softmax((s * math.sqrt(D_K)).masked_fill(TRIL == 0, float("-inf")), dim=-1), "没有除以 √d_k"),
    (lambda s: torch.softmax((s / math.sqrt(D_K)).masked_fill(TRIL == 0, float("-inf")), dim=-1), "又除了一次"),
    (lambda s: torch.softmax(s, dim=-1) * TRIL, "先 softmax、再把未来位置乘 0"),
    (lambda s: torch.softmax(s, dim=-1).masked_fill(TRIL == 0, 0.0), "先 softmax、再把未来位置乘 0"),
    (lambda s: torch.softmax(s, dim=-1).masked_fill(TRIL == 0, float("-inf")), "-inf"),
    (lambda s: torch.softmax(s, dim=-1), "没有遮蔽"),
    (lambda s: torch.softmax(s.masked_fill(TRIL == 0, 0.0), dim=-1), "填成了 0 而不是 -inf"),
    (lambda s: torch.softmax(s.masked_fill(TRIL == 0, float("-inf")), dim=0), "错误的维度"),
    (lambda s: torch.softmax(s.masked_fill(TRIL.T == 0, float("-inf")), dim=-1), "上三角"),
    (lambda s: torch.softmax(s.masked_fill(torch.tril(TRIL, -1) == 0, float("-inf")), dim=-1), "NaN"),
])
def test_masked_weights_names_each_typical_mistake_without_revealing_the_answer(make, pattern):
    with pytest.raises(HomeworkWrong, match=pattern) as info:
        check_masked_weights(make(SCORES), SCORES, D_K)
    _no_number_of(str(info.value), _weights())


# ---------------------------------------------------------------- 作业 3

def test_ffn_params_accepts_the_right_answer_as_any_integer_type(capsys):
    msg = check_ffn_params(2048 * 512 + 2048, 512 * 2048 + 512, 2_099_712)
    assert msg.startswith("✔ 作业 3 通过") and "2,099,712" in capsys.readouterr().out
    check_ffn_params(np.int64(1_050_624), np.int32(1_049_088), np.array(2_099_712))
    check_ffn_params(torch.tensor(1_050_624), torch.tensor(1_049_088, dtype=torch.int32), 2_099_712)
    h, f = 8, 32
    check_ffn_params(f * h + f, h * f + h, 2 * h * f + h + f, hidden_size=h, d_ff=f)


@pytest.mark.parametrize("w1,w2,total,pattern", [
    (None, 1_049_088, 2_099_712, r"^w1_params 还没有填写"),
    (None, None, None, "w1_params、w2_params、total_params 还没有填写"),
    (1_050_624, 1_049_088, None, r"^total_params 还没有填写"),
    (2048 * 512, 512 * 2048, 2 * 512 * 2048, "w1_params.*漏了偏置"),
    (1_050_624, 512 * 2048, 1_050_624 + 512 * 2048, "w2_params.*漏了偏置"),
    (2048 * 512 + 512, 1_049_088, 2_099_712, "偏置个数"),
    (2048 + 512, 1_049_088, 2_099_712, "乘，不是加"),
    (1_050_624, 1_049_088, 2 * 512 * 2048, "总数漏了偏置"),
    (1_050_624, 1_049_088, 2 * 512 * 2048 + 2048, "只算了一层的偏置"),
    (1_050_624, 1_049_088, 123, "不等于 w1_params \\+ w2_params"),
    (1_050_624.0, 1_049_088, 2_099_712, "w1_params 必须是整数"),
    (1_050_624, 1_049_088, np.float64(2_099_712.0), "total_params 必须是整数"),
    (torch.tensor(1_050_624.0), 1_049_088, 2_099_712, "w1_params 必须是整数"),
    (True, 1_049_088, 2_099_712, "布尔"),
    ("一百万", 1_049_088, 2_099_712, "收到的是 str"),
    (torch.tensor([1_050_624]), 1_049_088, 2_099_712, r"形状 \(1,\)"),
])
def test_ffn_params_rejects_typical_mistakes_without_revealing_the_answer(w1, w2, total, pattern):
    with pytest.raises(AssertionError, match=pattern) as info:
        check_ffn_params(w1, w2, total)
    assert isinstance(info.value, HomeworkNotFilled if None in (w1, w2, total) else HomeworkWrong)
    message = str(info.value)
    for right in (1_050_624, 1_049_088, 2_099_712):
        if right not in (w1, w2, total):  # 学生自己填对的数可以出现在提示里
            assert f"{right:,}" not in message and str(right) not in message, message


# ---------------------------------------------------------------- 奇怪的输入：只有中文的 HomeworkWrong

class _Weird:
    def __repr__(self):
        raise RuntimeError("repr 也坏了")


BAD_VALUES = [
    "abc", b"x", {"a": 1}, {1, 2}, object(), _Weird(), print, [1, "a"], [[1, 2], [3]],
    float("nan"), torch.tensor(float("nan")), torch.full((4, 4), float("nan")),
    torch.empty(4, 4, device="meta"), torch.zeros(4, 4, dtype=torch.complex64),
    torch.ones(4, 4, dtype=torch.int64), torch.ones(4, 4, dtype=torch.bool), torch.ones(4, 4).half(),
    torch.ones(2, 3), torch.ones(4), np.array(["a", "b"]), Ellipsis, True, 10 ** 400,
    torch.ones(4, 4, requires_grad=True),
]


@pytest.mark.parametrize("bad", BAD_VALUES, ids=lambda v: type(v).__name__)
def test_checkers_answer_any_input_with_a_chinese_message(bad):
    calls = [
        lambda: check_dot_score(bad, q, k), lambda: check_dot_score((q * k).sum(), bad, k),
        lambda: check_score_matrix(bad, Q, K), lambda: check_score_matrix(Q @ K.T, Q, bad),
        lambda: check_causal_mask(bad, 4), lambda: check_causal_mask(TRIL, bad),
        lambda: check_masked_weights(bad, SCORES, D_K), lambda: check_masked_weights(_weights(), bad, D_K),
        lambda: check_masked_weights(_weights(), SCORES, bad),
        lambda: check_ffn_params(bad, 1_049_088, 2_099_712), lambda: check_ffn_params(1_050_624, 1_049_088, 2_099_712, bad),
    ]
    for call in calls:
        try:
            call()
        except (HomeworkWrong, HomeworkNotFilled) as err:
            assert any("\u4e00" <= ch <= "\u9fff" for ch in str(err)), f"提示不是中文：{err}"
        # 其他任何异常都会让测试失败：检查器不能把 TypeError、RuntimeError……漏给学生


def test_nan_and_device_and_dtype_messages_say_what_is_wrong():
    with pytest.raises(HomeworkWrong, match="NaN"):
        check_masked_weights(torch.full((4, 4), float("nan")), SCORES, D_K)
    with pytest.raises(HomeworkWrong, match="设备 meta"):
        check_masked_weights(torch.empty(4, 4, device="meta"), SCORES, D_K)
    with pytest.raises(HomeworkWrong, match="torch.int64.*float32 或 float64"):
        check_masked_weights(torch.ones(4, 4, dtype=torch.int64), SCORES, D_K)
    with pytest.raises(HomeworkWrong, match="float16"):
        check_masked_weights(_weights().half(), SCORES, D_K)
    with pytest.raises(HomeworkWrong, match=r"应该和 scores 一样是 \(4, 4\)"):
        check_masked_weights(_weights()[:2], SCORES, D_K)
    with pytest.raises(HomeworkWrong, match="题目给的 scores"):
        check_masked_weights(_weights(), None, D_K)


# ---------------------------------------------------------------- 批改用的题目清单

def test_exercise_list_runs_each_checker_on_the_package_inputs():
    x = exercise_inputs()
    tril = torch.tril(torch.ones(3, 3))
    answers = {
        "score": (x["q"] * x["k"]).sum(), "S": x["Q"] @ x["K"].T, "mask": tril,
        "weights": torch.softmax(x["scores"].masked_fill(tril == 0, float("-inf")), dim=-1),
        "w1_params": 1_050_624, "w2_params": 1_049_088, "total_params": 2_099_712,
    }
    assert [e.key for e in EXERCISES] == ["1a", "1b", "2a", "2b", "3"]
    for exercise in EXERCISES:
        assert exercise.run({n: answers[n] for n in exercise.answers}, x).startswith("✔")
        with pytest.raises(HomeworkNotFilled):
            exercise.run({n: None for n in exercise.answers}, x)
