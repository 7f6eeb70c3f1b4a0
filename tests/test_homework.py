"""作业检查器：和由输入重新算出的正确答案比较；典型错误各有对应的提示，且提示里不出现正确的数值；
任何奇怪的输入都只得到 HomeworkWrong / HomeworkNotFilled（中文说明），不会有别的异常从检查器里冒出来。"""

import contextlib
import io
import math
import re

import numpy as np
import pytest
import torch

from minigpt.homework import (
    CHECKERS, EXERCISES, TOLERANCE, HomeworkNotFilled, HomeworkWrong, check_causal_mask, check_dot_score,
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
    x = exercise_inputs()
    right = (x["q"] * x["k"]).sum()
    assert check_dot_score(right, x["q"], x["k"]) is None  # 只打印，不返回：笔记本里不必用分号压住返回值
    assert capsys.readouterr().out.startswith("✔ 作业 1 通过")
    assert check_dot_score.judge((q * k).sum(), q, k).startswith("✔ 作业 1 通过")
    check_dot_score(float(right), x["q"], x["k"])
    check_dot_score(np.float64(right), x["q"], x["k"])
    check_dot_score(x["q"].double() @ x["k"].double(), x["q"], x["k"])


def test_dot_score_tolerance_is_the_stated_one():
    truth = float((q * k).sum())
    inside = truth + 0.5 * (TOLERANCE["atol"] + TOLERANCE["rtol"] * abs(truth))
    outside = truth + 2 * (TOLERANCE["atol"] + TOLERANCE["rtol"] * abs(truth))
    check_dot_score.judge(inside, q, k)
    with pytest.raises(HomeworkWrong, match="容差"):
        check_dot_score.judge(outside, q, k)


@pytest.mark.parametrize("answer,pattern", [
    (None, "score 还没有填写"),
    (q * k, "还没有求和"),
    (torch.outer(q, k), "外积"),
    (q[None] @ k[:, None], r"形状 \(1, 1\).*标量"),
    ((q * k).sum() / 2, "√d_k"),
    (q.sum() * k.sum(), "先各自求和再相乘"),
    ((q * q).sum(), "q 和自己"),
    ((q - k).pow(2).sum(), "距离"),
    (1.0, "与正确结果不一致"),
])
def test_dot_score_rejects_typical_mistakes_without_revealing_the_answer(answer, pattern):
    with pytest.raises(AssertionError, match=pattern) as info:
        check_dot_score.judge(answer, q, k)
    assert isinstance(info.value, HomeworkNotFilled if answer is None else HomeworkWrong)
    _no_number_of(str(info.value), (q * k).sum())


def test_score_matrix_accepts_q_kt(capsys):
    x = exercise_inputs()
    check_score_matrix(x["Q"] @ x["K"].T, x["Q"], x["K"])
    assert capsys.readouterr().out.startswith("✔ 作业 1 通过")
    check_score_matrix((x["Q"] @ x["K"].T).numpy(), x["Q"], x["K"])
    assert check_score_matrix.judge((Q @ K.T).numpy(), Q, K).startswith("✔")


@pytest.mark.parametrize("answer,pattern", [
    (None, "S 还没有填写"),
    (K @ Q.T, "转置"),
    (Q.T @ K, r"应该是 \(3, 3\).*收到 \(4, 4\).*Q\.T @ K"),
    (Q * K, "逐元素相乘"),
    (Q @ K.T / 2, "√d_k"),
])
def test_score_matrix_rejects_typical_mistakes_without_revealing_the_answer(answer, pattern):
    with pytest.raises(AssertionError, match=pattern) as info:
        check_score_matrix.judge(answer, Q, K)
    _no_number_of(str(info.value), Q @ K.T)


def test_score_matrix_names_the_wrong_cell_but_not_its_value():
    S = Q @ K.T
    S[1, 2] += 1
    with pytest.raises(HomeworkWrong, match="第 1 行第 2 列") as info:
        check_score_matrix.judge(S, Q, K)
    _no_number_of(str(info.value), Q @ K.T)


# 题目的真实数据（种子 42，"the cat sat"）：q = Q[1]，k = K[2]
X = exercise_inputs()
TQ, TK, TS = X["Q"], X["K"], X["scores"]
T_SCORE = (X["q"] * X["k"]).sum()


@pytest.mark.parametrize("answer,pattern", [
    ((TQ[2] * TK[1]).sum(), r"Q\[2\] 与 K\[1\] 的点积，两个 token 的角色对调了"),
    ((TQ[1] * TK[1]).sum(), r"Q\[1\] 与 K\[1\] 的点积，取错了行"),
    ((TQ[1] * TQ[2]).sum(), r"Q\[1\] 与 Q\[2\] 的点积，两个向量都取自 Q"),
    (round(float(T_SCORE), 1), "四舍五入到了 1 位小数"),
    (round(float(T_SCORE), 2), "四舍五入到了 2 位小数"),
    (round(float(T_SCORE), 3), "四舍五入到了 3 位小数"),
    (int(T_SCORE), "取了整"),
    ((X["q"] * X["k"]).mean(), r"平均（\.mean\(\)），或者除以了 d_k"),
    (-T_SCORE, "符号反了"),
])
def test_dot_score_names_the_wrong_pair_rounding_mean_and_sign(answer, pattern):
    with pytest.raises(HomeworkWrong, match=pattern) as info:
        check_dot_score.judge(answer, X["q"], X["k"], TQ, TK)
    message = str(info.value)
    assert "对应位置相乘之后把乘积全部加了起来" not in message  # 旧的误诊：乘法和求和本身没错
    _no_number_of(message, T_SCORE)


def test_dot_score_without_the_matrices_still_answers_in_chinese():
    with pytest.raises(HomeworkWrong, match="没有认出是哪一种常见错误") as info:
        check_dot_score.judge((TQ[2] * TK[1]).sum(), X["q"], X["k"])
    _no_number_of(str(info.value), T_SCORE)


def _loop(fill):
    S = torch.zeros(3, 3)
    for i in range(3):
        for j in range(3):
            S[i, j] = fill(i, j)
    return S


TRUTH_S = TQ @ TK.T


@pytest.mark.parametrize("answer,pattern", [
    (TQ @ TQ.T, r"Q @ Q\.T，Query 和自己做了点积"),
    (TK @ TK.T, r"K @ K\.T，Key 和自己做了点积"),
    (torch.softmax(TRUTH_S, dim=-1), "每一行加起来是 1，像是已经做了 softmax"),
    (torch.softmax(TRUTH_S, dim=0), "每一列加起来是 1"),
    (torch.softmax(TRUTH_S / 2, dim=-1), "像是注意力权重（缩放、再 softmax 之后）"),
    (TRUTH_S / 4, "你除以了 d_k = 4"),
    (_loop(lambda i, j: (TQ[i] * TK[i]).sum()), r"每一行的数都相同.*K\[j\]"),
    (_loop(lambda i, j: (TQ[j] * TK[j]).sum()), r"每一列的数都相同.*Q\[i\]"),
    (_loop(lambda i, j: (TQ[i] * TK[j]).sum() if i < 2 and j < 2 else 0.0),
     "最后一行和最后一列还是 0.*range 的上界"),
    (torch.round(TRUTH_S, decimals=2), "四舍五入到了 2 位小数"),
    (TRUTH_S.masked_fill(torch.tril(torch.ones(3, 3)) == 0, float("-inf")), "像是已经做了遮蔽"),
])
def test_score_matrix_names_self_products_softmax_scaling_index_and_rounding_mistakes(answer, pattern):
    with pytest.raises(HomeworkWrong, match=pattern) as info:
        check_score_matrix.judge(answer, TQ, TK)
    assert "检查循环的下标" not in str(info.value)  # 旧的误诊：这些都不是下标写错
    _no_number_of(str(info.value), TRUTH_S)


# ---------------------------------------------------------------- 作业 2（一）

@pytest.mark.parametrize("mask", [
    torch.tril(torch.ones(4, 4)), torch.tril(torch.ones(4, 4)).bool(), torch.tril(torch.ones(4, 4, dtype=torch.int64)),
    [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], np.tril(np.ones((4, 4), dtype=bool)),
])
def test_causal_mask_accepts_lower_triangular(mask):
    assert check_causal_mask.judge(mask, 4).startswith("✔ 作业 2 通过")
    check_causal_mask.judge(mask, np.int64(4))
    check_causal_mask.judge(mask, torch.tensor(4))


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
    (torch.tril(torch.ones(4, 4), diagonal=1), "多看到了紧挨着的下一个 token"),
    (torch.zeros(4, 4).masked_fill(TRIL == 0, -1e9), "负数.*加性"),
    (torch.tril(torch.ones(4, 4))[None], "多了长度为 1 的维度"),
])
def test_causal_mask_rejects_typical_mistakes(mask, pattern):
    with pytest.raises(AssertionError, match=pattern):
        check_causal_mask.judge(mask, 4)


