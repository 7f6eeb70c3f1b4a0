"""作业检查器的案例表：典型的错误答案和它该得到的诊断，以及少见但正确、必须通过的写法。

每个案例：哪道小题、一句说明、怎样由题目数据 x 造出答案（学生会写的代码）、期望的结果——
"pass"、"not_filled"，或者诊断表里那一行的名字（HomeworkWrong.diagnosis）。
given 给出学生在笔记本里改动过的题目数据（q = Q[2]、scores /= …、seq_len = 4……），笔记本里的
检查器拿到的是它们，批改程序拿不到：两边的判定必须相同。

tests/test_homework_cases.py 用它；tools 里没有副本。
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

NEG_INF = float("-inf")


@dataclass(frozen=True)
class Case:
    key: str
    label: str
    make: Callable[[dict], dict]
    expect: str
    given: Callable[[dict], dict] = field(default=lambda x: {})


def _tril(n=3):
    return torch.tril(torch.ones(n, n))


def _loop(x, fill):
    Q, K = x["Q"], x["K"]
    S = torch.zeros(3, 3)
    for i in range(3):
        for j in range(3):
            v = fill(Q, K, i, j)
            if v is not None:
                S[i, j] = v
    return S


def _weights(s, fill=NEG_INF, mask=None, dim=-1):
    mask = _tril() if mask is None else mask
    return torch.softmax(s.masked_fill(mask == 0, fill), dim=dim)


# ---------------------------------------------------------------- 1（一）score

def _dot_cases():
    c = []
    add = lambda label, make, expect, given=None: c.append(
        Case("1a", label, lambda x, m=make: {"score": m(x)}, expect, given or (lambda x: {})))
    dot = lambda x: (x["q"] * x["k"]).sum()
    # 少见但正确
    add("(q * k).sum()", dot, "pass")
    add("float(...)", lambda x: float(dot(x)), "pass")
    add("(q*k).sum().item()", lambda x: dot(x).item(), "pass")
    add("q @ k", lambda x: x["q"] @ x["k"], "pass")
    add("torch.dot", lambda x: torch.dot(x["q"], x["k"]), "pass")
    add("torch.inner", lambda x: torch.inner(x["q"], x["k"]), "pass")
    add("einsum", lambda x: torch.einsum("i,i->", x["q"], x["k"]), "pass")
    add("numpy", lambda x: (x["q"].numpy() * x["k"].numpy()).sum(), "pass")
    add("np.dot float64", lambda x: np.dot(x["q"].double().numpy(), x["k"].double().numpy()), "pass")
    add("(Q @ K.T)[1, 2]", lambda x: (x["Q"] @ x["K"].T)[1, 2], "pass")
    add("python 循环", lambda x: sum(float(a) * float(b) for a, b in zip(x["q"], x["k"])), "pass")
    add("float64", lambda x: x["q"].double() @ x["k"].double(), "pass")
    add("[[score]] 的 0 维张量", lambda x: torch.tensor([[dot(x).item()]]).squeeze(), "pass")
    add("q.mul_(k); score = q.sum()（改了 q，分数却对）", lambda x: dot(x), "pass",
        lambda x: {"q": x["q"] * x["k"], "Q": torch.cat([x["Q"][:1], (x["q"] * x["k"])[None], x["Q"][2:]])})
    # 错误
    add("忘了 .sum()", lambda x: x["q"] * x["k"], "shape_not_summed")
    add("外积", lambda x: torch.outer(x["q"], x["k"]), "shape_matrix")
    add("整张分数矩阵", lambda x: x["Q"] @ x["K"].T, "shape_matrix")
    add("[1, 1] 的矩阵", lambda x: x["q"][None] @ x["k"][:, None], "shape_other")
    add("一维长度 1", lambda x: dot(x)[None], "shape_other")
    add("q @ K.T（q 对所有 Key 的一行分数）", lambda x: x["q"] @ x["K"].T, "row_of_scores")
    add("Q @ k（所有 Query 对 k 的一列分数）", lambda x: x["Q"] @ x["k"], "row_of_scores")
    add("除以 √d_k", lambda x: dot(x) / 2, "scaled")
    add(".mean()", lambda x: (x["q"] * x["k"]).mean(), "mean")
    add("负号", lambda x: -dot(x), "sign")
    add("相减", lambda x: -(x["q"] * x["k"]).sum(), "sign")
    add("先求和再相乘", lambda x: x["q"].sum() * x["k"].sum(), "sum_then_multiply")
    add("q·q", lambda x: (x["q"] * x["q"]).sum(), "q_with_itself")
    add("k·k", lambda x: (x["k"] * x["k"]).sum(), "k_with_itself")
    add("距离平方", lambda x: (x["q"] - x["k"]).pow(2).sum(), "distance")
    add("余弦相似度", lambda x: F.cosine_similarity(x["q"], x["k"], dim=0), "cosine")
    add("除以两个长度", lambda x: dot(x) / (x["q"].norm() * x["k"].norm()), "cosine")
    add("取整", lambda x: float(int(dot(x))), "rounding")
    for d in (1, 2, 3):
        add(f"四舍五入到 {d} 位", lambda x, d=d: round(float(dot(x)), d), "rounding")
    n = 3
    for a in range(n):
        for b in range(n):
            if (a, b) == (1, 2):
                continue
            expect = "swapped_roles" if (a, b) == (2, 1) else "wrong_rows"
            add(f"Q[{a}]·K[{b}]", lambda x, a=a, b=b: (x["Q"][a] * x["K"][b]).sum(), expect)
    for a in range(n):
        for b in range(a, n):
            if (a, b) != (1, 1):
                add(f"Q[{a}]·Q[{b}]", lambda x, a=a, b=b: (x["Q"][a] * x["Q"][b]).sum(), "both_from_Q")
            if (a, b) != (2, 2):
                add(f"K[{a}]·K[{b}]", lambda x, a=a, b=b: (x["K"][a] * x["K"][b]).sum(), "both_from_K")
    add("q = Q[2]（改了 q）", lambda x: (x["Q"][2] * x["k"]).sum(), "wrong_rows",
        lambda x: {"q": x["Q"][2]})
    add("Q = Q / √d_k 之后再取 q", lambda x: dot(x) / 2, "scaled",
        lambda x: {"q": x["q"] / 2, "Q": x["Q"] / 2})
    add("加了 1", lambda x: dot(x) + 1, "plus_one")
    add("没缩放就 softmax 的权重（r36c F7）", lambda x: torch.softmax(x["Q"][1] @ x["K"].T, -1)[2], "attention_weight")
    add("(q + k).sum()", lambda x: (x["q"] + x["k"]).sum(), "sum_of_sums")
    add("只有 q.sum()", lambda x: x["q"].sum(), "only_q")
    add("除以 d_k（q @ k / 4）", lambda x: x["q"] @ x["k"] / 4, "mean")
    add("np.round 2 位", lambda x: np.round(float(dot(x)), 2), "rounding")
    # 照着 ✔ 消息（:.4f）或打印出的张量抄下的数：在容差之内，也不是算出来的
    for d in (4, 5):
        add(f"抄下 {d} 位小数", lambda x, d=d: round(float(dot(x)), d), "rounding")
    add("抄成 torch.tensor（float32）", lambda x: torch.tensor(round(float(dot(x)), 4)), "rounding")
    add("抄成 float64 张量", lambda x: torch.tensor(round(float(dot(x)), 4), dtype=torch.float64),
        "rounding")
    add("抄成 np.float32", lambda x: np.float32(round(float(dot(x)), 4)), "rounding")
    # 正确：float32 或 float64，任何求和顺序
    add("倒着求和（float32）", lambda x: (x["q"] * x["k"]).flip(0).sum(), "pass")
    add("逐项累加（float32）", lambda x: sum((x["q"] * x["k"]).unbind(), torch.tensor(0.0)), "pass")
    add("cumsum 的最后一项", lambda x: (x["q"] * x["k"]).cumsum(0)[-1], "pass")
    add("math.fsum（float64）", lambda x: math.fsum(float(a) * float(b)
                                                   for a, b in zip(x["q"], x["k"])), "pass")
    add("np.float32 的点积", lambda x: np.dot(x["q"].numpy(), x["k"].numpy()), "pass")
    add("torch.dot(q, q)", lambda x: torch.dot(x["q"], x["q"]), "q_with_itself")
    add("q * k 的列表", lambda x: (x["q"] * x["k"]).tolist(), "shape_not_summed")
    add("没填", lambda x: None, "not_filled")
    add("半精度", lambda x: dot(x).half(), "dtype")
    add("字符串", lambda x: "0.28", "type")
    add("NaN", lambda x: float("nan"), "nan")
    return c


# ---------------------------------------------------------------- 1（二）S

def _matrix_cases():
    c = []
    add = lambda label, make, expect, given=None: c.append(
        Case("1b", label, lambda x, m=make: {"S": m(x)}, expect, given or (lambda x: {})))
    S = lambda x: x["Q"] @ x["K"].T
    add("Q @ K.T", S, "pass")
    add("torch.matmul + transpose", lambda x: torch.matmul(x["Q"], x["K"].transpose(0, 1)), "pass")
    add("einsum", lambda x: torch.einsum("id,jd->ij", x["Q"], x["K"]), "pass")
    add("两层循环", lambda x: _loop(x, lambda Q, K, i, j: (Q[i] * K[j]).sum()), "pass")
    add("广播再求和", lambda x: (x["Q"][:, None, :] * x["K"][None]).sum(-1), "pass")
    add("循环里 torch.cosine_similarity", lambda x: _loop(
        x, lambda Q, K, i, j: torch.cosine_similarity(Q[i], K[j], dim=0)), "cosine")
    add("循环里 (Q[i] + K[j]).sum()", lambda x: _loop(x, lambda Q, K, i, j: (Q[i] + K[j]).sum()), "sum_of_sums")
    add("torch.cdist(Q, K)", lambda x: torch.cdist(x["Q"], x["K"]), "distance")
    add("循环里 (Q[i] * K).sum()", lambda x: _loop(x, lambda Q, K, i, j: (Q[i] * K).sum()), "row_against_all_keys")
    add("S[i, j] = d 写在循环外面", lambda x: _loop(
        x, lambda Q, K, i, j: (Q[i] * K[j]).sum() if (i, j) == (2, 2) else None), "only_last_cell")
    add("numpy", lambda x: x["Q"].numpy() @ x["K"].numpy().T, "pass")
    add("F.linear", lambda x: F.linear(x["Q"], x["K"]), "pass")
    add("tolist", lambda x: S(x).tolist(), "pass")
    add("float64", lambda x: x["Q"].double() @ x["K"].double().T, "pass")
    add("Q @ K.mT", lambda x: x["Q"] @ x["K"].mT, "pass")
    add("K @ Q.T", lambda x: x["K"] @ x["Q"].T, "transposed")
    add("循环写成 S[j, i]", lambda x: _loop(x, lambda Q, K, i, j: (Q[j] * K[i]).sum()), "transposed")
    add("除以 √d_k", lambda x: S(x) / 2, "scaled")
    add("Q = Q / √d_k（改了 Q）", lambda x: (x["Q"] / 2) @ x["K"].T, "scaled", lambda x: {"Q": x["Q"] / 2})
    add("除以 d_k", lambda x: S(x) / 4, "divided_by_d_k")
    add("softmax 行", lambda x: torch.softmax(S(x), -1), "softmax_rows")
    add("softmax 列", lambda x: torch.softmax(S(x), 0), "softmax_columns")
    add("注意力权重", lambda x: torch.softmax(S(x) / 2, -1), "attention_weights")
    add("负号", lambda x: -S(x), "sign")
    add("Q @ Q.T", lambda x: x["Q"] @ x["Q"].T, "q_q")
    add("K @ K.T", lambda x: x["K"] @ x["K"].T, "k_k")
    add("第二个下标写成 i", lambda x: _loop(x, lambda Q, K, i, j: (Q[i] * K[i]).sum()), "row_index")
    add("第一个下标写成 j", lambda x: _loop(x, lambda Q, K, i, j: (Q[j] * K[j]).sum()), "column_index")
    add("range(seq_len - 1) 的 i", lambda x: _loop(x, lambda Q, K, i, j: (Q[i] * K[j]).sum() if i < 2 else None),
        "last_row_unfilled")
    add("range(seq_len - 1) 的 j", lambda x: _loop(x, lambda Q, K, i, j: (Q[i] * K[j]).sum() if j < 2 else None),
        "last_column_unfilled")
    add("两个 range 都少一", lambda x: _loop(x, lambda Q, K, i, j: (Q[i] * K[j]).sum() if i < 2 and j < 2 else None),
        "last_row_and_column_unfilled")
    add("全 0（循环没有写回）", lambda x: torch.zeros(3, 3), "all_zero")
    add("(Q @ K.T) * tril", lambda x: S(x) * _tril(), "lower_triangle_only")
    add("masked_fill 成 0", lambda x: S(x).masked_fill(_tril() == 0, 0.0), "lower_triangle_only")
    add("跳过了 i == j", lambda x: _loop(x, lambda Q, K, i, j: (Q[i] * K[j]).sum() if i != j else None),
        "diagonal_zero")
    add("循环在 (1, 1) 出错停下", lambda x: _loop(x, lambda Q, K, i, j: (Q[i] * K[j]).sum() if i * 3 + j < 4 else None),
        "stopped")
    add("循环在 (0, 2) 出错停下", lambda x: _loop(x, lambda Q, K, i, j: (Q[i] * K[j]).sum() if i * 3 + j < 2 else None),
        "stopped")
    add("只填了对角线", lambda x: torch.diag(S(x).diagonal()), "diagonal_only")
    add("四舍五入 2 位", lambda x: torch.round(S(x), decimals=2), "rounding")
    add("四舍五入 1 位", lambda x: torch.round(S(x), decimals=1), "rounding")
    add("已经遮蔽成 -inf", lambda x: S(x).masked_fill(_tril() == 0, NEG_INF), "masked")
    add("Q.T @ K", lambda x: x["Q"].T @ x["K"], "shape_features")
    add("Q * K", lambda x: x["Q"] * x["K"], "shape_elementwise")
    add("多一维", lambda x: S(x)[None], "shape_extra_dim")
    add("只有两行", lambda x: S(x)[:2], "shape_other")
    add("加了 1", lambda x: S(x) + 1, "constant_offset")
    add("一格算错", lambda x: S(x).index_put((torch.tensor(1), torch.tensor(2)), torch.tensor(5.0)), "cells")
    add("K 的行反了", lambda x: x["Q"] @ x["K"].flip(0).T, "keys_reversed")
    add("einsum 写反 ij->ji", lambda x: torch.einsum("id,jd->ji", x["Q"], x["K"]), "transposed")
    add("K.T @ Q 的形状", lambda x: x["K"].T @ x["Q"], "shape_features")
    add("Q @ Q.T / √d_k", lambda x: x["Q"] @ x["Q"].T, "q_q")
    add("负的转置", lambda x: -(x["K"] @ x["Q"].T), "transposed_sign")
    add("没填", lambda x: None, "not_filled")
    add("整数张量", lambda x: S(x).long(), "dtype")
    return c


# ---------------------------------------------------------------- 2（一）mask

def _mask_cases():
    c = []
    add = lambda label, make, expect, given=None: c.append(
        Case("2a", label, lambda x, m=make: {"mask": m(x)}, expect, given or (lambda x: {})))
    add("tril(ones)", lambda x: _tril(), "pass")
    add("bool", lambda x: _tril().bool(), "pass")
    add("int64", lambda x: torch.tril(torch.ones(3, 3, dtype=torch.int64)), "pass")
    add("uint8", lambda x: torch.tril(torch.ones(3, 3, dtype=torch.uint8)), "pass")
    add("numpy bool", lambda x: np.tril(np.ones((3, 3), dtype=bool)), "pass")
    add("numpy float", lambda x: np.tril(np.ones((3, 3))), "pass")
    add("列表", lambda x: [[1, 0, 0], [1, 1, 0], [1, 1, 1]], "pass")
    add("arange 比较", lambda x: torch.arange(3)[:, None] >= torch.arange(3), "pass")
    add("~triu(…, 1)", lambda x: ~torch.ones(3, 3, dtype=torch.bool).triu(1), "pass")
    add("float64", lambda x: _tril().double(), "pass")
    add("triu", lambda x: torch.triu(torch.ones(3, 3)), "triu")
    add("含义反了（bool）", lambda x: torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1), "inverted")
    add("1 - tril", lambda x: 1 - _tril(), "inverted")
    add("全 1", lambda x: torch.ones(3, 3), "all_ones")
    add("全 0", lambda x: torch.zeros(3, 3), "all_zero")
    add("tril(diagonal=1)", lambda x: torch.tril(torch.ones(3, 3), diagonal=1), "diagonal_plus_one")
    add("tril(diagonal=-1)", lambda x: torch.tril(torch.ones(3, 3), diagonal=-1), "diagonal_minus_one")
    add("eye", lambda x: torch.eye(3), "eye")
    add("seq_len = 4 留下来的 4×4", lambda x: torch.tril(torch.ones(4, 4)), "shape", lambda x: {"seq_len": 4})
    add("2×2", lambda x: torch.tril(torch.ones(2, 2)), "shape")
    add("多一维", lambda x: _tril()[None], "shape")
    add("-inf 的加性 mask", lambda x: torch.zeros(3, 3).masked_fill(_tril() == 0, NEG_INF), "additive")
    add("-1e9 的加性 mask", lambda x: torch.zeros(3, 3).masked_fill(_tril() == 0, -1e9), "additive")
    add("乘了 2", lambda x: _tril() * 2, "values_range")
    add("NaN", lambda x: torch.full((3, 3), float("nan")), "nan")
    add("一格错", lambda x: _tril().index_put((torch.tensor(2), torch.tensor(0)), torch.tensor(0.0)), "cells")
    add("tril(diagonal=-2)", lambda x: torch.tril(torch.ones(3, 3), diagonal=-2), "cells")
    add("triu(…, 1) 的 0/1（浮点）", lambda x: torch.triu(torch.ones(3, 3), 1), "inverted")
    add("tril == 0", lambda x: _tril() == 0, "inverted")
    add("triu == 0", lambda x: torch.triu(torch.ones(3, 3)) == 0, "diagonal_minus_one")
    add("numpy triu", lambda x: np.triu(np.ones((3, 3))), "triu")
    add("列表写成上三角", lambda x: [[1, 1, 1], [0, 1, 1], [0, 0, 1]], "triu")
    add("tril(diagonal=2)", lambda x: torch.tril(torch.ones(3, 3), 2), "all_ones")
    add("mask.T", lambda x: _tril().T, "triu")
    add("[3, 3, 1]", lambda x: _tril()[..., None], "shape")
    add("seq_len = 4 留下来，mask 却是 3×3", lambda x: _tril(), "pass", lambda x: {"seq_len": 4})
    add("没填", lambda x: None, "not_filled")
    add("字符串", lambda x: "tril", "type")
    return c


# ---------------------------------------------------------------- 2（二）weights

def _weights_cases():
    c = []
    add = lambda label, make, expect, given=None: c.append(
        Case("2b", label, lambda x, m=make: {"weights": m(x)}, expect, given or (lambda x: {})))
    W = lambda x: _weights(x["scores"])
    s = lambda x: x["scores"]
    fut = lambda: _tril() == 0
    add("正确", W, "pass")
    add("float64", lambda x: W(x).double(), "pass")
    add("numpy", lambda x: W(x).numpy(), "pass")
    add("F.scaled_dot_product_attention（V 用单位矩阵）",
        lambda x: F.scaled_dot_product_attention(x["Q"], x["K"], torch.eye(3), is_causal=True), "pass")
    add("填 -1e9", lambda x: _weights(s(x), -1e9), "pass")
    add("填 finfo.min", lambda x: _weights(s(x), torch.finfo(torch.float32).min), "pass")
    add("bool mask", lambda x: torch.softmax(s(x).masked_fill(~_tril().bool(), NEG_INF), -1), "pass")
    add("torch.where", lambda x: torch.softmax(torch.where(_tril().bool(), s(x), NEG_INF), -1), "pass")
    add("加性 mask", lambda x: torch.softmax(s(x) + torch.zeros(3, 3).masked_fill(fut(), NEG_INF), -1), "pass")
    add("先 softmax 再遮蔽、再按行归一化",
        lambda x: (lambda p: p / p.sum(-1, keepdim=True))(torch.softmax(s(x), -1) * _tril()), "pass")
    add("手写 exp / sum", lambda x: (lambda e: e / e.sum(-1, keepdim=True))(torch.exp(s(x)) * _tril()), "pass")
    add("nn.Softmax(dim=1)", lambda x: torch.nn.Softmax(dim=1)(s(x).masked_fill(fut(), NEG_INF)), "pass")
    add("填 -100", lambda x: _weights(s(x), -100.0), "pass")
    add("单位矩阵", lambda x: torch.eye(3), "eye")
    add("平均分配", lambda x: _tril() / _tril().sum(-1, keepdim=True), "uniform")
    add("scores 本身", s, "scores_themselves")
    add("遮蔽成 0、没 softmax", lambda x: s(x).masked_fill(fut(), 0.0), "masked_with_zero_no_softmax")
    add("先 softmax 再乘 mask", lambda x: torch.softmax(s(x), -1) * _tril(), "softmax_then_mask")
    add("没有遮蔽", lambda x: torch.softmax(s(x), -1), "no_mask")
    add("填 0", lambda x: _weights(s(x), 0.0), "filled_zero")
    add("乘 mask 再 softmax", lambda x: torch.softmax(s(x) * _tril(), -1), "filled_zero")
    add("mask 加到分数上", lambda x: torch.softmax(s(x) + _tril(), -1), "mask_added")
    add("遮蔽反了 -1e9", lambda x: torch.softmax(s(x).masked_fill(_tril() == 1, -1e9), -1), "inverted")
    add("遮蔽反了 -inf", lambda x: torch.softmax(s(x).masked_fill(_tril() == 1, NEG_INF), -1), "inverted")
    add("遮蔽反了 mask.bool()", lambda x: torch.softmax(s(x).masked_fill(_tril().bool(), NEG_INF), -1), "inverted")
    add("tril(diagonal=1)", lambda x: _weights(s(x), mask=torch.tril(torch.ones(3, 3), 1)), "diagonal_plus_one")
    add("dim=0", lambda x: _weights(s(x), dim=0), "wrong_dim")
    add("triu 遮蔽", lambda x: _weights(s(x), mask=_tril().T), "triu")
    add("只做了 exp", lambda x: torch.exp(s(x).masked_fill(fut(), NEG_INF)), "exp_only")
    add("转置", lambda x: W(x).T, "transposed")
    add("没缩放的分数", lambda x: _weights(x["Q"] @ x["K"].T), "unscaled")
    add("scores = Q @ K.T（改了 scores）", lambda x: _weights(x["Q"] @ x["K"].T), "unscaled",
        lambda x: {"scores": x["Q"] @ x["K"].T})
    add("又除了 √d_k", lambda x: _weights(s(x) / 2), "scaled_twice")
    add("scores /= √d_k 原地改了", lambda x: _weights(s(x) / 2), "scaled_twice",
        lambda x: {"scores": x["scores"] / 2})
    add("除以 d_k", lambda x: _weights(x["Q"] @ x["K"].T / 4), "scaled_twice")
    add("没 softmax（-inf）", lambda x: s(x).masked_fill(fut(), NEG_INF), "not_softmaxed")
    add("log_softmax", lambda x: torch.log_softmax(s(x).masked_fill(fut(), NEG_INF), -1), "log_softmax")
    add("softmax 之后填 -inf", lambda x: torch.softmax(s(x), -1).masked_fill(fut(), NEG_INF), "softmax_then_neg_inf")
    add("没缩放、没 softmax", lambda x: (x["Q"] @ x["K"].T).masked_fill(fut(), NEG_INF), "unscaled_not_softmaxed")
    add("对角线也遮住", lambda x: _weights(s(x), mask=torch.tril(torch.ones(3, 3), -1)), "diagonal_masked")
    add("填 +inf", lambda x: _weights(s(x), float("inf")), "filled_pos_inf")
    add("填 -10", lambda x: _weights(s(x), -10.0), "small_leak")
    add("填 -5", lambda x: _weights(s(x), -5.0), "small_leak")
    add("四舍五入 2 位", lambda x: torch.round(W(x), decimals=2), "rounding")
    add("四舍五入 3 位", lambda x: torch.round(W(x), decimals=3), "rounding")
    add("少一行", lambda x: W(x)[:2], "shape")
    add("多一维", lambda x: W(x)[None], "shape")
    add("半精度", lambda x: W(x).half(), "dtype")
    add("整数", lambda x: W(x).long(), "dtype")
    add("别的分数的权重", lambda x: _weights(torch.randn(3, 3, generator=torch.Generator().manual_seed(1))), "values")
    add("乘了 0.5", lambda x: W(x) * 0.5, "scaled_weights")
    add("triu 遮蔽 -1e9", lambda x: _weights(s(x), -1e9, mask=_tril().T), "triu")
    add("dim=0，填 -1e9", lambda x: _weights(s(x), -1e9, dim=0), "wrong_dim")
    add("没缩放，填 -1e9", lambda x: _weights(x["Q"] @ x["K"].T, -1e9), "unscaled")
    add("对 mask 本身做 softmax", lambda x: _weights(_tril()), "uniform")
    add("masked_fill(~eye)", lambda x: _weights(s(x), mask=torch.eye(3)), "eye")
    add("F.softmax(dim=0)", lambda x: F.softmax(s(x).masked_fill(fut(), NEG_INF), dim=0), "wrong_dim")
    add("softmax 后乘 bool mask", lambda x: torch.softmax(s(x), -1) * _tril().bool(), "softmax_then_mask")
    add("填 -1", lambda x: _weights(s(x), -1.0), "small_leak")
    add("没填", lambda x: None, "not_filled")
    return c


# ---------------------------------------------------------------- 3 FFN 参数

H, FF = 512, 2048
R1, R2 = FF * H + FF, H * FF + H


def _ffn_cases():
    c = []

    def add(label, w1, w2, total, expect):
        c.append(Case("3", label, lambda x, a=(w1, w2, total): dict(zip(
            ("w1_params", "w2_params", "total_params"), a)), expect))

    add("正确", R1, R2, R1 + R2, "pass")
    add("numpy 整数", np.int64(R1), np.int32(R2), np.int64(R1 + R2), "pass")
    add("0 维整数张量", torch.tensor(R1), torch.tensor(R2), torch.tensor(R1 + R2), "pass")
    add("int(...) 之后", int(float(R1)), R2, R1 + R2, "pass")
    add("nn.Linear 数出来", sum(p.numel() for p in torch.nn.Linear(H, FF).parameters()),
        sum(p.numel() for p in torch.nn.Linear(FF, H).parameters()), R1 + R2, "pass")
    add("W1 漏偏置", FF * H, R2, FF * H + R2, "no_bias")
    add("W2 漏偏置", R1, FF * H, R1 + FF * H, "no_bias")
    add("两层都漏偏置", FF * H, FF * H, 2 * FF * H, "no_bias")
    add("W1 偏置按输入", FF * H + H, R2, FF * H + H + R2, "bias_by_input")
    add("W2 偏置按输入", R1, FF * H + FF, R1 + FF * H + FF, "bias_by_input")
    add("两层偏置都按输入（= 对调）", FF * H + H, FF * H + FF, R1 + R2, "swapped")
    add("对调", R2, R1, R1 + R2, "swapped")
    add("一层一个偏置", FF * H + 1, R2, FF * H + 1 + R2, "one_bias")
    add("W1 含两层偏置", FF * H + FF + H, R2, FF * H + FF + H + R2, "both_biases")
    add("W1 含两层", 2 * FF * H + FF + H, R2, 2 * FF * H + FF + H + R2, "both_layers")
    add("W1 两层权重", 2 * FF * H, R2, 2 * FF * H + R2, "both_layers")
    add("维度相加", FF + H, R2, FF + H + R2, "added_dims")
    add("维度相加再加偏置", FF + H + FF, R2, FF + H + FF + R2, "added_dims")
    add("d_ff 自乘", FF * FF + FF, R2, FF * FF + FF + R2, "squared_dim")
    add("hidden 自乘", R1, H * H + H, R1 + H * H + H, "squared_dim")
    add("约一百万", 1_050_000, R2, 1_050_000 + R2, "approximate")
    add("约 105 万（W2）", R1, 1_050_000, R1 + 1_050_000, "approximate")
    add("差一", R1 + 1, R2, R1 + 1 + R2, "off_by_one")
    add("少一", R1, R2 - 1, R1 + R2 - 1, "off_by_one")
    add("(h+1)*(f+1)", (H + 1) * (FF + 1), R2, (H + 1) * (FF + 1) + R2, "both_dims_plus_one")
    add("偏置算了两遍", FF * H + 2 * FF, R2, FF * H + 2 * FF + R2, "bias_twice")
    add("W1 是别的数", 12_345, R2, 12_345 + R2, "layer")
    add("W2 偏置按输入、W1 对", R1, FF * H + FF, R1 + FF * H + FF, "bias_by_input")
    add("W2 一层一个偏置", R1, FF * H + 1, R1 + FF * H + 1, "one_bias")
    add("W2 含两层", R1, 2 * FF * H + FF + H, R1 + 2 * FF * H + FF + H, "both_layers")
    add("W2 偏置两遍", R1, FF * H + 2 * H, R1 + FF * H + 2 * H, "bias_twice")
    add("W2 (h+1)*(f+1)", R1, (H + 1) * (FF + 1), R1 + (H + 1) * (FF + 1), "both_dims_plus_one")
    add("W2 约 105 万", R1, 1_049_000, R1 + 1_049_000, "approximate")
    add("总数约 2,099,000", R1, R2, 2_099_000, "total_approximate")
    add("总数漏偏置", R1, R2, 2 * FF * H, "total_no_bias")
    add("总数一层偏置", R1, R2, 2 * FF * H + FF, "total_one_bias")
    add("总数乘 2", R1, R2, 2 * R1, "total_doubled")
    add("总数相乘", R1, R2, R1 * R2, "total_product")
    add("总数约 210 万", R1, R2, 2_100_000, "total_approximate")
    add("总数加了 LayerNorm", R1, R2, R1 + R2 + 2 * H, "total_layernorm")
    add("总数除以 2", R1, R2, (R1 + R2) // 2, "total_halved")
    add("总数差一", R1, R2, R1 + R2 + 1, "total_off_by_one")
    add("总数乱写", R1, R2, 123, "total")
    add("浮点数", float(R1), R2, R1 + R2, "float_count")
    add("除法得到的浮点总数", R1, R2, (R1 + R2) / 1, "float_count")
    add("浮点张量", torch.tensor(float(R1)), R2, R1 + R2, "float_count")
    add("布尔", True, R2, R1 + R2, "type")
    add("字符串", "一百万", R2, R1 + R2, "type")
    add("一维张量", torch.tensor([R1]), R2, R1 + R2, "shape")
    add("w1 浮点、w2 字符串（都要说出来）", float(R1), str(R2), R1 + R2, "float_count")
    add("w1 没填", None, R2, R1 + R2, "not_filled")
    add("都没填", None, None, None, "not_filled")
    return c


CASES: list[Case] = _dot_cases() + _matrix_cases() + _mask_cases() + _weights_cases() + _ffn_cases()


# ---------------------------------------------------------------- 4（一）拆头、合并；4（二）多头注意力

def _split(x):
    return x.view(1, 3, 2, 4).transpose(1, 2)


def _heads_cases():
    c = []

    def add(label, heads, merged, expect, given=None):
        c.append(Case("4a", label, lambda x, h=heads, m=merged: {"heads": h(x), "merged": m(x)}, expect,
                      given or (lambda x: {})))

    right_h = lambda x: _split(x["x"])
    right_m = lambda x: _split(x["x"]).transpose(1, 2).contiguous().view(1, 3, 8)
    add("两个头都拿前 4 维", lambda x: x["x"][..., :4].unsqueeze(1).repeat(1, 2, 1, 1), right_m, "all_heads_head_0")
    add("view + transpose，transpose + contiguous + view", right_h, right_m, "pass")
    add("reshape 与 permute", lambda x: x["x"].reshape(1, 3, 2, 4).permute(0, 2, 1, 3),
        lambda x: _split(x["x"]).permute(0, 2, 1, 3).reshape(1, 3, 8), "pass")
    add("einops 式的 unflatten", lambda x: x["x"].unflatten(-1, (2, 4)).transpose(1, 2),
        lambda x: _split(x["x"]).transpose(1, 2).flatten(2), "pass")
    add("torch.stack 按头切片", lambda x: torch.stack([x["x"][..., :4], x["x"][..., 4:]], dim=1),
        lambda x: torch.cat([_split(x["x"])[:, 0], _split(x["x"])[:, 1]], dim=-1), "pass")
    add("numpy", lambda x: _split(x["x"]).numpy(), lambda x: x["x"].numpy(), "pass")
    add("merged 直接用 x.clone()", right_h, lambda x: x["x"].clone(), "pass")
    add("heads 交四层的嵌套列表", lambda x: _split(x["x"]).tolist(), lambda x: x["x"].tolist(), "pass")
    add("heads 是 numpy 的 float64", lambda x: _split(x["x"]).double().numpy(), right_m, "pass")
    add("直接 view 成 [1, 2, 3, 4]", lambda x: x["x"].view(1, 2, 3, 4), right_m, "view_without_transpose")
    add("reshape 成 [1, 2, 3, 4]", lambda x: x["x"].reshape(1, 2, 3, 4), right_m, "view_without_transpose")
    add("头交错", lambda x: x["x"].view(1, 3, 4, 2).permute(0, 3, 1, 2), right_m, "interleaved")
    add("头的顺序反了", lambda x: _split(x["x"]).flip(1), right_m, "heads_reversed")
    add("忘了 transpose", lambda x: x["x"].view(1, 3, 2, 4), right_m, "shape_no_transpose")
    add("没有拆开", lambda x: x["x"], right_m, "shape_not_split")
    add("合并没有 transpose", right_h, lambda x: _split(x["x"]).reshape(1, 3, 8), "merge_without_transpose")
    add("合并交错", right_h, lambda x: _split(x["x"]).permute(0, 2, 3, 1).reshape(1, 3, 8), "merge_interleaved")
    add("合并只 transpose 没 view", right_h, lambda x: _split(x["x"]).transpose(1, 2), "merge_not_flattened")
    add("合并交了 heads", right_h, lambda x: _split(x["x"]), "merge_shape_heads_first")
    add("merged 乘了 2", right_h, lambda x: 2 * x["x"], "values")
    add("heads 没填", lambda x: None, right_m, "not_filled")
    add("merged 没填", right_h, lambda x: None, "not_filled")
    add("x = x * 2 之后再拆", lambda x: _split(2 * x["x"]), lambda x: 2 * x["x"], "values",
        lambda x: {"x": 2 * x["x"]})
    # 教师试用报告 r36b 的 F5：形状不对时也说出错在哪
    add("拆成 4 个头、每个 2 维", lambda x: x["x"].view(1, 3, 4, 2).transpose(1, 2),
        lambda x: x["x"].view(1, 3, 4, 2).transpose(1, 2).transpose(1, 2).reshape(1, 3, 8), "shape_heads_d_k_swapped")
    add("transpose(2, 3)", lambda x: x["x"].view(1, 3, 2, 4).transpose(2, 3), right_m, "shape_wrong_transpose")
    add("合并时沿 seq 拼接", right_h, lambda x: torch.cat([_split(x["x"])[:, 0], _split(x["x"])[:, 1]], dim=1),
        "merge_cat_along_seq")
    add("丢了 batch 维", lambda x: x["x"][0].view(3, 2, 4).transpose(0, 1),
        lambda x: x["x"][0].view(3, 2, 4).reshape(3, 8), "shape_no_batch")
    add("heads 之后又 transpose 了一次", lambda x: _split(x["x"]).transpose(2, 3), right_m, "shape_seq_d_k_swapped")
    # 教师试用报告 r36c 的 F7：以前只说“与正确结果不一致”或一句光秃秃的形状
    add("合并时头的顺序反了", right_h, lambda x: torch.cat([_split(x["x"])[:, 1], _split(x["x"])[:, 0]], dim=-1),
        "merge_heads_reversed")
    add("合并成了各头之和", right_h, lambda x: _split(x["x"]).sum(1), "merge_summed")
    add("合并后 reshape 成 [1, 8, 3]", right_h, lambda x: _split(x["x"]).transpose(1, 2).reshape(1, 8, 3),
        "merge_seq_d_model_swapped")
    add("先把 x 转置再 reshape", lambda x: x["x"].transpose(1, 2).reshape(1, 2, 3, 4),
        lambda x: x["x"].transpose(1, 2).reshape(1, 2, 3, 4).transpose(1, 2).reshape(1, 3, 8),
        "split_after_transposing_x")
    add("拆头时除以了 √d_k", lambda x: _split(x["x"] / 2), lambda x: x["x"] / 2, "split_scaled")
    return c


def _mha_ref(x, **kw):
    from minigpt.homework.mha_forward import mha_by_steps

    return mha_by_steps(x["x"], x["mha"], **kw).float()


def _mha_hand(x, q=None, out=None):
    """学生一步一步手写的作业 4（二）：q(x) 换掉 W_Q 的投影、out(m) 换掉 W_O 的投影（None 时用层本身）。"""
    from minigpt.attention import causal_mask

    mha, t = x["mha"], x["x"]
    split = lambda y: y.view(1, 3, 2, 4).transpose(1, 2)
    Q = split(q(t) if q else mha.W_Q(t))
    K, V = split(mha.W_K(t)), split(mha.W_V(t))
    att = (Q @ K.transpose(-2, -1) / math.sqrt(4)).masked_fill(causal_mask(3) == 0, NEG_INF)
    m = (torch.softmax(att, dim=-1) @ V).transpose(1, 2).reshape(1, 3, 8)
    return out(m) if out else mha.W_O(m)


def _mha_cases():
    from minigpt.attention import causal_mask
    from minigpt.layers import NaiveMultiHeadAttention

    c = []
    add = lambda label, make, expect, given=None: c.append(
        Case("4b", label, lambda x, m=make: {"attn_out": m(x)}, expect, given or (lambda x: {})))
    add("mha(x, mask)", lambda x: x["mha"](x["x"], causal_mask(3)), "pass")
    add("一步一步", lambda x: _mha_ref(x), "pass")
    add("F.scaled_dot_product_attention(is_causal=True)", lambda x: x["mha"].W_O(
        F.scaled_dot_product_attention(*(x["mha"].split_heads(layer(x["x"])) for layer in (
            x["mha"].W_Q, x["mha"].W_K, x["mha"].W_V)), is_causal=True).transpose(1, 2).reshape(1, 3, 8)), "pass")
    add("逐头写法", lambda x: NaiveMultiHeadAttention.from_fused(x["mha"])(x["x"], causal_mask(3)), "pass")
    add("bool mask", lambda x: x["mha"](x["x"], causal_mask(3).bool()), "pass")
    add("没有遮蔽", lambda x: x["mha"](x["x"]), "no_mask")
    add("除以 √d_model", lambda x: _mha_ref(x, scale="d_model"), "scaled_by_d_model")
    add("没有缩放", lambda x: _mha_ref(x, scale="none"), "unscaled")
    add("忘了 W_O", lambda x: _mha_ref(x, w_o=False), "no_w_o")
    add("拆头没 transpose", lambda x: _mha_ref(x, split="no_transpose"), "split_without_transpose")
    add("合并没 transpose", lambda x: _mha_ref(x, merge="no_transpose"), "merge_without_transpose")
    add("softmax dim=-2", lambda x: _mha_ref(x, dim=-2), "wrong_dim")
    # 少见但正确
    add("F.scaled_dot_product_attention 带布尔 attn_mask", lambda x: x["mha"].W_O(
        F.scaled_dot_product_attention(*(x["mha"].split_heads(layer(x["x"])) for layer in (
            x["mha"].W_Q, x["mha"].W_K, x["mha"].W_V)), attn_mask=causal_mask(3).bool()).transpose(1, 2).reshape(1, 3, 8)),
        "pass")
    add("填 -1e9", lambda x: _mha_ref(x, fill=-1e9), "pass")
    add("mha(x, mask)[0] 的 batch 维还在", lambda x: x["mha"](x["x"], causal_mask(3)).double(), "pass")
    add("W_O 按头切成两段再相加、偏置只加一次", lambda x: _mha_ref(x, w_o_per_head=True) - x["mha"].W_O.bias, "pass")
    # 遮蔽的错误（作业 2（二）认得的那些）
    add("先 softmax 再乘 mask", lambda x: _mha_ref(x, mask="after_softmax"), "softmax_then_mask")
    add("填 0", lambda x: _mha_ref(x, mask="fill_zero"), "filled_zero")
    add("分数乘 mask", lambda x: _mha_ref(x, mask="fill_zero"), "filled_zero")
    add("0/1 的 mask 加到分数上", lambda x: _mha_ref(x, mask="added"), "mask_added")
    add("0/1 浮点 mask 传给 F.scaled_dot_product_attention", lambda x: x["mha"].W_O(
        F.scaled_dot_product_attention(*(x["mha"].split_heads(layer(x["x"])) for layer in (
            x["mha"].W_Q, x["mha"].W_K, x["mha"].W_V)), attn_mask=causal_mask(3).float()).transpose(1, 2).reshape(1, 3, 8)),
        "mask_added")
    add("triu", lambda x: _mha_ref(x, mask="triu"), "triu")
    add("tril(diagonal=1)", lambda x: _mha_ref(x, mask="diagonal_plus_one"), "diagonal_plus_one")
    add("遮蔽反了 -1e9", lambda x: _mha_ref(x, mask="inverted", fill=-1e9), "inverted")
    add("遮蔽反了 -inf（NaN）", lambda x: _mha_ref(x, mask="inverted"), "inverted")
    add("对角线也遮住（NaN）", lambda x: _mha_ref(x, mask="diagonal_masked"), "diagonal_masked")
    add("填 +inf（NaN）", lambda x: _mha_ref(x, fill=float("inf")), "filled_pos_inf")
    # 投影与缩放
    add("投影没加偏置", lambda x: _mha_ref(x, bias=False), "no_bias")
    add("x @ W 没转置", lambda x: _mha_ref(x, transpose_w=False), "weight_not_transposed")
    add("V 没有投影", lambda x: _mha_ref(x, project_v=False), "v_not_projected")
    add("Q、K 用反", lambda x: _mha_ref(x, swap_qk=True), "q_k_swapped")
    add("除以 d_k", lambda x: _mha_ref(x, scale="d_k_itself"), "scaled_by_d_k")
    add("缩放了两次", lambda x: _mha_ref(x, scale="d_k_itself"), "scaled_by_d_k")
    add("W_O 每个头用一次（偏置加了两次）", lambda x: _mha_ref(x, w_o_per_head=True), "w_o_per_head")
    add("只用一个头", lambda x: _mha_ref(x, single_head=True), "single_head")
    add("加了残差", lambda x: _mha_ref(x, residual=True), "residual_added")
    add("softmax 沿头（dim=1，NaN）", lambda x: _mha_ref(x, dim=1), "softmax_over_heads")
    add("softmax 沿头（dim=1，-1e9）", lambda x: _mha_ref(x, dim=1, fill=-1e9), "softmax_over_heads")
    # 自己想的
    add("Q、K、V 都用 W_Q", lambda x: _mha_ref(x, same_projection=True), "same_projection")
    add("权重转置了再乘 V", lambda x: _mha_ref(x, weights_transposed=True), "weights_transposed")
    add("没有 softmax（-inf → NaN）", lambda x: _mha_ref(x, softmax=False), "no_softmax")
    add("没有 softmax（填 0）", lambda x: _mha_ref(x, softmax=False, mask="fill_zero"), "no_softmax")
    # 手写的投影只错了一层、V 用了 W_K、缩放的位置和除数、填了不够小的有限值（r36a）
    hand = lambda x, q=None, out=None: _mha_hand(x, q, out)
    add("手写的投影、拆头、遮蔽、合并（都对）", lambda x: hand(x), "pass")
    add("x @ W_Q.weight.T 没加偏置", lambda x: hand(x, q=lambda t: t @ x["mha"].W_Q.weight.T), "no_bias_one_layer")
    add("x @ W_Q.weight + 偏置（没转置）",
        lambda x: hand(x, q=lambda t: t @ x["mha"].W_Q.weight + x["mha"].W_Q.bias), "weight_not_transposed_one_layer")
    add("m @ W_O.weight.T 没加偏置", lambda x: hand(x, out=lambda m: m @ x["mha"].W_O.weight.T), "no_bias_one_layer")
    add("m @ W_O.weight + 偏置（没转置）",
        lambda x: hand(x, out=lambda m: m @ x["mha"].W_O.weight + x["mha"].W_O.bias), "weight_not_transposed_one_layer")
    add("W_V 没加偏置", lambda x: _mha_ref(x, no_bias_in=("W_V",)), "no_bias_one_layer")
    add("只加了 W_O 的偏置", lambda x: hand(x, out=lambda m: m + x["mha"].W_O.bias), "w_o_bias_only")
    add("V 用了 W_K", lambda x: _mha_ref(x, v_layer="W_K"), "v_from_w_k")
    add("除以 √num_heads", lambda x: _mha_ref(x, scale="num_heads"), "scaled_by_num_heads")
    add("softmax 之后才除以 √d_k", lambda x: _mha_ref(x, scale_after_softmax=True), "scaled_after_softmax")
    add("遮蔽填 -3", lambda x: _mha_ref(x, fill=-3.0), "filled_finite")
    add("遮蔽填 -10", lambda x: _mha_ref(x, fill=-10.0), "filled_finite")
    add("交了各头的输出", lambda x: torch.zeros(1, 2, 3, 4), "shape_heads")
    add("多了 batch 以外的一维", lambda x: _mha_ref(x)[None], "shape")
    add("别的 x 算的", lambda x: x["mha"](torch.zeros(1, 3, 8), causal_mask(3)), "values")
    add("没填", lambda x: None, "not_filled")
    # r36b 的 F5
    add("K 也用了 W_Q（复制粘贴）", lambda x: _mha_ref(x, k_layer="W_Q"), "k_from_w_q")
    add("拆头交错，合并照常", lambda x: _mha_ref(x, split="interleaved"), "split_interleaved")
    add("merged_h @ mha.W_O.weight", lambda x: hand(x, out=lambda m: m @ x["mha"].W_O.weight), "w_o_raw_weight")
    add("一个 8 维的头，除以 √8", lambda x: _mha_ref(x, single_head=True, scale="d_model"), "single_head_by_d_model")
    return c


# ---------------------------------------------------------------- 5（一）LayerNorm；5（二）Block

def _ln_ref(x, **kw):
    from minigpt.homework.layer_norm import layer_norm_by_steps

    return layer_norm_by_steps(x["h"], x["gamma"], x["beta"], 1e-5, **kw).float()


def _ln_cases():
    c = []
    add = lambda label, make, expect, given=None: c.append(
        Case("5a", label, lambda x, m=make: {"ln_out": m(x)}, expect, given or (lambda x: {})))
    add("F.layer_norm", lambda x: F.layer_norm(x["h"], (8,), x["gamma"], x["beta"], 1e-5), "pass")
    add("一步一步", lambda x: _ln_ref(x), "pass")
    # r36c F7：方差没有减均值（二阶矩）、分母开了两次平方根
    mu = lambda x: x["h"].mean(-1, keepdim=True)
    add("var = (h ** 2).mean(-1)", lambda x: x["gamma"] * (x["h"] - mu(x)) / torch.sqrt(
        (x["h"] ** 2).mean(-1, keepdim=True) + 1e-5) + x["beta"], "variance_not_centered")
    add("/ torch.sqrt(var.sqrt() + eps)", lambda x: x["gamma"] * (x["h"] - mu(x)) / torch.sqrt(
        x["h"].var(-1, keepdim=True, unbiased=False).sqrt() + 1e-5) + x["beta"], "sqrt_of_std")

    def module(x):
        ln = torch.nn.LayerNorm(8)
        with torch.no_grad():
            ln.weight.copy_(x["gamma"])
            ln.bias.copy_(x["beta"])
        return ln(x["h"])

    add("nn.LayerNorm 拷进 γ、β", module, "pass")
    add("var(unbiased=False)", lambda x: x["gamma"] * (x["h"] - x["h"].mean(-1, keepdim=True))
        / torch.sqrt(x["h"].var(-1, keepdim=True, unbiased=False) + 1e-5) + x["beta"], "pass")
    add("rsqrt", lambda x: x["gamma"] * (x["h"] - x["h"].mean(-1, keepdim=True))
        * torch.rsqrt(((x["h"] - x["h"].mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True) + 1e-5)
        + x["beta"], "pass")
    add("numpy", lambda x: _ln_ref(x).numpy(), "pass")
    add("忘了 γ、β", lambda x: _ln_ref(x, affine="none"), "no_affine")
    add("忘了 γ", lambda x: _ln_ref(x, affine="no_gamma"), "no_gamma")
    add("忘了 β", lambda x: _ln_ref(x, affine="no_beta"), "no_beta")
    add("γ、β 用反", lambda x: _ln_ref(x, affine="swapped"), "gamma_beta_swapped")
    add("gamma * beta * (h - mu) / std", lambda x: _ln_ref(x, affine="gamma_times_beta"), "gamma_times_beta")
    add("方差用 ((h - mu) ** 2).sum(-1)", lambda x: (x["gamma"] * (x["h"] - x["h"].mean(-1, keepdim=True))
        / torch.sqrt(((x["h"] - x["h"].mean(-1, keepdim=True)) ** 2).sum(-1, keepdim=True) + 1e-5)
        + x["beta"]), "variance_summed")
    add("乘了 std", lambda x: x["gamma"] * (x["h"] - x["h"].mean(-1, keepdim=True))
        * torch.sqrt(x["h"].var(-1, keepdim=True, unbiased=False) + 1e-5) + x["beta"], "multiplied_by_std")
    add("eps 写成 1e-6", lambda x: F.layer_norm(x["h"], (8,), x["gamma"], x["beta"], 1e-6), "eps_other_value")
    add("沿 seq 维", lambda x: _ln_ref(x, dims=(1,)), "wrong_axis_seq")
    add("对整个张量", lambda x: _ln_ref(x, dims=(1, 2)), "wrong_axis_all")
    add("torch.var 默认无偏", lambda x: _ln_ref(x, unbiased=True), "unbiased_variance")
    add("没有 ε", lambda x: _ln_ref(x, eps_where="none"), "no_eps")
    add("std + ε", lambda x: _ln_ref(x, eps_where="outside"), "eps_outside_sqrt")
    add("只减均值", lambda x: _ln_ref(x, divide=False), "not_divided")
    add("β 减去了", lambda x: _ln_ref(x, affine="minus_beta"), "beta_subtracted")
    add("没开平方", lambda x: _ln_ref(x, root=False), "no_sqrt")
    add("RMSNorm（不减均值）", lambda x: _ln_ref(x, center="rms"), "rms_norm")
    add("分子没减均值", lambda x: _ln_ref(x, center="none"), "not_centered")
    add("block.ln_attn(h)", lambda x: x["block"].ln_attn(x["h"]).detach(), "block_ln_attn")
    add("block.ln_ffn(h)", lambda x: x["block"].ln_ffn(x["h"]).detach(), "block_ln_ffn")
    add("沿 dim=0 归一化", lambda x: _ln_ref(x, dims=(0,)), "wrong_axis_batch")
    add("先加 β 再乘 γ", lambda x: _ln_ref(x, affine="gamma_after_beta"), "beta_inside_gamma")
    add("torch.std（无偏）", lambda x: x["gamma"] * (x["h"] - x["h"].mean(-1, keepdim=True))
        / torch.sqrt(x["h"].std(-1, keepdim=True) ** 2 + 1e-5) + x["beta"], "unbiased_variance")
    add("(h - μ) / (σ + ε)", lambda x: _ln_ref(x, eps_where="outside"), "eps_outside_sqrt")
    add("nn.LayerNorm(8) 默认参数", lambda x: torch.nn.LayerNorm(8)(x["h"]).detach(), "no_affine")
    add("方差除以 n，均值沿 seq", lambda x: _ln_ref(x, dims=(1,)), "wrong_axis_seq")
    add("rsqrt 写法", lambda x: x["gamma"] * (x["h"] - x["h"].mean(-1, keepdim=True))
        * torch.rsqrt(x["h"].var(-1, keepdim=True, unbiased=False) + 1e-5) + x["beta"], "pass")
    add("float64 算的", lambda x: _ln_ref(x).double(), "pass")
    add("只交了均值", lambda x: x["h"].mean(-1), "reduced")
    add("只交了方差（keepdim）", lambda x: x["h"].var(-1, keepdim=True), "keepdim")
    add("没填", lambda x: None, "not_filled")
    add("h = h * 100 之后再算（ε 不起作用了，看起来像没加 ε）", lambda x: _ln_ref({**x, "h": x["h"] * 100}), "no_eps",
        lambda x: {"h": x["h"] * 100})
    # r36b 的 F5
    add("(h - μ) / h.std(…)", lambda x: x["gamma"] * (x["h"] - x["h"].mean(-1, keepdim=True))
        / x["h"].std(-1, keepdim=True) + x["beta"], "std_unbiased_no_eps")
    add("(γ·(h − μ) + β) / √(方差 + ε)", lambda x: (x["gamma"] * (x["h"] - x["h"].mean(-1, keepdim=True)) + x["beta"])
        / torch.sqrt(x["h"].var(-1, keepdim=True, unbiased=False) + 1e-5), "beta_before_divide")
    return c


def _block_ref(x, **kw):
    from minigpt.homework.block import block_by_steps

    return block_by_steps(x["x"], x["block"], **kw)


def _block_cases():
    from minigpt.attention import causal_mask

    c = []
    add = lambda label, make, expect, given=None: c.append(
        Case("5b", label, lambda x, m=make: {"block_out": m(x)}, expect, given or (lambda x: {})))
    add("block(x, mask)", lambda x: x["block"](x["x"], causal_mask(3)), "pass")
    add("一步一步", lambda x: _block_ref(x), "pass")
    add("mask [1, 1, 3, 3]", lambda x: x["block"](x["x"], causal_mask(3)[None, None]), "pass")
    add("bool mask", lambda x: x["block"](x["x"], causal_mask(3).bool()), "pass")
    add("没传 mask", lambda x: x["block"](x["x"]), "no_mask")
    # r36c F7：转置了的遮蔽、Pre-LN 加最后一个 LayerNorm（GPT-2 的排法）
    add("block.attn(x, block_mask.T)", lambda x: (lambda x1: x["block"].ln_ffn(x1 + x["block"].ffn(x1)))(
        x["block"].ln_attn(x["x"] + x["block"].attn(x["x"], causal_mask(3).T))), "mask_transposed")
    add("Pre-LN，最后再 ln_ffn", lambda x: (lambda p: x["block"].ln_ffn(p + x["block"].ffn(x["block"].ln_ffn(p))))(
        x["x"] + x["block"].attn(x["block"].ln_attn(x["x"]), causal_mask(3))), "pre_ln_final_norm")
    add("Pre-LN", lambda x: _block_ref(x, order="pre"), "pre_ln")
    add("残差加在 LN 之后", lambda x: _block_ref(x, order="residual_after_norm"), "residual_after_norm")
    add("LN 前后各一次", lambda x: x["block"].ln_ffn((lambda x1: x1 + x["block"].ffn(x["block"].ln_ffn(x1)))(
        x["block"].ln_attn(x["x"] + x["block"].attn(x["block"].ln_attn(x["x"]), causal_mask(3))))), "pre_and_post_ln")
    add("F.layer_norm 没传 γ、β", lambda x: (lambda x1: F.layer_norm(x1 + x["block"].ffn(x1), (8,)))(
        F.layer_norm(x["x"] + x["block"].attn(x["x"], causal_mask(3)), (8,))), "norm_without_gamma_beta")
    add("用了 h 而不是 x", lambda x: _block_ref({**x, "x": x["h"]}), "input_h")
    add("x + x1 + ffn(x1)", lambda x: (lambda x1: x["block"].ln_ffn(x["x"] + x1 + x["block"].ffn(x1)))(
        x["block"].ln_attn(x["x"] + x["block"].attn(x["x"], causal_mask(3)))), "residual_x_and_x1")
    add("第二个子层又用了注意力", lambda x: (lambda x1: x["block"].ln_ffn(x1 + x["block"].attn(x1, causal_mask(3))))(
        x["block"].ln_attn(x["x"] + x["block"].attn(x["x"], causal_mask(3)))), "attention_twice")
    add("注意力少了残差", lambda x: _block_ref(x, residual_attn=False), "no_residual_attn")
    add("FFN 少了残差", lambda x: _block_ref(x, residual_ffn=False), "no_residual_ffn")
    add("都少了残差", lambda x: _block_ref(x, residual_attn=False, residual_ffn=False), "no_residual")
    add("两个 LN 用反", lambda x: _block_ref(x, swap_norms=True), "norms_swapped")
    add("只有注意力子层", lambda x: _block_ref(x, ffn=False), "no_ffn")
    add("没有第一个 LayerNorm", lambda x: _block_ref(x, norm_attn=False), "no_ln_attn")
    add("没有最后的 LayerNorm", lambda x: _block_ref(x, norm_ffn=False), "no_ln_ffn")
    add("两个 LayerNorm 都没有", lambda x: _block_ref(x, norm_attn=False, norm_ffn=False), "no_layer_norm")
    add("ln_attn 用了两次", lambda x: _block_ref(x, ln_attn_twice=True), "ln_attn_twice")
    add("FFN 作用在 x 上", lambda x: _block_ref(x, ffn_input="x"), "ffn_on_x")
    add("FFN 的残差加回 x", lambda x: _block_ref(x, ffn_residual="x"), "ffn_residual_x")
    add("FFN 从 x 算起、加回 x", lambda x: _block_ref(x, ffn_input="x", ffn_residual="x"), "ffn_on_x_residual_x")
    add("子层顺序反了", lambda x: _block_ref(x, order="ffn_first"), "sublayers_swapped")
    add("子层顺序反了、LN 留在原处", lambda x: _block_ref(x, order="ffn_first_norms_in_place"),
        "sublayers_swapped_norms_kept")
    add("用了作业 4 的 mha", lambda x: _block_ref(x, attn=x["mha"]), "used_mha")
    add("Pre-LN（自己写的）", lambda x: (lambda x1: x1 + x["block"].ffn(x["block"].ln_ffn(x1)))(
        x["x"] + x["block"].attn(x["block"].ln_attn(x["x"]), causal_mask(3))).detach(), "pre_ln")
    add("x1 = LN(x + attn) 不用 no_grad", lambda x: (lambda x1: x["block"].ln_ffn(x1 + x["block"].ffn(x1)))(
        x["block"].ln_attn(x["x"] + x["block"].attn(x["x"], causal_mask(3)))), "pass")
    add("float64 的副本", lambda x: _block_ref(x).double(), "pass")
    add("少了一维", lambda x: _block_ref(x)[0], "shape")
    add("半精度", lambda x: _block_ref(x).half(), "dtype")
    add("没填", lambda x: None, "not_filled")
    # r36b 的 F5
    def post(x, first, second):
        b, m = x["block"], causal_mask(3)
        return first(b, m, x["x"]) if second is None else second(b, first(b, m, x["x"]))

    std1 = lambda b, m, t: b.ln_attn(t + b.attn(t, m))
    add("ln_attn 做了两次", lambda x: post(x, lambda b, m, t: b.ln_attn(std1(b, m, t)),
                                          lambda b, x1: b.ln_ffn(x1 + b.ffn(x1))), "ln_attn_applied_twice")
    add("残差加回 LN 之前的和", lambda x: (lambda b, m: (lambda s1: b.ln_ffn(s1 + b.ffn(b.ln_attn(s1))))(
        x["x"] + b.attn(x["x"], m)))(x["block"], causal_mask(3)), "residual_before_norm")
    add("FFN 之前又做了 ln_ffn", lambda x: post(x, std1, lambda b, x1: b.ln_ffn(x1 + b.ffn(b.ln_ffn(x1)))),
        "extra_norm_before_ffn")
    add("第一个子层 Pre-LN、第二个 Post-LN",
        lambda x: post(x, lambda b, m, t: b.ln_attn(t + b.attn(b.ln_attn(t), m)),
                       lambda b, x1: b.ln_ffn(x1 + b.ffn(x1))), "pre_ln_first_sublayer")
    add("对的 Post-LN 之后又加了 x",
        lambda x: post(x, std1, lambda b, x1: b.ln_ffn(x1 + b.ffn(x1))) + x["x"], "extra_outer_residual")
    return c


CASES += _heads_cases() + _mha_cases() + _ln_cases() + _block_cases()


# ---------------------------------------------------------------- 作业 1–3：本轮新想到的错误答案

def _more_cases():
    c = []

    def one(key, name, label, make, expect):
        c.append(Case(key, label, lambda x, m=make: {name: m(x)}, expect))

    dot = lambda x: (x["q"] * x["k"]).sum()
    S = lambda x: x["Q"] @ x["K"].T
    fut = lambda: _tril() == 0
    W = lambda x: _weights(x["scores"])
    for label, make, expect in [
            ("(q * k).max()", lambda x: (x["q"] * x["k"]).max(), "max_product"),
            ("(q * k).prod()", lambda x: (x["q"] * x["k"]).prod(), "product_of_products"),
            ("|q|·|k|", lambda x: x["q"].norm() * x["k"].norm(), "norm_product"),
            ("乘积取绝对值", lambda x: (x["q"] * x["k"]).abs().sum(), "abs_products"),
            ("点积的平方", lambda x: dot(x) ** 2, "squared"),
            ("k 倒过来", lambda x: (x["q"] * x["k"].flip(0)).sum(), "k_reversed"),
            ("只有第 0 维的乘积", lambda x: (x["q"] * x["k"])[0], "one_term"),
            ("range(d_k - 1)", lambda x: (x["q"] * x["k"])[:-1].sum(), "missing_term"),
            ("range(1, d_k)", lambda x: (x["q"] * x["k"])[1:].sum(), "missing_term"),
            ("q.sum() + k.sum()", lambda x: x["q"].sum() + x["k"].sum(), "sum_of_sums"),
            ("k.sum()", lambda x: x["k"].sum(), "only_k"),
            ("(Q @ K.T).sum()", lambda x: S(x).sum(), "matrix_sum"),
            ("(Q @ K.T).mean()", lambda x: S(x).mean(), "matrix_mean"),
            ("乘了 d_k", lambda x: dot(x) * 4, "multiplied_by_d_k"),
            ("乘了 √d_k", lambda x: dot(x) * 2, "multiplied_by_root"),
            ("q.norm()", lambda x: x["q"].norm(), "length_of_q"),
            ("(q - k).sum()", lambda x: (x["q"] - x["k"]).sum(), "difference_sum"),
            ("√|点积|", lambda x: dot(x).abs().sqrt(), "square_root"),
            ("注意力权重", lambda x: torch.softmax(S(x)[1] / 2, -1)[2], "attention_weight"),
            ("减了 1", lambda x: dot(x) - 1, "minus_one")]:
        one("1a", "score", label, make, expect)
    for label, make, expect in [
            ("乘了 √d_k", lambda x: S(x) * 2, "multiplied_by_root"),
            ("K @ Q.T / √d_k", lambda x: S(x).T / 2, "transposed_scaled"),
            ("取绝对值", lambda x: S(x).abs(), "abs"),
            ("只算了 j ≥ i", lambda x: S(x).triu(), "upper_triangle_only"),
            ("K 的行倒过来", lambda x: x["Q"] @ x["K"].flip(0).T, "keys_reversed"),
            ("Q 的行倒过来", lambda x: x["Q"].flip(0) @ x["K"].T, "queries_reversed"),
            ("减了平均值", lambda x: S(x) - S(x).mean(), "constant_offset"),
            ("softmax(S / √d_k, dim=0)", lambda x: torch.softmax(S(x) / 2, 0), "attention_weights_columns"),
            ("平方", lambda x: S(x) ** 2, "squared"),
            ("sigmoid", lambda x: torch.sigmoid(S(x)), "sigmoid"),
            ("exp", lambda x: torch.exp(S(x)), "exp"),
            ("除以行和", lambda x: S(x) / S(x).sum(-1, keepdim=True), "row_normalised"),
            ("遮蔽后的权重", lambda x: torch.softmax(S(x).masked_fill(fut(), NEG_INF) / 2, -1), "masked_weights"),
            ("S.T 的下三角", lambda x: S(x).T.tril(), "cells")]:
        one("1b", "S", label, make, expect)
    for label, make, expect in [
            ("左右反了", lambda x: _tril().flip(1), "flipped_left_right"),
            ("上下反了", lambda x: _tril().flip(0), "flipped_up_down"),
            ("ones - eye", lambda x: torch.ones(3, 3) - torch.eye(3), "all_but_diagonal"),
            ("-tril", lambda x: -_tril(), "additive"),
            ("只有最后一行", lambda x: torch.tensor([[0., 0, 0], [0, 0, 0], [1, 1, 1]]), "cells")]:
        one("2a", "mask", label, make, expect)
    for label, make, expect in [
            ("sigmoid", lambda x: torch.sigmoid(x["scores"].masked_fill(fut(), NEG_INF)), "sigmoid"),
            ("整个矩阵一起 softmax", lambda x: torch.softmax(
                x["scores"].masked_fill(fut(), NEG_INF).flatten(), 0).view(3, 3), "softmax_all"),
            ("两次 softmax", lambda x: _weights(W(x)), "softmax_twice"),
            ("对权重再 softmax", lambda x: torch.softmax(W(x), -1), "softmax_twice_leaking"),
            ("没取 exp 就除以行和", lambda x: (lambda m: m / m.sum(-1, keepdim=True))(
                x["scores"].masked_fill(fut(), 0.0)), "normalised_without_exp"),
            ("填 0、softmax、再乘 mask", lambda x: torch.softmax(x["scores"].masked_fill(fut(), 0.0), -1) * _tril(),
             "filled_zero_then_mask"),
            ("填 0 又沿 dim=0", lambda x: torch.softmax(x["scores"].masked_fill(fut(), 0.0), 0), "wrong_dim_filled_zero"),
            ("乘了 2", lambda x: W(x) * 2, "scaled_weights"),
            ("加了 0.1", lambda x: W(x) + 0.1, "constant_offset"),
            ("softmax(-scores)", lambda x: _weights(-x["scores"]), "negated"),
            ("除以 8 的分数", lambda x: _weights(x["Q"] @ x["K"].T / 8), "values")]:
        one("2b", "weights", label, make, expect)

    def ffn(label, w1, w2, total, expect):
        c.append(Case("3", label, lambda x, a=(w1, w2, total): dict(zip(
            ("w1_params", "w2_params", "total_params"), a)), expect))

    ffn("权重算了两遍", 2 * H * FF + FF, R2, 2 * H * FF + FF + R2, "weights_twice")
    ffn("以百万为单位", 1, R2, 1 + R2, "units")
    ffn("以千为单位", R1 // 1000, R2, R1 // 1000 + R2, "units")
    ffn("2 × (h + f)", 2 * (H + FF), R2, 2 * (H + FF) + R2, "added_dims")
    ffn("总数又加了偏置", R1, R2, R1 + R2 + H + FF, "total_biases_twice")
    ffn("总数以百万为单位", R1, R2, 2, "total_units")
    ffn("总数只算了 W1", R1, R2, R1, "total_one_layer")
    ffn("总数只算了 W2", R1, R2, R2, "total_one_layer")
    ffn("(h - 1) × f", FF * (H - 1), R2, FF * (H - 1) + R2, "dimension_minus_one")
    ffn("总数两层都按 hidden_size 算偏置", R1, R2, 2 * H * FF + 2 * H, "total_doubled")
    return c


CASES += _more_cases()
