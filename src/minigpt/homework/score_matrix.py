"""作业 1（二）：整张注意力分数矩阵 S = Q Kᵀ（见第 2 节）。"""

from __future__ import annotations

import math

import torch

from .errors import HomeworkWrong
from .hints import Diagnosis, constant_offset, first_match, rounding_hint
from .values import TOLERANCE, TOLERANCE_TEXT, after_colon, close, float_tensor, passed, require


class _Data:
    def __init__(self, Q, K):
        self.Q, self.K = Q, K
        self.truth = Q @ K.T  # [seq_q, seq_k]
        self.d_k = Q.shape[-1]
        self.root = math.sqrt(self.d_k)


def _square(f):
    """只在方阵（Query 与 Key 一样多）上才有意义的诊断。"""
    return lambda c: f(c) if c.truth.shape[0] == c.truth.shape[1] else None


def _same_shape(f):
    return lambda c: f(c) if c.Q.shape == c.K.shape else None


def _diagnoses(d: _Data) -> tuple[Diagnosis, ...]:
    return (
        Diagnosis("transposed", lambda c: c.truth.T,
              "检查 S 的方向：你的结果是正确矩阵的转置，像是算成了 K @ Q.T，"
              "或者在循环里写成了 S[j, i]。"
              "第 i 行应当是 Query i 对所有 Key 的分数，请把 Q 放在左边"),
        Diagnosis("scaled", lambda c: c.truth / c.root,
              f"检查 S：你已经除以了 √d_k = {d.root:g}；"
              "这里只要原始分数，缩放是下一步"),
        Diagnosis("divided_by_d_k", lambda c: c.truth / c.d_k,
              f"检查 S：你除以了 d_k = {d.d_k}（缩放用的是 √d_k，而且这一问"
              "根本不缩放）；这里只要原始分数"),
        Diagnosis("softmax_rows", lambda c: torch.softmax(c.truth, dim=-1),
              "检查 S：每一行加起来是 1，像是已经做了 softmax。"
              "这一问要的是 softmax 之前的分数本身"),
        Diagnosis("softmax_columns", lambda c: torch.softmax(c.truth, dim=0),
              "检查 S：每一列加起来是 1，像是已经（沿 dim=0）做了 softmax。"
              "这一问要的是 softmax 之前的分数本身"),
        Diagnosis("attention_weights", lambda c: torch.softmax(c.truth / c.root, dim=-1),
              "检查 S：你交的像是注意力权重（缩放、再 softmax 之后）。"
              "这一问只要原始分数 Q @ K.T，缩放和 softmax 都是后面的步骤"),
        Diagnosis("sign", lambda c: -c.truth, "检查 S 的符号：每个元素都差一个负号"),
        Diagnosis("q_q", _same_shape(lambda c: c.Q @ c.Q.T),
              "检查 S：这像是 Q @ Q.T，Query 和自己做了点积。"
              "分数是 Query 与 Key 的点积：右边应当是 K"),
        Diagnosis("k_k", _same_shape(lambda c: c.K @ c.K.T),
              "检查 S：这像是 K @ K.T，Key 和自己做了点积。"
              "分数是 Query 与 Key 的点积：左边应当是 Q"),
        Diagnosis("all_zero", lambda c: torch.zeros_like(c.truth),
              "检查 S：每一格都还是 0。像是建好了全零张量，循环却没有把点积写进去"
              "（循环没有运行，或者算出的数没有赋给 S[i, j]）"),
        Diagnosis("lower_triangle_only", _square(lambda c: c.truth.tril()),
              "检查 S：对角线及以下都对，对角线以上（未来位置）却都是 0，像是已经做了遮蔽"
              "（乘了下三角矩阵，或者 masked_fill 成了 0）。这一问只要原始分数，遮蔽是作业 2 的事"),
        Diagnosis("diagonal_only", _square(lambda c: torch.diag(c.truth.diagonal())),
              "检查 S：只有对角线上的格子对，其余都是 0，像是只算了 Q[i] 与 K[i]（i == j）的那几格。"
              "S[i, j] 要对每一对 i、j 都算"),
        Diagnosis("row_index", _square(lambda c: c.truth.diagonal()[:, None].expand_as(c.truth)),
              "检查 S 的下标：每一行的数都相同，像是第 i 行只用了 Q[i] 与 K[i]"
              "（第二个下标也写成了 i）。S[i, j] 应当用 K[j]"),
        Diagnosis("multiplied_by_root", lambda c: c.truth * c.root,
              f"检查 S：像是乘了 √d_k = {d.root:g}。缩放是除以 √d_k，而且这一问只要原始分数"),
        Diagnosis("transposed_scaled", lambda c: c.truth.T / c.root,
              "检查 S：既是转置（像是 K @ Q.T），又除了 √d_k。第 i 行应当是 Query i 对所有 Key 的分数，"
              "这一问也不缩放"),
        Diagnosis("transposed_sign", lambda c: -c.truth.T,
              "检查 S：这是正确矩阵的转置再取负：像是算成了 K @ Q.T，还多了一个负号"),
        Diagnosis("abs", lambda c: c.truth.abs(), "检查 S：负的分数都变成了正的，像是取了绝对值。分数可以是负数"),
        Diagnosis("squared", lambda c: c.truth ** 2, "检查 S：每个元素像是都平方了。分数就是点积本身"),
        Diagnosis("exp", lambda c: torch.exp(c.truth),
              "检查 S：像是取了 exp（softmax 的前一半）。这一问只要原始分数 Q @ K.T"),
        Diagnosis("sigmoid", lambda c: torch.sigmoid(c.truth),
              "检查 S：每个数都在 0 和 1 之间，像是过了 sigmoid。这一问只要原始分数 Q @ K.T"),
        Diagnosis("row_normalised", lambda c: c.truth / c.truth.sum(dim=-1, keepdim=True),
              "检查 S：每一行加起来是 1，像是除以了行和。这一问只要原始分数本身"),
        Diagnosis("attention_weights_columns", lambda c: torch.softmax(c.truth / c.root, dim=0),
              "检查 S：你交的像是注意力权重（缩放、再沿 dim=0 做 softmax）。这一问只要原始分数 Q @ K.T"),
        Diagnosis("masked_weights", _square(lambda c: torch.softmax(
            (c.truth / c.root).masked_fill(~torch.ones_like(c.truth, dtype=torch.bool).tril(), float("-inf")), -1)),
              "检查 S：你交的像是遮蔽后的注意力权重（那是作业 2（二））。这一问只要原始分数 Q @ K.T"),
        Diagnosis("upper_triangle_only", _square(lambda c: c.truth.triu()),
              "检查 S：对角线及以上都对，对角线以下却都是 0：像是只算了 j ≥ i 的格子（内层循环从 i 开始）。"
              "S[i, j] 要对每一对 i、j 都算"),
        Diagnosis("keys_reversed", _same_shape(lambda c: c.Q @ c.K.flip(0).T),
              "检查 S：每一行的数都对，顺序却左右反了：像是 K 的行倒过来用了（K.flip(0) 或下标 K[seq_len - 1 - j]）。"
              "第 j 列应当是 Key j"),
        Diagnosis("queries_reversed", _same_shape(lambda c: c.Q.flip(0) @ c.K.T),
              "检查 S：各行的顺序上下反了：像是 Q 的行倒过来用了（Q.flip(0) 或下标 Q[seq_len - 1 - i]）。"
              "第 i 行应当是 Query i"),
        Diagnosis("column_index", _square(lambda c: c.truth.diagonal()[None, :].expand_as(c.truth)),
              "检查 S 的下标：每一列的数都相同，像是第 j 列只用了 Q[j] 与 K[j]"
              "（第一个下标也写成了 j）。S[i, j] 应当用 Q[i]"),
        # 作业 1（一）认得的错误，放到整张矩阵上
        Diagnosis("cosine", lambda c: c.truth / (c.Q.norm(dim=-1)[:, None] * c.K.norm(dim=-1)[None, :]),
              "检查 S：每一格像是余弦相似度（点积再除以两个向量的长度，例如 torch.cosine_similarity）："
              "这里只要点积本身，不除以长度"),
        Diagnosis("sum_of_sums", lambda c: c.Q.sum(-1)[:, None] + c.K.sum(-1)[None, :],
              "检查 S：每一格像是 (Q[i] + K[j]).sum()，把两个向量加了起来：点积是对应位置相乘，再求和"),
        Diagnosis("distance", lambda c: torch.cdist(c.Q, c.K),
              "检查 S：这是 Query 与 Key 之间的距离（像是 torch.cdist(Q, K)），不是点积。"
              "第 i 行第 j 列是 Q[i] 与 K[j] 对应位置相乘再求和"),
        Diagnosis("squared_distance", lambda c: torch.cdist(c.Q, c.K) ** 2,
              "检查 S：这是 Query 与 Key 之间距离的平方，不是点积。"
              "第 i 行第 j 列是 Q[i] 与 K[j] 对应位置相乘再求和"),
        Diagnosis("row_against_all_keys", lambda c: c.truth.sum(-1, keepdim=True).expand_as(c.truth),
              "检查 S：每一行的格子都一样，都是 Query i 与所有 Key 的点积之和：像是写成了 (Q[i] * K).sum()。"
              "S[i, j] 只要 Q[i] 与 K[j] 这一对：(Q[i] * K[j]).sum()"),
    )