# ---------------------------------------------------------------- 作业 2（二）

def test_masked_weights_accepts_the_weights_recomputed_from_the_scores(capsys):
    x = exercise_inputs()
    tril = torch.tril(torch.ones(3, 3))
    check_masked_weights(torch.softmax(x["scores"].masked_fill(tril == 0, float("-inf")), dim=-1),
                         x["scores"], x["d_k"])
    assert capsys.readouterr().out.startswith("✔ 作业 2 通过")
    check_masked_weights.judge(_weights().double(), SCORES)
    check_masked_weights.judge(_weights().numpy(), SCORES.numpy(), np.int64(D_K))
    # 学生把遮蔽后的分数当作 scores 传进来，正确答案不变
    check_masked_weights.judge(_weights(), SCORES.masked_fill(TRIL == 0, float("-inf")), D_K)
    # 先 softmax、遮蔽、再按行重新归一化，数学上与正确做法相同，也算对
    p = torch.softmax(SCORES, dim=-1) * TRIL
    check_masked_weights.judge(p / p.sum(dim=-1, keepdim=True), SCORES, D_K)


def test_masked_weights_is_compared_with_the_truth_not_only_its_properties():
    # 性质都对（下三角、每行和为 1、非负），数值却不是这组 scores 的：必须不通过
    other = _weights(torch.randn(4, 4, generator=torch.Generator().manual_seed(1)))
    with pytest.raises(HomeworkWrong, match="数值与由 scores 算出的权重不一致"):
        check_masked_weights.judge(other, SCORES, D_K)


