"""作业 5（二）：用书里的零件组装一个 Post-LN 的 Transformer Block，带因果遮蔽（见第 6 节）。"""

from __future__ import annotations

import torch

from .hints import Looks, given_input, given_module, judge_tensor
from .errors import HomeworkWrong
from .values import passed


def block_by_steps(x: torch.Tensor, block, *, causal: bool = True, order: str = "post",
                   residual_attn: bool = True, residual_ffn: bool = True,
                   ffn: bool = True, swap_norms: bool = False) -> torch.Tensor:
    """第 6 节的 Post-LN Block：x1 = LN1(x + Attn(x))，out = LN2(x1 + FFN(x1))；
    各个参数可以换成一种典型的错误做法（诊断表用它）。"""
    n = x.shape[-2]
    mask = torch.ones(n, n, dtype=torch.bool).tril() if causal else None
    ln1, ln2 = (block.ln_ffn, block.ln_attn) if swap_norms else (block.ln_attn, block.ln_ffn)
    with torch.no_grad():
        if order == "pre":
            x1 = x + block.attn(ln1(x), mask)
            return x1 + block.ffn(ln2(x1))
        if order == "residual_after_norm":
            x1 = x + ln1(block.attn(x, mask))
            return x1 + ln2(block.ffn(x1))
        a = block.attn(x, mask)
        x1 = ln1(x + a if residual_attn else a)
        if not ffn:
            return x1
        f = block.ffn(x1)
        return ln2(x1 + f if residual_ffn else f)


def _b(**kw):
    return lambda c: block_by_steps(c.x, c.block, **kw)


LOOKS = (
    Looks("no_mask", _b(causal=False),
          "像是没有把因果遮蔽传给注意力：block.attn(x, mask)，mask 是 3×3 的下三角"),
    Looks("pre_ln", _b(order="pre"),
          "这像是 Pre-LN 的排法（先 LayerNorm、再进子层、再加回输入）：这一题要 Post-LN，"
          "先把子层的输出加回输入，再对和做 LayerNorm"),
    Looks("residual_after_norm", _b(order="residual_after_norm"),
          "残差像是加在了 LayerNorm 之后（x + LN(子层(x))）：Post-LN 是 LN(x + 子层(x))，先加再归一化"),
    Looks("no_residual_attn", _b(residual_attn=False),
          "注意力子层像是少了残差：LayerNorm 的输入应当是 x + 注意力的输出"),
    Looks("no_residual_ffn", _b(residual_ffn=False),
          "FFN 子层像是少了残差：第二个 LayerNorm 的输入应当是 x1 + FFN(x1)"),
    Looks("no_residual", _b(residual_attn=False, residual_ffn=False),
          "两个子层都少了残差：每个子层的输出都要先加回它的输入，再做 LayerNorm"),
    Looks("norms_swapped", _b(swap_norms=True),
          "两个 LayerNorm 像是用反了：注意力之后用 block.ln_attn，FFN 之后用 block.ln_ffn"),
    Looks("no_ffn", _b(ffn=False), "像是只做了注意力这一个子层：还要过 FFN 子层（加回、再 LayerNorm）"),
)


class _Data:
    def __init__(self, x, block):
        self.x, self.block = x.detach(), block


def judge_block_output(block_out, x, block) -> str:
    """作业 5（二）：block_out = Post-LN Block 对 x 的输出，注意力带因果遮蔽（见第 6 节 TransformerBlock）。"""
    from ..layers import TransformerBlock

    x = given_input(x)
    block = given_module(block, TransformerBlock, "block", x.shape[-1])
    if getattr(block.attn, "d_model", None) != x.shape[-1]:
        raise HomeworkWrong("题目给的 block 和 x 的宽度对不上：请重新运行上面给出数据的单元", "given")
    c = _Data(x, block)
    truth = block_by_steps(c.x, block).double()
    judge_tensor(block_out, "block_out", truth, LOOKS, c, what=f"形状 {tuple(truth.shape)} 的浮点张量")
    return passed(5, f"block_out 的形状是 {tuple(truth.shape)}，和带因果遮蔽的 block(x, mask) 一致")
