"""作业 1（二）：整张注意力分数矩阵 S = Q Kᵀ（见第 2 节）。"""

from __future__ import annotations

import math

import torch

from .errors import HomeworkWrong
from .exercise import prints
from .hints import Looks, first_look, rounding_hint
from .values import TOLERANCE, TOLERANCE_TEXT, close, float_tensor, passed, require


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


def _looks(d: _Data) -> tuple[Looks, ...]:
    return (
        Looks("transposed", lambda c: c.truth.T,
              "检查 S 的方向：你的结果是正确矩阵的转置，像是算成了 K @ Q.T，"
              "或者在循环里写成了 S[j, i]。"
              "第 i 行应当是 Query i 对所有 Key 的分数，请把 Q 放在左边"),
        Looks("scaled", lambda c: c.truth / c.root,
              f"检查 S：你已经除以了 √d_k = {d.root:g}；"
              "这里只要原始分数，缩放是下一步"),
        Looks("divided_by_d_k", lambda c: c.truth / c.d_k,
              f"检查 S：你除以了 d_k = {d.d_k}（缩放用的是 √d_k，而且这一问"
              "根本不缩放）；这里只要原始分数"),
        Looks("softmax_rows", lambda c: torch.softmax(c.truth, dim=-1),
              "检查 S：每一行加起来是 1，像是已经做了 softmax。"
              "这一问要的是 softmax 之前的分数本身"),
        Looks("softmax_columns", lambda c: torch.softmax(c.truth, dim=0),
              "检查 S：每一列加起来是 1，像是已经（沿 dim=0）做了 softmax。"
              "这一问要的是 softmax 之前的分数本身"),
        Looks("attention_weights", lambda c: torch.softmax(c.truth / c.root, dim=-1),
              "检查 S：你交的像是注意力权重（缩放、再 softmax 之后）。"
              "这一问只要原始分数 Q @ K.T，缩放和 softmax 都是后面的步骤"),
        Looks("sign", lambda c: -c.truth, "检查 S 的符号：每个元素都差一个负号"),
        Looks("q_q", _same_shape(lambda c: c.Q @ c.Q.T),
              "检查 S：这像是 Q @ Q.T，Query 和自己做了点积。"
              "分数是 Query 与 Key 的点积：右边应当是 K"),
        Looks("k_k", _same_shape(lambda c: c.K @ c.K.T),
              "检查 S：这像是 K @ K.T，Key 和自己做了点积。"
              "分数是 Query 与 Key 的点积：左边应当是 Q"),
        Looks("row_index", _square(lambda c: c.truth.diagonal()[:, None].expand_as(c.truth)),
              "检查 S 的下标：每一行的数都相同，像是第 i 行只用了 Q[i] 与 K[i]"
              "（第二个下标也写成了 i）。S[i, j] 应当用 K[j]"),
        Looks("column_index", _square(lambda c: c.truth.diagonal()[None, :].expand_as(c.truth)),
              "检查 S 的下标：每一列的数都相同，像是第 j 列只用了 Q[j] 与 K[j]"
              "（第一个下标也写成了 j）。S[i, j] 应当用 Q[i]"),
    )


def _shape_hint(got: torch.Tensor, d: _Data) -> str:
    if got.shape == (d.Q.shape[-1], d.K.shape[-1]):
        return ("这像是 Q.T @ K（特征维之间相乘）；"
                "分数矩阵的行对应 Query、列对应 Key")
    if got.shape == d.Q.shape:
        return "这像是逐元素相乘 Q * K，没有对特征维求和"
    if got.squeeze().shape == d.truth.shape:
        return ("多了长度为 1 的维度：用 .squeeze() 去掉它，"
                "或者检查是不是多加了一维")
    return "分数矩阵的行数 = Query 的个数，列数 = Key 的个数"


def _cells(got: torch.Tensor, d: _Data) -> HomeworkWrong:
    """没有认出的错误：说哪些格子不一致（或者还是 0）。"""
    n_q, n_k = d.truth.shape
    bad = ~torch.isclose(got, d.truth, **TOLERANCE)
    right = ~bad
    untouched = bad & (got == 0)
    if untouched.any() and bool(untouched.sum() == bad.sum()):
        cells = untouched.nonzero().tolist()
        edge = all(i == n_q - 1 or j == n_k - 1 for i, j in cells)
        where = "，都在最后一行或最后一列" if edge else ""
        return HomeworkWrong(
            f"检查 S 是否填满了：{len(cells)} 个格子还是 0{where}，其余的都对。"
            "像是循环没有走遍所有的 i 和 j：检查 range 的上界是不是 seq_len", "unfilled")
    i, j = bad.nonzero()[0].tolist()
    return HomeworkWrong(
        f"检查 S 的每个元素：{int(bad.sum())} 个元素与对应的点积不相等（"
        f"{TOLERANCE_TEXT}），{int(right.sum())} 个相等；"
        f"第一个不相等的是第 {i} 行第 {j} 列（你的是 {got[i, j].item():.4f}）。"
        f"单独算一下 Q[{i}] 与 K[{j}] 的点积，和你的这一格比一比", "cells")


@prints
def check_score_matrix(S, Q, K) -> str:
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
        raise HomeworkWrong(
            f"检查 S 的形状：应该是 {tuple(d.truth.shape)}（[seq_q, seq_k]），"
            f"收到 {tuple(got.shape)}。{_shape_hint(got, d)}", "shape")
    if torch.isinf(got).any():
        raise HomeworkWrong(
            "S 里有无穷大（-inf）：像是已经做了遮蔽。"
            "这一问只要原始分数，遮蔽是作业 2 的事", "masked")
    if close(got, d.truth):
        return passed(1, f"S 的形状是 {tuple(got.shape)}，"
                         "每个元素都等于对应 Query 与 Key 的点积")
    row = first_look(got, d.truth, _looks(d), d)
    if row is not None:
        raise HomeworkWrong(row.message, row.name)
    rounding = rounding_hint(got, d.truth)
    if rounding is not None:
        raise HomeworkWrong(f"检查 S 的每个元素：{rounding}", "rounding")
    raise _cells(got, d)