@pytest.mark.parametrize("make,pattern", [
    (lambda s: torch.eye(4), "单位矩阵"),
    (lambda s: TRIL / TRIL.sum(dim=-1, keepdim=True), "平均分配"),
    (lambda s: torch.softmax((s * math.sqrt(D_K)).masked_fill(TRIL == 0, float("-inf")), dim=-1), "没有除以 √d_k"),
    (lambda s: torch.softmax((s / math.sqrt(D_K)).masked_fill(TRIL == 0, float("-inf")), dim=-1), "又除了一次"),
    (lambda s: torch.softmax(s, dim=-1) * TRIL, "先 softmax、再把未来位置乘 0"),
    (lambda s: torch.softmax(s, dim=-1).masked_fill(TRIL == 0, 0.0), "先 softmax、再把未来位置乘 0"),
    (lambda s: torch.softmax(s, dim=-1).masked_fill(TRIL == 0, float("-inf")), "-inf：像是先做了 softmax"),
    (lambda s: torch.softmax(s, dim=-1), "没有遮蔽"),
    (lambda s: torch.softmax(s.masked_fill(TRIL == 0, 0.0), dim=-1), "填成了 0 而不是 -inf"),
    (lambda s: torch.softmax(s.masked_fill(TRIL == 0, float("-inf")), dim=0), "错误的维度"),
    (lambda s: torch.softmax(s.masked_fill(TRIL.T == 0, float("-inf")), dim=-1), "上三角"),
    (lambda s: torch.softmax(s.masked_fill(torch.tril(TRIL, -1) == 0, float("-inf")), dim=-1),
     "weights 的第 0 行是 NaN。对角线也被遮住了"),
    (lambda s: torch.softmax(s.masked_fill(TRIL >= 0, float("-inf")), dim=-1), r"weights 的第 0、1、[、\d]+ 行都是 NaN。"),
    # 忘了 softmax、或用了 log_softmax：不是“先 softmax 再填 -inf”
    (lambda s: s.masked_fill(TRIL == 0, float("-inf")), "还没有做 softmax"),
    (lambda s: torch.log_softmax(s.masked_fill(TRIL == 0, float("-inf")), dim=-1), "log_softmax"),
    (lambda s: torch.exp(s.masked_fill(TRIL == 0, float("-inf"))), "只做了 exp，没有除以每行之和"),
    (lambda s: s.masked_fill(TRIL == 0, 0.0), r"未来位置是 0），还没有做 softmax"),
    (lambda s: s, "题目给的 scores 本身"),
    # 遮蔽反了（masked_fill(mask == 1, …)）：不是对角线的问题
    (lambda s: torch.softmax(s.masked_fill(TRIL == 1, float("-inf")), dim=-1), r"遮蔽反了.*能看的位置.*mask == 1"),
    (lambda s: torch.softmax(s.masked_fill(TRIL.bool(), float("-inf")), dim=-1), r"遮蔽反了.*能看的位置.*mask == 1"),
    (lambda s: torch.softmax(s.masked_fill(TRIL == 1, -1e9), dim=-1), r"遮蔽反了.*能看的位置.*mask == 1"),
    (lambda s: torch.softmax(s + TRIL, dim=-1), "mask 直接加到了分数上"),
    (lambda s: torch.softmax(s.masked_fill(torch.tril(TRIL + 1, 1) == 0, float("-inf")), dim=-1), "多放开了一格"),
    (lambda s: torch.softmax(s.masked_fill(TRIL == 0, float("-inf")), dim=-1).T, "转置"),
    (lambda s: torch.round(torch.softmax(s.masked_fill(TRIL == 0, float("-inf")), dim=-1), decimals=2),
     "四舍五入到了 2 位小数"),
])
def test_masked_weights_names_each_typical_mistake_without_revealing_the_answer(make, pattern):
    with pytest.raises(HomeworkWrong, match=pattern) as info:
        check_masked_weights.judge(make(SCORES), SCORES, D_K)
    message = str(info.value)
    _no_number_of(message, _weights())
    if "对角线" not in pattern:  # 只有真把对角线遮住的答案，才该被说成对角线的问题
        assert "对角线也被遮住" not in message and "对角线是不是" not in message, message
    if "先 softmax" not in pattern and "先做了 softmax" not in pattern:
        assert "先做了 softmax" not in message, message


