"""作业 5（二）：用书里的零件组装一个 Post-LN 的 Transformer Block，带因果遮蔽（见第 6 节）。"""

from __future__ import annotations

import torch

from .hints import Diagnosis, given_input, given_module, judge_tensor
from .errors import HomeworkWrong
from .values import passed


def block_by_steps(x: torch.Tensor, block, *, causal: bool = True, order: str = "post",
                   residual_attn: bool = True, residual_ffn: bool = True,
                   ffn: bool = True, swap_norms: bool = False, norm_attn: bool = True,
                   norm_ffn: bool = True, ln_attn_twice: bool = False, ffn_input: str = "x1",
                   ffn_residual: str = "x1", attn=None, plain_norm: bool = False,
                   attn_twice: bool = False, mask_transposed: bool = False) -> torch.Tensor:
    """第 6 节的 Post-LN Block：x1 = LN1(x + Attn(x))，out = LN2(x1 + FFN(x1))；
    各个参数可以换成一种典型的错误做法（诊断表用它）。attn 换掉注意力子层（例如作业 4 的 mha）。"""
    n = x.shape[-2]
    mask = torch.ones(n, n, dtype=torch.bool).tril() if causal else None
    if mask is not None and mask_transposed:
        mask = mask.T
    ln1, ln2 = (block.ln_ffn, block.ln_attn) if swap_norms else (block.ln_attn, block.ln_ffn)
    if ln_attn_twice:
        ln2 = block.ln_attn
    attn = attn or block.attn
    if plain_norm:   # F.layer_norm(t, (d,)) 没有传 block 的 γ、β
        ln1 = ln2 = lambda t: torch.nn.functional.layer_norm(t, t.shape[-1:], eps=block.ln_attn.eps)  # noqa: E731
    keep = lambda t: t      # noqa: E731  少了哪个 LayerNorm，就用它代替
    ln1, ln2 = (ln1 if norm_attn else keep), (ln2 if norm_ffn else keep)
    with torch.no_grad():
        if order == "pre":
            x1 = x + attn(ln1(x), mask)
            return x1 + block.ffn(ln2(x1))
        if order == "pre_final":           # Pre-LN，最后又做了一次 LayerNorm（GPT-2 的排法）
            x1 = x + attn(ln1(x), mask)
            return ln2(x1 + block.ffn(ln2(x1)))
        if order == "pre_and_post":        # 子层前后各做了一次 LayerNorm
            x1 = ln1(x + attn(ln1(x), mask))
            return ln2(x1 + block.ffn(ln2(x1)))
        if order == "residual_after_norm":
            x1 = x + ln1(attn(x, mask))
            return x1 + ln2(block.ffn(x1))
        if order == "ffn_first":            # 两个子层的顺序反了（各自的 LayerNorm 跟着子层走）
            x1 = ln2(x + block.ffn(x))
            return ln1(x1 + attn(x1, mask))
        if order == "ffn_first_norms_in_place":   # 顺序反了，LayerNorm 还在原来的位置
            x1 = ln1(x + block.ffn(x))
            return ln2(x1 + attn(x1, mask))
        a = attn(x, mask)
        x1 = ln1(x + a if residual_attn else a)
        if not ffn:
            return x1
        second = (lambda t: attn(t, mask)) if attn_twice else block.ffn
        f = second({"x1": x1, "x": x}[ffn_input])
        base = {"x1": x1, "x": x, "x_and_x1": x + x1}[ffn_residual]
        return ln2(base + f if residual_ffn else f)


def _b(**kw):
    return lambda c: block_by_steps(c.x, c.block, **kw)


def _with_mha(c):
    """用了作业 4 的 mha 而不是 block.attn。"""
    from .given_data import block_exercise_data

    mha = block_exercise_data()["mha"]
    if mha.d_model != c.x.shape[-1]:
        return None
    return block_by_steps(c.x, c.block, attn=mha)


def _from_h(c):
    """用了作业 5（一）的 h 而不是 x 作输入。"""
    from .given_data import block_exercise_data

    h = block_exercise_data()["h"]
    if h.shape != c.x.shape:
        return None
    return block_by_steps(h, c.block)


