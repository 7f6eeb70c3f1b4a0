"""作业检查：正确答案通过，典型错误给出对应的中文提示。"""

import math

import pytest
import torch

from minigpt.attention import causal_mask
from minigpt.homework import (
    HomeworkNotFilled, HomeworkWrong, check_causal_mask, check_dot_score, check_ffn_params,
    check_masked_weights, check_score_matrix,
)

q = torch.tensor([1.0, -2.0, 0.5, 3.0])
k = torch.tensor([0.5, 1.0, -1.0, 2.0])
Q = torch.tensor([[1.0, 0.0, 2.0, -1.0], [0.5, 1.0, -1.0, 0.0], [2.0, -1.0, 0.0, 1.0]])
K = torch.tensor([[0.0, 1.0, 1.0, 2.0], [1.0, 1.0, 0.0, -1.0], [-1.0, 0.5, 2.0, 0.0]])


def test_exceptions_are_assertion_errors():
    assert issubclass(HomeworkNotFilled, AssertionError) and issubclass(HomeworkWrong, AssertionError)


# ---------------------------------------------------------------- 作业 1

def test_dot_score_accepts_tensor_and_float(capsys):
    msg = check_dot_score((q * k).sum(), q, k)
    assert msg.startswith("✔ 作业 1 通过") and "✔ 作业 1 通过" in capsys.readouterr().out
    check_dot_score(float((q * k).sum()), q, k)
    check_dot_score(q @ k, q, k)


@pytest.mark.parametrize("answer,pattern", [
    (None, "score 还没有填写"),
    (q * k, "还没有求和"),
    (torch.outer(q, k), "外积"),
    (q[None] @ k[:, None], r"形状 \(1, 1\).*标量"),
    ((q * k).sum() / 2, "√d_k"),
    (q.sum() * k.sum(), "先各自求和再相乘"),
    ((q * q).sum(), "q 和自己"),
    (1.0, r"期望 4\.0000，得到 1\.0000"),
])
def test_dot_score_rejects_typical_mistakes(answer, pattern):
    with pytest.raises(AssertionError, match=pattern) as info:
        check_dot_score(answer, q, k)
    assert isinstance(info.value, HomeworkNotFilled if answer is None else HomeworkWrong)


def test_score_matrix_accepts_q_kt():
    assert check_score_matrix(Q @ K.T, Q, K).startswith("✔ 作业 1 通过")


@pytest.mark.parametrize("answer,pattern", [
    (None, "S 还没有填写"),
    (K @ Q.T, "转置"),
    (Q.T @ K, r"期望 \(3, 3\).*得到 \(4, 4\).*Q\.T @ K"),
    (Q * K, "逐元素相乘"),
    (Q @ K.T / 2, "√d_k"),
])
def test_score_matrix_rejects_typical_mistakes(answer, pattern):
    with pytest.raises(AssertionError, match=pattern):
        check_score_matrix(answer, Q, K)


def test_score_matrix_names_the_wrong_cell():
    S = Q @ K.T
    S[1, 2] += 1
    with pytest.raises(HomeworkWrong, match="第 1 行第 2 列"):
        check_score_matrix(S, Q, K)


# ---------------------------------------------------------------- 作业 2

@pytest.mark.parametrize("mask", [
    torch.tril(torch.ones(4, 4)), causal_mask(4), causal_mask(4).bool(), [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]],
])
def test_causal_mask_accepts_lower_triangular(mask):
    assert check_causal_mask(mask, 4).startswith("✔ 作业 2 通过")


@pytest.mark.parametrize("mask,pattern", [
    (None, "mask 还没有填写"),
    (torch.triu(torch.ones(4, 4)), "转置"),
    (torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1), "含义反了"),
    (torch.ones(4, 4), "什么都没有遮住"),
    (torch.tril(torch.ones(4, 4), diagonal=-1), "对角线"),
    (torch.tril(torch.ones(3, 3)), r"期望 \(4, 4\).*得到 \(3, 3\)"),
    (torch.zeros(4, 4).masked_fill(causal_mask(4) == 0, float("-inf")), "加性"),
    (torch.tril(torch.ones(4, 4)) * 2, "只能是 0 和 1"),
])
def test_causal_mask_rejects_typical_mistakes(mask, pattern):
    with pytest.raises(AssertionError, match=pattern):
        check_causal_mask(mask, 4)


def _scores(n=4, seed=0):
    return torch.randn(n, n, generator=torch.Generator().manual_seed(seed))


def test_masked_weights_accepts_correct_weights():
    s = _scores().masked_fill(causal_mask(4) == 0, float("-inf"))
    assert check_masked_weights(torch.softmax(s, dim=-1)).startswith("✔ 作业 2 通过")
    assert check_masked_weights(torch.softmax(s, dim=-1)[None, None], causal_mask(4))


@pytest.mark.parametrize("make,pattern", [
    (lambda s, m: None, "weights 还没有填写"),
    (lambda s, m: torch.softmax(s, dim=-1), "未来位置的权重是否为 0"),
    (lambda s, m: torch.softmax(s.masked_fill(m == 0, float("-inf")), dim=0), "错误的维度"),
    (lambda s, m: torch.softmax(s.masked_fill(torch.tril(m, -1) == 0, float("-inf")), dim=-1), "NaN"),
    (lambda s, m: torch.softmax(s, dim=-1) * m, "先 softmax、再把未来位置乘 0"),
])
def test_masked_weights_rejects_typical_mistakes(make, pattern):
    with pytest.raises(AssertionError, match=pattern):
        check_masked_weights(make(_scores(), causal_mask(4)))


# ---------------------------------------------------------------- 作业 3

def test_ffn_params_accepts_the_right_answer(capsys):
    msg = check_ffn_params(2048 * 512 + 2048, 512 * 2048 + 512, 2_099_712)
    assert msg.startswith("✔ 作业 3 通过") and "2,099,712" in capsys.readouterr().out


@pytest.mark.parametrize("w1,w2,total,pattern", [
    (None, 1_049_088, 2_099_712, r"^w1_params 还没有填写"),
    (None, None, None, "w1_params、w2_params、total_params 还没有填写"),
    (1_050_624, 1_049_088, None, r"^total_params 还没有填写"),
    (2048 * 512, 512 * 2048, 2 * 512 * 2048, "w1_params.*偏置"),
    (1_050_624, 512 * 2048, 1_050_624 + 512 * 2048, "w2_params.*偏置"),
    (2048 * 512 + 512, 1_049_088, 2_099_712, "偏置个数"),
    (1_050_624, 1_049_088, 2 * 512 * 2048, "总数漏了偏置"),
    (1_050_624, 1_049_088, 2 * 512 * 2048 + 2048, "只算了一层的偏置"),
    (1_050_624, 1_049_088, 123, r"期望 2,099,712，得到 123"),
    (1_050_624.5, 1_049_088, 2_099_712, "整数"),
])
def test_ffn_params_rejects_typical_mistakes(w1, w2, total, pattern):
    with pytest.raises(AssertionError, match=pattern) as info:
        check_ffn_params(w1, w2, total)
    assert isinstance(info.value, HomeworkNotFilled if None in (w1, w2, total) else HomeworkWrong)


def test_ffn_params_accepts_other_sizes_and_tensors():
    h, f = 8, 32
    check_ffn_params(torch.tensor(f * h + f), h * f + h, float(2 * h * f + h + f), hidden_size=h, d_ff=f)
    assert math.isclose(2 * h * f + h + f, 552)