def test_masked_weights_recognises_d_k_instead_of_its_square_root():
    raw = SCORES * math.sqrt(D_K)  # 没缩放的分数 Q @ K.T
    wrong = torch.softmax((raw / D_K).masked_fill(TRIL == 0, float("-inf")), dim=-1)
    with pytest.raises(HomeworkWrong, match="除以 d_k 而不是 √d_k"):
        check_masked_weights.judge(wrong, SCORES, D_K)


# ---------------------------------------------------------------- 作业 3

def test_ffn_params_accepts_the_right_answer_as_any_integer_type(capsys):
    check_ffn_params(2048 * 512 + 2048, 512 * 2048 + 512, 2_099_712)
    out = capsys.readouterr().out
    assert out.startswith("✔ 作业 3 通过") and "2,099,712" in out
    check_ffn_params.judge(np.int64(1_050_624), np.int32(1_049_088), np.array(2_099_712))
    check_ffn_params.judge(torch.tensor(1_050_624), torch.tensor(1_049_088, dtype=torch.int32), 2_099_712)
    h, f = 8, 32
    check_ffn_params.judge(f * h + f, h * f + h, 2 * h * f + h + f, hidden_size=h, d_ff=f)


@pytest.mark.parametrize("w1,w2,total,pattern", [
    (None, 1_049_088, 2_099_712, r"^w1_params 还没有填写"),
    (None, None, None, "w1_params、w2_params 和 total_params 都还没有填写"),
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
    (512 * 2048 + 512, 2048 * 512 + 2048, 2_099_712, "对调"),
    (2 * 2048 * 512 + 2048 + 512, 1_049_088, 2_099_712, "两层都算进了 w1_params"),
    (2048 * 512 + 1, 1_049_088, 2_099_712, "每个输出维一个"),
    (1_050_000, 1_049_088, 2_099_712, "约数"),
    (2048 * 2048 + 2048, 1_049_088, 2_099_712, "自乘"),
    (1_050_624, 1_049_088, 2 * 1_050_624, "乘了 2"),
])
def test_ffn_params_rejects_typical_mistakes_without_revealing_the_answer(w1, w2, total, pattern):
    with pytest.raises(AssertionError, match=pattern) as info:
        check_ffn_params.judge(w1, w2, total)
    assert isinstance(info.value, HomeworkNotFilled if None in (w1, w2, total) else HomeworkWrong)
    message = str(info.value)
    for right in (1_050_624, 1_049_088, 2_099_712):
        if right not in (w1, w2, total):  # 学生自己填对的数可以出现在提示里
            assert f"{right:,}" not in message and str(right) not in message, message