def _shape_hint(got: torch.Tensor, d: _Data) -> tuple[str, str]:
    if got.shape == (d.Q.shape[-1], d.K.shape[-1]):
        return "shape_features", ("这像是 Q.T @ K（特征维之间相乘）；"
                                  "分数矩阵的行对应 Query、列对应 Key")
    if got.shape == d.Q.shape:
        return "shape_elementwise", "这像是逐元素相乘 Q * K，没有对特征维求和"
    if got.squeeze().shape == d.truth.shape:
        return "shape_extra_dim", ("多了长度为 1 的维度：用 .squeeze() 去掉它，"
                                   "或者检查是不是多加了一维")
    return "shape_other", "分数矩阵的行数 = Query 的个数，列数 = Key 的个数"


def _zero_pattern(zeros: torch.Tensor) -> tuple[str, str] | None:
    """只有 zeros 这些格子不对、而且都还是 0 时：这些格子的样子说明了什么。"""
    n_q, n_k = zeros.shape
    last_row = torch.zeros_like(zeros)
    last_row[-1] = True
    last_col = torch.zeros_like(zeros)
    last_col[:, -1] = True
    loop = "像是循环没有走遍所有的 {}：检查 range 的上界是不是 seq_len（range(seq_len) 已经到 seq_len - 1 为止）"
    if torch.equal(zeros, last_row):
        return "last_row_unfilled", "最后一行还是 0，其余的都对。" + loop.format("i")
    if torch.equal(zeros, last_col):
        return "last_column_unfilled", "最后一列还是 0，其余的都对。" + loop.format("j")
    if torch.equal(zeros, last_row | last_col):
        return "last_row_and_column_unfilled", "最后一行和最后一列还是 0，其余的都对。" + loop.format("i 和 j")
    if n_q == n_k and torch.equal(zeros, torch.eye(n_q, dtype=torch.bool)):
        return "diagonal_zero", ("对角线上的格子还是 0，其余的都对：像是跳过了 i == j"
                                 "（比如写了 if i != j）。Query i 与 Key i 的分数也要算")
    if n_q * n_k > 1 and int((~zeros).sum()) == 1 and not bool(zeros[-1, -1]):
        return "only_last_cell", ("只有最后一格（右下角）填了，其余的都还是 0：像是 S[i, j] = … 写在了循环外面，"
                                  "循环结束后只赋了一次值。把这一行缩进到内层循环里")
    flat = zeros.flatten()
    first = int(flat.nonzero()[0])
    if bool(flat[first:].all()):
        i, j = divmod(first, n_k)
        return "stopped", (f"从第 {i} 行第 {j} 列起往后的格子都还是 0，前面的都对："
                           "像是循环在这一格停下了（这一格出了错，或者提前 break 了）")
    return None


