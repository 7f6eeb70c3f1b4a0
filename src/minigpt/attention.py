"""缩放点积注意力的四步与因果遮蔽
（见第 2 节 缩放点积注意力、第 3 节 因果遮蔽）。

四步各是一个小函数，`scaled_dot_product_attention` 只是把它们串起来；
书里别处（多头注意力、作业检查）都调用这里，数学只写一遍。

mask 的约定（和正文一致）：1 / True 是“读得到”，0 / False 是“读不到”。
传给 PyTorch 自带模块时，约定各不相同，
请用 `to_nn_mha_mask` 和 `to_sdpa_mask` 转换。
"""

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F


# ---------------------------------------------------------------- 四步
# 第 2 节 缩放点积注意力逐个展示下面四个函数的源码。


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """第 1 步：每个 Query 与每个 Key 做点积，S = Q Kᵀ。

    q: [..., seq_q, d_k]，k: [..., seq_k, d_k] → [..., seq_q, seq_k]。
    """
    _check_q_k(q, k)
    return q @ k.transpose(-2, -1)  # S[i, j] = q_i · k_j


def scale_scores(scores: torch.Tensor, d_k: int) -> torch.Tensor:
    """第 2 步：把分数的尺度压回与 d_k 无关，即除以 √d_k。

    q·k 是 d_k 个乘积 q_m k_m 之和（m 数的是分量）。设各分量独立、均值为 0，
    q 的每个分量方差都是 σ_q²，k 的都是 σ_k²，这个和的方差就是 d_k · σ_q² · σ_k²，
    与 d_k 成正比；除以 √d_k 后只剩 σ_q² · σ_k²，不再随 d_k 变
    （正文取 σ_q² = σ_k² = 1，这时正好是 1）。
    """
    return scores / math.sqrt(d_k)


def softmax_weights(scores: torch.Tensor) -> torch.Tensor:
    """第 3 步：沿最后一维取 softmax，把一行分数变成和为 1 的份额。"""
    _check_no_fully_masked_row(scores)
    return F.softmax(scores, dim=-1)


def weighted_sum(weights: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """第 4 步：output = A V，输出的每一行是 V 各行以权重为系数的和。

    weights: [..., seq_q, seq_k]，v: [..., seq_k, d_v] → [..., seq_q, d_v]。
    """
    _check_weights_v(weights, v)
    return weights @ v  # [..., seq_q, d_v]


# ---------------------------------------------------------------- 输入检查
# 四步只写数学；形状与取值的检查放在这里，出错时给出中文说明（见第 2 节）。


def _check_q_k(q: torch.Tensor, k: torch.Tensor) -> None:
    """q、k 至少二维，且最后一维（d_k）相等；否则报 ValueError。"""
    if q.dim() < 2 or k.dim() < 2:
        raise ValueError(
            "q 和 k 至少要是二维 [seq, d_k]，"
            f"收到 q 形状 {tuple(q.shape)}、k 形状 {tuple(k.shape)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            "q 和 k 的最后一维（d_k）必须相等："
            f"q 的是 {q.shape[-1]}，k 的是 {k.shape[-1]}"
            f"（q 形状 {tuple(q.shape)}，k 形状 {tuple(k.shape)}）"
        )


def _check_no_fully_masked_row(scores: torch.Tensor) -> None:
    """某一行全是 -inf（这个 query 能看的 key 全被遮住）时 softmax 没有定义
    （PyTorch 会给出 NaN）：报 ValueError，并指出是哪几行。
    """
    dead = torch.isneginf(scores).all(dim=-1)  # [..., seq_q]：整行都是 -inf 的 query
    if dead.any():
        rows = [tuple(i) if len(i) > 1 else i[0] for i in dead.nonzero().tolist()]
        # 一句一行：打印出来不会在半句话中间折行
        raise ValueError(
            f"第 {', '.join(map(str, rows[:8]))} 行的所有 Key 都被遮住"
            "（整行都是 -inf）。\n"
            "对全是 -inf 的一行做 softmax 没有定义，PyTorch 会给出 NaN。\n"
            "每个 Query 至少要能看到一个 Key，例如因果遮蔽矩阵的对角线必须是 1。\n"
            f"（分数形状 {tuple(scores.shape)}，行号按 [..., seq_q] 计）"
        )


def _check_weights_v(weights: torch.Tensor, v: torch.Tensor) -> None:
    """权重的 seq_k 必须等于 v 的序列长度；否则报 ValueError。"""
    if weights.shape[-1] != v.shape[-2]:
        raise ValueError(
            f"权重的最后一维（seq_k = {weights.shape[-1]}）"
            f"必须等于 v 的序列长度 v.shape[-2] = {v.shape[-2]}"
        )


def _check_k_v(k: torch.Tensor, v: torch.Tensor) -> None:
    """k 和 v 的序列长度必须相等；否则报 ValueError。"""
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            "k 和 v 的序列长度必须相等："
            f"k.shape[-2] = {k.shape[-2]}，v.shape[-2] = {v.shape[-2]}"
            f"（k 形状 {tuple(k.shape)}，v 形状 {tuple(v.shape)}）"
        )