DIAGNOSES = (
    Diagnosis("no_mask", _b(causal=False),
              "像是没有把因果遮蔽传给注意力：block.attn(x, mask)，mask 是 3×3 的下三角"),
    Diagnosis("pre_ln", _b(order="pre"),
              "这像是 Pre-LN 的排法（先 LayerNorm、再进子层、再加回输入）：这一题要 Post-LN，"
              "先把子层的输出加回输入，再对和做 LayerNorm"),
    Diagnosis("mask_transposed", _b(mask_transposed=True),
              "遮蔽像是转置了（上三角）：每个位置看的是它自己和它之后的 token。"
              "把 causal_mask(3) 原样传给 block.attn，不要 .T"),
    Diagnosis("pre_ln_final_norm", _b(order="pre_final"),
              "这像是 Pre-LN 的排法（先 LayerNorm、再进子层、再加回输入），最后又做了一次 LayerNorm"
              "（GPT-2 的排法）：这一题要 Post-LN，先把子层的输出加回输入，再对和做 LayerNorm"),
    Diagnosis("pre_and_post_ln", _b(order="pre_and_post"),
              "LayerNorm 像是做了两次：子层之前一次（Pre-LN），加回之后又一次（Post-LN）。"
              "这一题只要 Post-LN：子层直接用 x，加回之后再 LayerNorm"),
    Diagnosis("norm_without_gamma_beta", _b(plain_norm=True),
              "LayerNorm 像是没有用 block 的 γ、β（例如 F.layer_norm(t, (8,)) 没传 weight、bias）："
              "直接调用 block.ln_attn(…)、block.ln_ffn(…)"),
    Diagnosis("attention_twice", _b(attn_twice=True),
              "第二个子层像是又用了一次注意力：Block 的第二个子层是 FFN，block.ffn(x1)"),
    Diagnosis("input_h", _from_h,
              "像是用作业 5（一）的 h 当了 Block 的输入：这一题的输入是 x"),
    Diagnosis("residual_x_and_x1", _b(ffn_residual="x_and_x1"),
              "第二个残差像是加了两次：x + x1 + FFN(x1)。第二个 LayerNorm 的输入只是 x1 + FFN(x1)"),
    Diagnosis("residual_after_norm", _b(order="residual_after_norm"),
              "残差像是加在了 LayerNorm 之后（x + LN(子层(x))）：Post-LN 是 LN(x + 子层(x))，先加再归一化"),
    Diagnosis("no_residual_attn", _b(residual_attn=False),
              "注意力子层像是少了残差：LayerNorm 的输入应当是 x + 注意力的输出"),
    Diagnosis("no_residual_ffn", _b(residual_ffn=False),
              "FFN 子层像是少了残差：第二个 LayerNorm 的输入应当是 x1 + FFN(x1)"),
    Diagnosis("no_residual", _b(residual_attn=False, residual_ffn=False),
              "两个子层都少了残差：每个子层的输出都要先加回它的输入，再做 LayerNorm"),
    Diagnosis("norms_swapped", _b(swap_norms=True),
              "两个 LayerNorm 像是用反了：注意力之后用 block.ln_attn，FFN 之后用 block.ln_ffn"),
    Diagnosis("no_ffn", _b(ffn=False), "像是只做了注意力这一个子层：还要过 FFN 子层（加回、再 LayerNorm）"),
    Diagnosis("no_ln_attn", _b(norm_attn=False),
              "像是少了第一个 LayerNorm：注意力子层的输出加回 x 以后，要先过 block.ln_attn，再进 FFN 子层"),
    Diagnosis("no_ln_ffn", _b(norm_ffn=False),
              "像是少了最后一个 LayerNorm：FFN 子层的输出加回 x1 以后，还要过 block.ln_ffn"),
    Diagnosis("no_layer_norm", _b(norm_attn=False, norm_ffn=False),
              "像是两个 LayerNorm 都没有做：Post-LN 的每个子层都是“加回输入，再 LayerNorm”"),
    Diagnosis("ln_attn_twice", _b(ln_attn_twice=True),
              "两个子层像是都用了 block.ln_attn：FFN 子层之后用的是 block.ln_ffn（它的 γ、β 不一样）"),
    Diagnosis("ffn_on_x", _b(ffn_input="x"),
              "FFN 像是作用在了 x 上：它的输入应当是第一个子层的输出 x1 = block.ln_attn(x + 注意力输出)"),
    Diagnosis("ffn_residual_x", _b(ffn_residual="x"),
              "FFN 子层的残差像是加回了 x：它的残差是它自己的输入 x1，block.ln_ffn(x1 + block.ffn(x1))"),
    Diagnosis("ffn_on_x_residual_x", _b(ffn_input="x", ffn_residual="x"),
              "FFN 子层像是从 x 算起（block.ffn(x)，再加回 x）：它的输入和残差都应当是第一个子层的输出 x1"),
    Diagnosis("sublayers_swapped", _b(order="ffn_first"),
              "两个子层的顺序像是反了：先注意力（block.attn、block.ln_attn），再 FFN（block.ffn、block.ln_ffn）"),
    Diagnosis("sublayers_swapped_norms_kept", _b(order="ffn_first_norms_in_place"),
              "两个子层的顺序像是反了：先注意力（block.attn、block.ln_attn），再 FFN（block.ffn、block.ln_ffn）"),
    Diagnosis("used_mha", _with_mha,
              "注意力子层像是用了作业 4 的 mha：这一题要用 Block 自己的零件 block.attn"),
)