@pytest.mark.parametrize("w1,w2", [
    (2048 * 512, 1_049_088), (1_050_624, 512 * 2048),          # 漏了偏置
    (2048 * 512 + 512, 1_049_088), (1_050_624, 512 * 2048 + 2048),  # 偏置按输入维数
    (2048 * 512 + 1, 1_049_088), (2048 + 512, 1_049_088), (12_345, 1_049_088),
])
def test_ffn_hints_never_name_a_layers_bias_count(w1, w2):
    """只差一次加法的提示就是答案：提示里不能出现 d_ff、hidden_size 的数值（偏置个数）。"""
    with pytest.raises(HomeworkWrong) as info:
        check_ffn_params.judge(w1, w2, w1 + w2)
    wrong = w1 if w1 != 1_050_624 else w2
    hint = str(info.value).replace(f"{wrong:,}", "")
    for count in (2048, 512):
        assert str(count) not in hint and f"{count:,}" not in hint, hint


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
        lambda: check_dot_score.judge(bad, q, k), lambda: check_dot_score.judge((q * k).sum(), bad, k),
        lambda: check_score_matrix.judge(bad, Q, K), lambda: check_score_matrix.judge(Q @ K.T, Q, bad),
        lambda: check_causal_mask.judge(bad, 4), lambda: check_causal_mask.judge(TRIL, bad),
        lambda: check_masked_weights.judge(bad, SCORES, D_K), lambda: check_masked_weights.judge(_weights(), bad, D_K),
        lambda: check_masked_weights.judge(_weights(), SCORES, bad),
        lambda: check_ffn_params.judge(bad, 1_049_088, 2_099_712), lambda: check_ffn_params.judge(1_050_624, 1_049_088, 2_099_712, bad),
    ]
    for call in calls:
        try:
            call()
        except (HomeworkWrong, HomeworkNotFilled) as err:
            assert any("\u4e00" <= ch <= "\u9fff" for ch in str(err)), f"提示不是中文：{err}"
        # 其他任何异常都会让测试失败：检查器不能把 TypeError、RuntimeError……漏给学生


def test_nan_and_device_and_dtype_messages_say_what_is_wrong():
    with pytest.raises(HomeworkWrong, match="NaN"):
        check_masked_weights.judge(torch.full((4, 4), float("nan")), SCORES, D_K)
    with pytest.raises(HomeworkWrong, match="设备 meta"):
        check_masked_weights.judge(torch.empty(4, 4, device="meta"), SCORES, D_K)
    with pytest.raises(HomeworkWrong, match="torch.int64.*float32 或 float64"):
        check_masked_weights.judge(torch.ones(4, 4, dtype=torch.int64), SCORES, D_K)
    with pytest.raises(HomeworkWrong, match="float16"):
        check_masked_weights.judge(_weights().half(), SCORES, D_K)
    with pytest.raises(HomeworkWrong, match=r"应该和 scores 一样是 \(4, 4\)"):
        check_masked_weights.judge(_weights()[:2], SCORES, D_K)
    with pytest.raises(HomeworkWrong, match="题目给的 scores"):
        check_masked_weights.judge(_weights(), None, D_K)


# ---------------------------------------------------------------- 批改用的题目清单

def test_exercise_list_runs_each_checker_on_the_package_inputs():
    x = exercise_inputs()
    tril = torch.tril(torch.ones(3, 3))
    answers = {
        "score": (x["q"] * x["k"]).sum(), "S": x["Q"] @ x["K"].T, "mask": tril,
        "weights": torch.softmax(x["scores"].masked_fill(tril == 0, float("-inf")), dim=-1),
        "w1_params": 1_050_624, "w2_params": 1_049_088, "total_params": 2_099_712,
        "heads": x["x"].view(1, 3, 2, 4).transpose(1, 2), "merged": x["x"],
        "attn_out": x["mha"](x["x"], tril), "block_out": x["block"](x["x"], tril),
        "ln_out": torch.nn.functional.layer_norm(x["h"], (8,), x["gamma"], x["beta"], x["eps"]),
    }
    assert [e.key for e in EXERCISES] == ["1a", "1b", "2a", "2b", "3", "4a", "4b", "5a", "5b"]
    for exercise in EXERCISES:
        assert exercise.run({n: answers[n] for n in exercise.answers}, x).startswith("✔")
        with pytest.raises(HomeworkNotFilled):
            exercise.run({n: None for n in exercise.answers}, x)


# ---------------------------------------------------------------- 在 IPython 里怎样显示

