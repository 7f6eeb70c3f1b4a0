"""作业 4（二）：用给定的权重，一步一步算出多头注意力的输出（见第 4 节）。"""

from __future__ import annotations

import math

import torch

from .hints import Looks, given_input, given_module, judge_tensor
from .values import passed


def mha_by_steps(x: torch.Tensor, mha, *, causal: bool = True, scale: str = "d_k",
                 split: str = "right", merge: str = "right", w_o: bool = True,
                 dim: int = -1) -> torch.Tensor:
    """按第 4 节的步骤算多头注意力，各个参数可以换成一种典型的错误做法（诊断表用它）。"""
    b, n, d = x.shape
    h = mha.num_heads
    d_k = d // h
    x = x.double()

    def lin(layer, t):
        return t @ layer.weight.detach().double().T + layer.bias.detach().double()

    def part(t):  # [b, n, d] → [b, h, n, d_k]
        if split == "no_transpose":
            return t.reshape(b, h, n, d_k)
        return t.view(b, n, h, d_k).transpose(1, 2)

    q, k, v = part(lin(mha.W_Q, x)), part(lin(mha.W_K, x)), part(lin(mha.W_V, x))
    root = {"d_k": math.sqrt(d_k), "d_model": math.sqrt(d), "none": 1.0}[scale]
    scores = q @ k.transpose(-2, -1) / root                     # [b, h, n, n]
    if causal:
        allowed = torch.ones(n, n, dtype=torch.bool).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    out = torch.softmax(scores, dim=dim) @ v                      # [b, h, n, d_k]
    if merge == "no_transpose":
        out = out.reshape(b, n, d)
    else:
        out = out.transpose(1, 2).reshape(b, n, d)
    return lin(mha.W_O, out) if w_o else out


LOOKS = (
    Looks("no_mask", lambda c: mha_by_steps(c.x, c.mha, causal=False),
          "像是没有遮蔽：每个位置都看到了后面的 token。"
          "分数要在 softmax 之前把未来位置换成 -inf（各头共用同一个因果遮蔽矩阵）"),
    Looks("scaled_by_d_model", lambda c: mha_by_steps(c.x, c.mha, scale="d_model"),
          "分数像是除以了 √d_model：每个头只有 d_k = d_model / 头数 维，缩放用的是 √d_k"),
    Looks("unscaled", lambda c: mha_by_steps(c.x, c.mha, scale="none"),
          "分数像是没有除以 √d_k"),
    Looks("no_w_o", lambda c: mha_by_steps(c.x, c.mha, w_o=False),
          "像是少了最后的输出投影 W_O：各头的结果接起来以后，还要再过 mha.W_O"),
    Looks("split_without_transpose", lambda c: mha_by_steps(c.x, c.mha, split="no_transpose"),
          "拆头时像是直接 view 成了 [batch, heads, seq, d_k]：要先 view 成 [batch, seq, heads, d_k]，"
          "再 transpose(1, 2)"),
    Looks("merge_without_transpose", lambda c: mha_by_steps(c.x, c.mha, merge="no_transpose"),
          "合并时像是直接把 [batch, heads, seq, d_k] view 成了 [batch, seq, d_model]：要先 transpose(1, 2)"),
    Looks("wrong_dim", lambda c: mha_by_steps(c.x, c.mha, dim=-2),
          "softmax 像是做在了倒数第二维：每个 Query 的权重在最后一维，用 dim=-1"),
)


class _Data:
    def __init__(self, x, mha):
        self.x, self.mha = x.detach(), mha


def judge_mha_output(attn_out, x, mha) -> str:
    """作业 4（二）：attn_out = 带因果遮蔽的多头注意力 mha 对 x 的输出 [batch, seq, d_model]
    （见第 4 节 MultiHeadAttention）。"""
    from ..layers import MultiHeadAttention

    x = given_input(x)
    mha = given_module(mha, MultiHeadAttention, "mha", x.shape[-1])
    c = _Data(x, mha)
    truth = mha_by_steps(c.x, mha)
    judge_tensor(attn_out, "attn_out", truth, LOOKS, c, what=f"形状 {tuple(truth.shape)} 的浮点张量", shapes=(
        ("shape_heads", (truth.shape[0], mha.num_heads, truth.shape[1], truth.shape[2] // mha.num_heads),
         "这还是各头分开的输出：要把各头合并回 [batch, seq, d_model]，再过 W_O"),
    ))
    return passed(4, f"attn_out 的形状是 {tuple(truth.shape)}，和带因果遮蔽的 mha(x, mask) 一致")