def _cells(got: torch.Tensor, d: _Data) -> HomeworkWrong:
    """没有认出的错误：说哪些格子不一致（或者还是 0）。"""
    bad = ~torch.isclose(got, d.truth, **TOLERANCE)
    zeros = bad & (got == 0)
    if bool(zeros.sum() == bad.sum()):
        pattern = _zero_pattern(zeros)
        if pattern is not None:
            name, hint = pattern
            return HomeworkWrong(f"检查 S 是否填满了：{after_colon(hint)}", name)
    i, j = bad.nonzero()[0].tolist()
    return HomeworkWrong(
        f"检查 S 的每个元素：与正确结果不一致（{TOLERANCE_TEXT}）："
        f"{int(bad.sum())} 个元素不相等，{int((~bad).sum())} 个相等；"
        f"第一个不相等的是第 {i} 行第 {j} 列（你的是 {got[i, j].item():.4f}）。"
        f"单独算一下 Q[{i}] 与 K[{j}] 的点积，和你的这一格比一比", "cells")


def judge_score_matrix(S, Q, K) -> str:
    """作业 1（二）：整张注意力分数矩阵 S = Q Kᵀ，第 i 行第 j 列是 Query i 与 Key j 的
    点积（见第 2 节）。
    """
    require(S=S)
    Q = float_tensor(Q, "Q", "二维矩阵 [seq, d_k]", given=True)
    K = float_tensor(K, "K", "二维矩阵 [seq, d_k]", given=True)
    if Q.dim() != 2 or K.dim() != 2 or Q.shape[-1] != K.shape[-1]:
        raise HomeworkWrong(
            f"题目给的 Q、K 应是最后一维相同的二维矩阵，现在形状是 {tuple(Q.shape)} "
            f"和 {tuple(K.shape)}："
            "请重新运行上面给出数据的单元", "given")
    got = float_tensor(S, "S", "二维张量 [seq_q, seq_k]")
    d = _Data(Q, K)
    if got.shape != d.truth.shape:
        name, hint = _shape_hint(got, d)
        raise HomeworkWrong(
            f"检查 S 的形状：应该是 {tuple(d.truth.shape)}（[seq_q, seq_k]），"
            f"收到 {tuple(got.shape)}。{hint}", name)
    if torch.isinf(got).any():
        raise HomeworkWrong(
            "S 里有无穷大（-inf）：像是已经做了遮蔽。"
            "这一问只要原始分数，遮蔽是作业 2 的事", "masked")
    if close(got, d.truth):
        return passed(1, f"S 的形状是 {tuple(got.shape)}，"
                         "每个元素都等于对应 Query 与 Key 的点积")
    row = first_match(got, d.truth, _diagnoses(d), d)
    if row is not None:
        raise HomeworkWrong(row.message, row.name)
    rounding = rounding_hint(got, d.truth)
    if rounding is not None:
        raise HomeworkWrong(f"检查 S 的每个元素：{rounding}", "rounding")
    offset = constant_offset(got, d.truth)
    if offset is not None:
        raise HomeworkWrong(f"检查 S 的每个元素：{offset}", "constant_offset")
    raise _cells(got, d)