@pytest.fixture
def ipython_shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("import torch\nfrom minigpt.homework import check_dot_score, exercise_inputs\n"
                   "x = exercise_inputs()\nq, k = x['q'], x['k']")
    yield shell
    InteractiveShell.clear_instance()


def _run(shell, capsys, code: str) -> str:
    capsys.readouterr()
    shell.run_cell(code)
    return re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)  # 去掉颜色控制符


def test_in_ipython_a_checker_error_is_one_line_without_the_checkers_code(ipython_shell, capsys):
    out = _run(ipython_shell, capsys, "x = 1\ncheck_dot_score(q * k, q, k)")
    assert out.strip().splitlines() == [out.strip()] and out.startswith("HomeworkWrong: 检查 score 的形状"), out
    assert "homework/" not in out and "truth" not in out and "Traceback" not in out


def test_in_ipython_the_students_own_error_keeps_its_line_number(ipython_shell, capsys):
    out = _run(ipython_shell, capsys, "x = 1\ny = undefined_name\ncheck_dot_score(y, q, k)")
    assert "NameError" in out and re.search(r"line 2\b", out), out
    assert "Exception reporting mode" not in out


def test_in_ipython_a_passing_checker_prints_one_line_and_shows_no_return_value(ipython_shell, capsys):
    out = _run(ipython_shell, capsys, "check_dot_score((q * k).sum(), q, k)")
    assert re.fullmatch(r"✔ 作业 1 通过：score = -?\d+\.\d{4}，等于 q 与 k 的点积", out.strip()), out


@pytest.mark.parametrize("bad", BAD_VALUES, ids=lambda v: type(v).__name__)
def test_the_section_4_to_6_checkers_answer_any_input_with_a_chinese_message(bad):
    from minigpt.homework import check_block_output, check_layer_norm, check_mha_output, check_split_merge

    x = exercise_inputs()
    heads = x["x"].view(1, 3, 2, 4).transpose(1, 2)
    calls = [
        lambda: check_split_merge(bad, x["x"], x["x"], 2), lambda: check_split_merge(heads, bad, x["x"], 2),
        lambda: check_split_merge(heads, x["x"], bad, 2), lambda: check_split_merge(heads, x["x"], x["x"], bad),
        lambda: check_split_merge.judge(heads, x["x"], bad, bad),
        lambda: check_mha_output(bad, x["x"], x["mha"]), lambda: check_mha_output(x["x"], bad, bad),
        lambda: check_mha_output.judge(x["x"], bad, x["mha"]), lambda: check_mha_output.judge(x["x"], x["x"], bad),
        lambda: check_layer_norm(bad, x["h"], x["gamma"], x["beta"], x["eps"]),
        lambda: check_layer_norm(x["h"], bad, bad, bad, bad),
        lambda: check_layer_norm.judge(x["h"], bad, x["gamma"], x["beta"]),
        lambda: check_layer_norm.judge(x["h"], x["h"], bad, bad, bad),
        lambda: check_block_output(bad, x["x"], x["block"]), lambda: check_block_output(x["x"], bad, bad),
        lambda: check_block_output.judge(x["x"], bad, x["block"]),
        lambda: check_block_output.judge(x["x"], x["x"], bad),
    ]
    for call in calls:
        try:
            call()
        except (HomeworkWrong, HomeworkNotFilled) as err:
            assert any("\u4e00" <= ch <= "\u9fff" for ch in str(err)), f"提示不是中文：{err}"


# ---------------------------------------------------------------- 一个判定，跨单元：后面的单元改坏了前面通过的答案

SETUP = ("import torch\nfrom minigpt.homework import *\nfrom minigpt.attention import causal_mask\n"
         "data = exercise_inputs()\nx, num_heads, mha, block = data['x'], 2, data['mha'], data['block']\n"
         "h, gamma, beta, eps = data['h'], data['gamma'], data['beta'], data['eps']")
SPLIT = ("heads = x.view(1, 3, 2, 4).transpose(1, 2)\nmerged = heads.transpose(1, 2).contiguous().view(1, 3, 8)\n"
         "check_split_merge(heads, merged, x, num_heads)")


def _cells(*sources):
    """像笔记本那样在同一个命名空间里依次运行几个单元；返回最后一个单元打印的或抛出的消息。"""
    namespace: dict = {}
    for source in sources[:-1]:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(source, namespace)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(sources[-1], namespace)
    except (HomeworkWrong, HomeworkNotFilled) as err:
        return str(err)
    return out.getvalue()