# ---------------------------------------------------------------- mask


# 第 3 节 因果遮蔽
def causal_mask(seq_len: int,
                device: torch.device | str | None = None) -> torch.Tensor:
    """因果遮蔽用的 0/1 下三角矩阵，int64。

    第 i 行的 0..i 列是 1（位置 i 读得到这几列），i 之后的列是 0（读不到）：
    每个位置读得到的，只有它自己和它左边。
    """
    _check_seq_len(seq_len)
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.int64, device=device))


def _check_seq_len(seq_len: int) -> None:
    """序列长度至少为 1；否则报 ValueError。"""
    if seq_len < 1:
        raise ValueError(f"seq_len 必须 ≥ 1，收到 {seq_len}")


def _allowed(mask: torch.Tensor) -> torch.Tensor:
    """把 bool 或数值 mask 统一成 bool：True = 可以看（非零即可看）。"""
    return mask if mask.dtype == torch.bool else mask != 0


def to_nn_mha_mask(mask: torch.Tensor) -> torch.Tensor:
    """本书 mask → `nn.MultiheadAttention(attn_mask=...)` 的 bool mask
    （见第 3 节 因果遮蔽）。

    映射：本书 1/True（可以看）→ False；本书 0/False（遮住）→ True。
    也就是 `mask == 0`：nn.MultiheadAttention 与 nn.TransformerEncoderLayer 里
    True 表示“不许看”。
    """
    return ~_allowed(mask)


def to_sdpa_mask(mask: torch.Tensor) -> torch.Tensor:
    """本书 mask → `F.scaled_dot_product_attention(attn_mask=...)` 的 bool mask
    （见第 3 节 因果遮蔽）。

    映射：本书 1/True（可以看）→ True；本书 0/False（遮住）→ False。
    F.scaled_dot_product_attention 的 bool mask 里 True 表示“可以参与注意力”，
    和本书同向。
    """
    return _allowed(mask)


# 第 3 节 因果遮蔽
def apply_mask(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """mask 说“读不到”（0 / False）的格子，分数改成 -inf，其余原样返回。

    mask 可以是 bool 或数值（非零 / True = 可以看），形状要能广播到
    scores 的形状 [..., seq_q, seq_k]，而且广播后不能让 scores 变大。
    """
    check_mask_shape(mask, scores.shape)
    return scores.masked_fill(~_allowed(mask), float("-inf"))


def check_mask_shape(mask: torch.Tensor, scores_shape: Sequence[int]) -> None:
    """检查 mask 能否广播到分数形状 [..., seq_q, seq_k]，否则报 ValueError
    （见第 3 节 因果遮蔽）。
    """
    scores_shape = tuple(scores_shape)
    try:
        broadcast = tuple(torch.broadcast_shapes(tuple(mask.shape), scores_shape))
    except RuntimeError:
        broadcast = None
    if broadcast != scores_shape:
        raise ValueError(
            f"mask 的形状 {tuple(mask.shape)} "
            f"无法广播到注意力分数的形状 {scores_shape}"
            "（[..., seq_q, seq_k]）；"
            f"例如因果遮蔽矩阵应为 ({scores_shape[-2]}, {scores_shape[-1]})"
        )


# ---------------------------------------------------------------- 合起来
# 第 2 节 缩放点积注意力展示这个函数；mask 参数在第 3 节 因果遮蔽讲。


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: torch.Tensor | None = None,
                                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V。

    q: [..., seq_q, d_k]，k: [..., seq_k, d_k]，v: [..., seq_k, d_v]，
    前面可以有任意 batch / head 维。
    mask: 可选，1 / True = 可以看，能广播到 [..., seq_q, seq_k]（见第 3 节）。
    返回 (output [..., seq_q, d_v], weights [..., seq_q, seq_k])。
    """
    _check_k_v(k, v)
    scores = attention_scores(q, k)             # [..., seq_q, seq_k]
    scores = scale_scores(scores, q.shape[-1])  # [..., seq_q, seq_k]
    if mask is not None:
        scores = apply_mask(scores, mask)
    weights = softmax_weights(scores)           # [..., seq_q, seq_k]
    return weighted_sum(weights, v), weights    # [..., seq_q, d_v]