def _variant(kind: str):
    """Post-LN 的几种走样（r36b 的 w5b_66–71）：LayerNorm 做了两次、残差用了 LayerNorm 之前的和、
    FFN 前又做了一次 LayerNorm、只有第一个子层是 Pre-LN、最后多加了一个残差 x。"""
    def run(c):
        x, block = c.x, c.block
        n = x.shape[-2]
        mask = torch.ones(n, n, dtype=torch.bool).tril()
        ln1, ln2, attn, ffn = block.ln_attn, block.ln_ffn, block.attn, block.ffn
        with torch.no_grad():
            if kind == "ln_attn_applied_twice":
                x1 = ln1(ln1(x + attn(x, mask)))
                return ln2(x1 + ffn(x1))
            s1 = x + attn(x, mask)
            x1 = ln1(s1)
            if kind == "residual_before_norm":
                return ln2(s1 + ffn(x1))
            if kind == "extra_norm_before_ffn":
                return ln2(x1 + ffn(ln2(x1)))
            if kind == "pre_ln_first_sublayer":
                x1 = ln1(x + attn(ln1(x), mask))
                return ln2(x1 + ffn(x1))
            return ln2(x1 + ffn(x1)) + x      # extra_outer_residual
    return run


DIAGNOSES += (
    Diagnosis("ln_attn_applied_twice", _variant("ln_attn_applied_twice"),
              "第一个子层像是做了两次 LayerNorm：ln_attn(ln_attn(x + 注意力))。每个子层只在加回之后做一次"),
    Diagnosis("residual_before_norm", _variant("residual_before_norm"),
              "第二个子层的残差像是加回了 LayerNorm 之前的和（x + 注意力）：Post-LN 里 FFN 子层的输入和残差"
              "都是第一个子层 LayerNorm 之后的 x1：ln_ffn(x1 + ffn(x1))"),
    Diagnosis("extra_norm_before_ffn", _variant("extra_norm_before_ffn"),
              "FFN 之前像是又做了一次 LayerNorm（Pre-LN 和 Post-LN 混在了一起）：Post-LN 里 FFN 直接读 x1，"
              "ln_ffn 只在加回之后做：ln_ffn(x1 + ffn(x1))"),
    Diagnosis("pre_ln_first_sublayer", _variant("pre_ln_first_sublayer"),
              "第一个子层像是写成了 Pre-LN（注意力读的是 ln_attn(x)），第二个却是 Post-LN：这道题两个子层都是 "
              "Post-LN，注意力直接读 x，加回之后再 LayerNorm"),
    Diagnosis("extra_outer_residual", _variant("extra_outer_residual"),
              "最后像是多加了一个残差 x：Post-LN 的两个残差都已在各自的子层里加过，"
              "block_out 就是 ln_ffn(x1 + ffn(x1))"),
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
    judge_tensor(block_out, "block_out", truth, DIAGNOSES, c, what=f"形状 {tuple(truth.shape)} 的浮点张量")
    return passed(5, f"block_out 的形状是 {tuple(truth.shape)}，和带因果遮蔽的 block(x, mask) 一致")