def test_a_later_checker_says_at_once_which_passed_part_its_cell_changed():
    said = _cells(SETUP, SPLIT, "heads = mha.split_heads(mha.W_Q(x))  # 重用了名字\n"
                                "attn_out = mha(x, causal_mask(3))\ncheck_mha_output(attn_out, x, mha)")
    assert said.startswith("✔ 作业 4 通过")
    # 只点出真的变了的 heads：merged 没有动
    assert "注意：作业 4（一） 已经通过的答案 heads 后来被改动了" in said and "merged" not in said


def test_an_in_place_change_through_a_view_is_named_even_when_the_later_answer_is_wrong():
    said = _cells(SETUP, SPLIT, "x += block.attn(x, causal_mask(3))\nblock_out = x\n"
                                "check_block_output(block_out, x, block)")
    # heads 是 x 的 view；merged 也是（heads.transpose(1, 2) 本来就连续，contiguous() 不复制）：两个都变了
    assert re.match("注意：作业 4（一） 已经通过的答案 heads(、| 和 )merged 都后来被改动了", said), said
    assert "你改动了题目给的 x" in said and "检查 block_out" in said


def test_when_every_answer_of_a_passed_part_changed_the_note_names_them_all():
    said = _cells(SETUP, SPLIT, "heads, merged = heads * 2, merged * 2\n"
                                "attn_out = mha(x, causal_mask(3))\ncheck_mha_output(attn_out, x, mha)")
    assert re.search("注意：作业 4（一） 已经通过的答案 heads(、| 和 )merged 都后来被改动了", said), said


def test_a_part_rebound_in_its_own_cell_and_unchanged_parts_bring_no_note():
    assert "注意" not in _cells(SETUP, SPLIT, SPLIT, "attn_out = mha(x, causal_mask(3))\n"
                                                   "check_mha_output(attn_out, x, mha)")
    said = _cells(SETUP, "ln_out = torch.nn.functional.layer_norm(h, (8,), gamma, beta, eps)\n"
                         "check_layer_norm(ln_out, h, gamma, beta, eps)",
                  "ln_out = 0\nblock_out = None\ncheck_block_output(block_out, x, block)")
    assert said.startswith("注意：作业 5（一） 已经通过的答案 ln_out 后来被改动了") and "还没有填写" in said


def test_a_mask_of_a_hard_coded_size_is_told_to_use_seq_len():
    """r36c F7（hard4）：题目的提示让学生试 seq_len = 4；留下的 torch.ones(4, 4) 以前只得到“形状应该是 (3, 3)”。"""
    with pytest.raises(HomeworkWrong, match="大小写死成了 4。用题目给的 seq_len"):
        check_causal_mask.judge(torch.tril(torch.ones(4, 4)), 3)


def test_the_note_after_a_del_says_what_happens_when_the_parts_own_cell_deleted_it():
    """r36c F6（K15）：1(一) 的单元里 check_dot_score(...) 之后 del score。下一个检查器的提醒以前只说“删除它的若是
    别的题的单元，批改仍按 … 给分”，学生读成“没关系”，批改却说没有这个变量。现在两种情形都说清楚。"""
    said = _cells(SETUP, SPLIT + "\ndel heads", "attn_out = mha(x, causal_mask(3))\ncheck_mha_output(attn_out, x, mha)")
    assert "已经通过的答案 heads 后来被删除了（del）" in said, said
    assert "若是 作业 4（一） 自己的单元" in said and "这道题不得分" in said, said


def test_a_checker_after_zeroed_given_data_diagnoses_against_the_students_data():
    """r36c F4（H11）在笔记本里：Q.mul_(0) 之后 q·k 是 0，以前检查器说“像是取了整”。"""
    said = _cells("import torch\nfrom minigpt.homework import *\ndata = exercise_inputs()\n"
                  "q, k, Q, K = data['q'], data['k'], data['Q'], data['K']",
                  "Q.mul_(0)\nq.mul_(0)\nscore = q @ k\ncheck_dot_score(score, q, k, Q, K)")
    assert said.startswith("注意：你改动了题目给的"), said
    assert "按你手里改动过的数据算是对的" in said and "取了整" not in said, said


# ---------------------------------------------------------------- 抄来的数：在容差之内，也不是算出来的

def _dot_verdict(answer, q, k) -> str:
    """judge_dot_score 的诊断名；通过时是 "pass"。"""
    try:
        check_dot_score.judge(answer, q, k)
    except HomeworkWrong as err:
        return err.diagnosis
    return "pass"


