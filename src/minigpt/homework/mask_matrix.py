"""作业 2（一）：因果遮蔽的遮蔽矩阵（见第 3 节）。"""

from __future__ import annotations

import torch

from .errors import HomeworkWrong
from .values import after_colon, count, passed, require, to_tensor, tril

# (名字, 由 n 造出“犯了这个错会得到的”能看矩阵, 提示)：按顺序比较，第一条完全相同的就是提示
DIAGNOSES = (
    ("triu", lambda n: tril(n).T if n > 1 else None,
     "你的 mask 是上三角，正好是正确答案的转置："
     "位置 i 看到的是自己和它后面的 token（未来）。"
     "用 torch.tril 而不是 torch.triu"),
    ("inverted", lambda n: ~tril(n) if n > 1 else None,
     "含义反了：你把“遮住”标成了 1 / True。这是 nn.MultiheadAttention 的约"
     "定（True = 不许看）；"
     "本书约定 1 / True = 可以看"),
    ("all_ones", lambda n: torch.ones(n, n, dtype=torch.bool),
     "所有位置都是 1，什么都没有遮住：每个 token 都能偷看未来"),
    ("diagonal_plus_one", lambda n: torch.ones(n, n, dtype=torch.bool).tril(1) if n > 1 else None,
     "每个位置还多看到了紧挨着的下一个 token（对角线上方那一条也是 1）："
     "像是 torch.tril 的 diagonal 参数多了 1：第 i 行应当只有前 i+1 格是 1"),
    ("diagonal_minus_one", lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1),
     "对角线被遮住了：位置 i 应该能看到自己。这样第 0 行全被遮住，"
     "softmax 会得到 NaN"),
    ("all_zero", lambda n: torch.zeros(n, n, dtype=torch.bool),
     "全是 0：所有位置都被遮住，每个位置连自己也看不到，softmax 会得到 NaN。"
     "对角线和它下方应当是 1"),
    ("flipped_left_right", lambda n: tril(n).flip(1) if n > 1 else None,
     "左右反了：每一行的 1 应当从左边（位置 0）开始，位置 i 能看的是 0…i"),
    ("flipped_up_down", lambda n: tril(n).flip(0) if n > 1 else None,
     "上下反了：第 0 行只能看 1 个位置（它自己），最后一行能看全部"),
    ("all_but_diagonal", lambda n: ~torch.eye(n, dtype=torch.bool) if n > 1 else None,
     "除了对角线都是 1：位置 i 看不到自己，却看得到未来。对角线和它下方是 1，上方是 0"),
    ("eye", lambda n: torch.eye(n, dtype=torch.bool),
     "这是单位矩阵：每个位置只看自己。因果遮蔽只遮住位置 i 之后的 token，"
     "它前面的都能看"),
)


def _values(m: torch.Tensor) -> None:
    """非布尔的 mask 只能是 0 和 1。"""
    m = m.double()
    if torch.isnan(m).any():
        raise HomeworkWrong("mask 里有 NaN：遮蔽矩阵只能是 0 和 1"
                            "（或 False 和 True）", "nan")
    if torch.isinf(m).any():
        raise HomeworkWrong(
            "检查 mask 的取值：你的 mask 里有 -inf，这是“加到分数上”的加性写法。"
            "这里要的是本书的约定：1 = 可以看，0 = 遮住"
            "（-inf 是下一问用 masked_fill 放进分数里的）", "additive")
    bad = ~((m == 0) | (m == 1))
    if bad.any() and bool((m[bad] < 0).all()):
        raise HomeworkWrong(
            "检查 mask 的取值：你的 mask 里有负数"
            f"（{m[bad].unique().tolist()[:3]}），像是“加到分数上”的加性写法。"
            "这里要的是本书的约定：1 = 可以看，0 = 遮住", "additive")
    if bad.any():
        raise HomeworkWrong(
            "检查 mask 的取值：只能是 0 和 1（或 False / True），"
            f"发现了 {m[bad].unique().tolist()[:5]}", "values_range")


def judge_causal_mask(mask, seq_len) -> str:
    """作业 2（一）：因果遮蔽的遮蔽矩阵是下三角，1 / True = 可以看，
    0 / False = 遮住（见第 3 节）。
    """
    require(mask=mask)
    n = count(seq_len, "seq_len", given=True)
    if n < 1:
        raise HomeworkWrong(f"题目给的 seq_len 应该是正整数，现在是 {n}："
                            "请重新运行上面给出数据的单元", "given")
    m = to_tensor(mask, "mask", f" {n}×{n} 的张量（1 = 可以看，0 = 遮住）")
    if tuple(m.shape) != (n, n):
        extra = ("：多了长度为 1 的维度，这一问只要二维的方阵"
                 if tuple(m.squeeze().shape) == (n, n) and m.dim() > 2 else "")
        if m.dim() == 2 and m.shape[0] == m.shape[1]:
            # 例如 torch.ones(4, 4)：大小写死了（r36c F7 的 hard4）
            extra = (f"：像是把大小写死成了 {m.shape[0]}。用题目给的 seq_len，"
                     f"torch.ones(seq_len, seq_len)，换一个长度的句子也对")
        raise HomeworkWrong(f"检查 mask 的形状：应该是 ({n}, {n})，"
                            f"收到 {tuple(m.shape)}{extra}", "shape")
    if m.dtype != torch.bool:
        _values(m)
    allowed = m if m.dtype == torch.bool else m != 0
    truth = tril(n)
    if torch.equal(allowed, truth):
        return passed(2, f"mask 是 {n}×{n} 的下三角矩阵：第 i 行只有前 i+1 格是 1")
    for name, make, hint in DIAGNOSES:
        value = make(n)
        if value is not None and torch.equal(allowed, value):
            raise HomeworkWrong(f"检查 mask 是否为下三角（1 = 可以看）：{after_colon(hint)}", name)
    i, j = (allowed != truth).nonzero()[0].tolist()
    raise HomeworkWrong(
        "检查 mask 是否为下三角（1 = 可以看）："
        f"第 {i} 行第 {j} 列不对：第 i 行应当只有前 i+1 格是 1，按这条检查这一格", "cells")