def test_a_score_copied_with_the_printed_decimals_fails_and_every_computed_score_passes():
    """随机的 q、k（长度 4–64）：float32、float64、各种求和顺序算出的分数都通过；
    正确值舍入到书和检查器打印的位数（1–4 位，还有 5、6 位）后抄下的数，不论写成 Python 数、
    float32 还是 float64 张量，都得到“舍入”的诊断——只要舍入值离正确值远到 float32 的计算得不出它。"""
    flagged = skipped = 0
    for seed in range(200):
        g = torch.Generator().manual_seed(seed)
        n = 4 + seed % 61
        a, b = torch.randn(n, generator=g), torch.randn(n, generator=g)
        computed = [(a * b).sum(), a @ b, (a * b).flip(0).sum(), (a * b).cumsum(0)[-1],
                    sum((a * b).unbind(), torch.tensor(0.0)), a.double() @ b.double(),
                    math.fsum(float(x) * float(y) for x, y in zip(a, b)),
                    np.dot(a.numpy(), b.numpy()), float((a * b).sum())]
        for value in computed:
            assert _dot_verdict(value, a, b) == "pass", (seed, value)
        truth = math.fsum(float(x) * float(y) for x, y in zip(a, b))
        spread = n * 2.0 ** -24 * (a * b).abs().sum().item()   # float32 求和能差出的距离
        for d in range(1, 7):
            r = round(truth, d)
            if abs(r - truth) <= max(1e-6 * abs(truth), spread):
                skipped += 1
                continue
            for copied in (r, torch.tensor(r), torch.tensor(r, dtype=torch.float64)):
                assert _dot_verdict(copied, a, b) == "rounding", (seed, d, copied)
            flagged += 1
    assert flagged > skipped, (flagged, skipped)


def test_the_exercise_score_copied_from_the_pass_message_fails_with_the_rounding_diagnosis(capsys):
    """作业 1（一）：✔ 消息打印 4 位小数；把它抄回去不算数。"""
    data = exercise_inputs()
    right = (data["q"] * data["k"]).sum()
    check_dot_score(right, data["q"], data["k"], data["Q"], data["K"])
    printed = re.search(r"score = (-?\d+\.\d{4})", capsys.readouterr().out).group(1)
    with pytest.raises(HomeworkWrong, match="四舍五入到了 4 位小数") as err:
        check_dot_score(float(printed), data["q"], data["k"], data["Q"], data["K"])
    assert err.value.diagnosis == "rounding"


# ---------------------------------------------------------------- 作业 3：每个不对的数都说出来

def test_ffn_params_names_every_bad_value_of_the_part():
    r1, r2 = 2048 * 512 + 2048, 512 * 2048 + 512
    with pytest.raises(HomeworkWrong) as err:
        check_ffn_params(float(r1), str(r2), r1 + r2)
    assert "w1_params 必须是整数" in str(err.value) and "w2_params 应该是一个整数" in str(err.value)
    assert err.value.diagnosis == "float_count"
    with pytest.raises(HomeworkWrong) as err:
        check_ffn_params(2048 * 512, 512 * 2048, 123)
    said = str(err.value)
    assert "检查 w1_params" in said and "检查 w2_params" in said and "检查 total_params" in said


# 公式、运算符和“正确答案 =”：出现在说明里就等于把算法告诉了学生
HOW_TO_COMPUTE = re.compile(r"[=×→√⊙@]|softmax|\.sum\(|-inf|正确答案|偏置 \w+ 个|Kᵀ|K\.T")


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.key)
def test_check_help_names_the_part_its_variables_and_section_but_not_how_to_compute(exercise):
    """check_xxx? 在笔记本里显示的说明：题号、分值、答案变量、讲它的那一节，不写正确答案的算法。"""
    doc = CHECKERS[exercise.checker].__doc__
    assert doc.startswith(exercise.title)
    assert f"{exercise.points} 分" in doc and f"见第 {exercise.section} 节" in doc
    assert all(name in doc for name in exercise.answers)
    assert not HOW_TO_COMPUTE.search(doc), doc
    # 这些题的判题函数文档确实写着算法：说明若还是照抄它，上面的断言就会失败
    if exercise.key in {"1a", "2b", "3", "5a"}:
        assert HOW_TO_COMPUTE.search(exercise.judge.__doc__)
