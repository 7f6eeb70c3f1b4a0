"""作业 4（二）：用给定的权重，一步一步算出多头注意力的输出（见第 4 节）。"""

from __future__ import annotations

import math

import torch

from .hints import Diagnosis, given_input, given_module, judge_tensor
from .values import passed

NEG_INF = float("-inf")


def _allowed(n: int, mask: str) -> torch.Tensor | None:
    """各种遮蔽矩阵（True = 可以看）；mask 不是换掉分数的写法时返回 None。"""
    ones = torch.ones(n, n, dtype=torch.bool)
    return {"right": ones.tril(), "triu": ones.triu(), "diagonal_plus_one": ones.tril(1),
            "inverted": ~ones.tril(), "diagonal_masked": ones.tril(-1)}.get(mask)


def _masked(scores: torch.Tensor, mask: str, fill: float) -> torch.Tensor:
    """分数 [b, h, n, n] 遮蔽之后（softmax 之前）的样子；mask 说明用的是哪一种做法。"""
    n = scores.shape[-1]
    tril = torch.ones(n, n, dtype=torch.bool).tril()
    if mask in ("none", "after_softmax"):
        return scores
    if mask == "fill_zero":            # masked_fill(…, 0)，或者分数乘 mask
        return scores.masked_fill(~tril, 0.0)
    if mask == "added":                # 把 0/1 的 mask 加到分数上（F.scaled_dot_product_attention 的浮点 attn_mask 也是加）
        return scores + tril.double()
    return scores.masked_fill(~_allowed(n, mask), fill)


def mha_by_steps(x: torch.Tensor, mha, *, mask: str = "right", fill: float = NEG_INF,
                 scale: str = "d_k", split: str = "right", merge: str = "right", w_o: bool = True,
                 dim: int = -1, bias: bool = True, transpose_w: bool = True, project_v: bool = True,
                 swap_qk: bool = False, same_projection: bool = False, w_o_per_head: bool = False,
                 single_head: bool = False, residual: bool = False, softmax: bool = True,
                 weights_transposed: bool = False, no_bias_in: tuple = (), no_transpose_in: tuple = (),
                 v_layer: str = "W_V", k_layer: str = "W_K", w_o_bias_only: bool = False,
                 scale_after_softmax: bool = False) -> torch.Tensor:
    """按第 4 节的步骤算多头注意力；每个关键字参数都可以换成一种典型的错误做法（诊断表用它）。"""
    b, n, d = x.shape
    h = 1 if single_head else mha.num_heads
    d_k = d // h
    x = x.double()

    def lin(name, t):   # name：mha 里的哪一层；no_bias_in、no_transpose_in 里的层照错误的写法算
        layer = getattr(mha, name)
        w = layer.weight.detach().double()
        out = t @ (w.T if transpose_w and name not in no_transpose_in else w)
        return out + layer.bias.detach().double() if bias and name not in no_bias_in else out

    def part(t):  # [b, n, d] → [b, h, n, d_k]
        if split == "no_transpose":
            return t.reshape(b, h, n, d_k)
        if split == "interleaved":     # view 成 [batch, seq, d_k, heads]：每个头隔几维取一个
            return t.view(b, n, d_k, h).permute(0, 3, 1, 2)
        return t.view(b, n, h, d_k).transpose(1, 2)

    w_k = "W_Q" if same_projection else k_layer
    w_v = "W_Q" if same_projection else v_layer
    q, k = part(lin("W_Q", x)), part(lin(w_k, x))
    v = part(lin(w_v, x)) if project_v else part(x)
    if swap_qk:
        q, k = k, q
    root = {"d_k": math.sqrt(d // mha.num_heads), "d_model": math.sqrt(d), "none": 1.0,
            "d_k_itself": d // mha.num_heads, "num_heads": math.sqrt(mha.num_heads)}[scale]
    scores = q @ k.transpose(-2, -1)
    scores = _masked(scores if scale_after_softmax else scores / root, mask, fill)     # [b, h, n, n]
    weights = torch.softmax(scores, dim=dim) if softmax else scores
    if scale_after_softmax:
        weights = weights / root
    if mask == "after_softmax":
        weights = weights * torch.ones(n, n).tril().double()
    if weights_transposed:
        weights = weights.transpose(-2, -1)
    out = weights @ v                                                 # [b, h, n, d_k]
    if merge == "no_transpose":
        out = out.reshape(b, n, d)
    else:
        out = out.transpose(1, 2).reshape(b, n, d)
    if w_o_bias_only:
        out = out + mha.W_O.bias.detach().double()
    elif w_o:
        out = lin("W_O", out)
        if w_o_per_head:               # 每个头各乘一段 W_O 再相加：偏置加了 num_heads 次
            out = out + (mha.num_heads - 1) * mha.W_O.bias.detach().double()
    return out + x if residual else out


def _m(**kw):
    return lambda c: mha_by_steps(c.x, c.mha, **kw)


DIAGNOSES = (
    Diagnosis("no_mask", _m(mask="none"),
              "像是没有遮蔽：每个位置都看到了后面的 token。"
              "分数要在 softmax 之前把未来位置换成 -inf（各头共用同一个因果遮蔽矩阵）"),
    Diagnosis("softmax_then_mask", _m(mask="after_softmax"),
              "像是先 softmax、再把未来位置乘 0：被遮住的那部分权重丢了，每行加起来不到 1。"
              "应当先把未来位置的分数设为 -inf，再做 softmax"),
    Diagnosis("filled_zero", _m(mask="fill_zero"),
              "被遮住的分数像是填成了 0 而不是 -inf（分数乘 mask 也是这个结果）："
              "e⁰ = 1，未来位置照样分到权重。填 float(\"-inf\")"),
    Diagnosis("mask_added", _m(mask="added"),
              "像是把 0/1 的 mask 加到了分数上：未来位置照样分到权重。"
              "F.scaled_dot_product_attention 的 attn_mask 若是浮点张量，也是加到分数上的："
              "传布尔的 mask（True = 可以看），或者 is_causal=True"),
    Diagnosis("triu", _m(mask="triu"),
              "遮住的是过去而不是未来：遮蔽矩阵像是上三角（torch.triu）。位置 i 能看的是 0…i"),
    Diagnosis("diagonal_plus_one", _m(mask="diagonal_plus_one"),
              "遮蔽多放开了一格：每个位置还看到了紧挨着的下一个 token，"
              "像是用了 torch.tril(…, diagonal=1)。位置 i 能看的是 0…i"),
    Diagnosis("inverted", _m(mask="inverted", fill=-1e9),
              "遮蔽反了：被换掉的是能看的位置（对角线及以下），留下的却是未来。"
              "像是写成了 masked_fill(mask == 1, …)。要换掉的是未来位置（mask == 0）"),
    Diagnosis("scaled_by_d_model", _m(scale="d_model"),
              "分数像是除以了 √d_model：每个头只有 d_k = d_model / 头数 维，缩放用的是 √d_k"),
    Diagnosis("scaled_by_d_k", _m(scale="d_k_itself"),
              "分数像是除以了 d_k 本身（或者除了两次 √d_k）：缩放只除一次 √d_k"),
    Diagnosis("unscaled", _m(scale="none"), "分数像是没有除以 √d_k"),
    Diagnosis("no_bias", _m(bias=False),
              "像是投影时没有加偏置（只乘了 weight）：mha.W_Q、W_K、W_V、W_O 都是带偏置的 nn.Linear，"
              "直接调用 mha.W_Q(x) 这样的层，偏置就加上了"),
    Diagnosis("weight_not_transposed", _m(transpose_w=False),
              "像是直接乘了 weight 而没有转置：nn.Linear 算的是 x @ weight.T + bias。"
              "直接调用 mha.W_Q(x) 这样的层最稳妥"),
    Diagnosis("v_not_projected", _m(project_v=False),
              "V 像是没有投影：直接把 x 拆头当成了 V。V 也要先过 mha.W_V"),
    Diagnosis("same_projection", _m(same_projection=True),
              "Q、K、V 像是都用 mha.W_Q 算的：K 用 mha.W_K，V 用 mha.W_V"),
    Diagnosis("q_k_swapped", _m(swap_qk=True),
              "Q 和 K 像是用反了（分数算成了 K @ Q.T）：第 i 行应当是 Query i 对各个 Key 的分数，"
              "分数 = Q @ K.transpose(-2, -1)"),
    Diagnosis("weights_transposed", _m(weights_transposed=True),
              "注意力权重像是被转置了再乘 V：第 i 行是 Query i 分给各个 Key 的权重，直接用 weights @ V"),
    Diagnosis("no_softmax", _m(softmax=False, mask="fill_zero"),
              "像是没有做 softmax：遮蔽后的分数直接乘了 V。权重 = softmax(遮蔽后的分数, dim=-1)"),
    Diagnosis("no_w_o", _m(w_o=False),
              "像是少了最后的输出投影 W_O：各头的结果接起来以后，还要再过 mha.W_O"),
    Diagnosis("w_o_per_head", _m(w_o_per_head=True),
              "W_O 像是对每个头分别用了一次再相加：权重那部分没错，偏置却加了头数那么多次。"
              "先把各头合并成 [batch, seq, d_model]，再整个过一次 mha.W_O"),
    Diagnosis("single_head", _m(single_head=True),
              "像是只用了一个头：没有拆成 2 个头，整个 d_model 维一起算了注意力。"
              "要把 Q、K、V 拆成 [batch, heads, seq, d_k]，每个头各算各的"),
    Diagnosis("residual_added", _m(residual=True),
              "像是多加了残差 x：这一问只要注意力子层本身的输出，残差连接是作业 5 的 Block 里的事"),
    Diagnosis("split_without_transpose", _m(split="no_transpose"),
              "拆头时像是直接 view 成了 [batch, heads, seq, d_k]：要先 view 成 [batch, seq, heads, d_k]，"
              "再 transpose(1, 2)"),
    Diagnosis("merge_without_transpose", _m(merge="no_transpose"),
              "合并时像是直接把 [batch, heads, seq, d_k] view 成了 [batch, seq, d_model]：要先 transpose(1, 2)"),
    Diagnosis("wrong_dim", _m(dim=-2),
              "softmax 像是做在了倒数第二维：每个 Query 的权重在最后一维，用 dim=-1"),
    Diagnosis("softmax_over_heads", _m(dim=1, fill=-1e9),
              "softmax 像是做在了头的维度（dim=1）上：每个头的权重各自归一化，沿最后一维（dim=-1）"),
)

# 自己手写投影（x @ mha.W_Q.weight.T + mha.W_Q.bias）时只错了一层
DIAGNOSES += tuple(
    Diagnosis("no_bias_one_layer", _m(no_bias_in=(name,)),
              f"像是 {name} 这一层没有加偏置（只乘了 mha.{name}.weight.T）：nn.Linear 算的是 "
              f"x @ weight.T + bias。直接调用 mha.{name}(…)，偏置就加上了")
    for name in ("W_Q", "W_K", "W_V", "W_O")) + tuple(
    Diagnosis("weight_not_transposed_one_layer", _m(no_transpose_in=(name,)),
              f"像是 {name} 这一层直接乘了 mha.{name}.weight 而没有转置：nn.Linear 算的是 "
              f"x @ weight.T + bias。直接调用 mha.{name}(…) 最稳妥")
    for name in ("W_Q", "W_K", "W_V", "W_O")) + (
    Diagnosis("v_from_w_k", _m(v_layer="W_K"), "V 像是用 mha.W_K 算的：K 用 mha.W_K，V 用 mha.W_V"),
    Diagnosis("k_from_w_q", _m(k_layer="W_Q"),
              "K 像是用 mha.W_Q 算的（复制那一行时忘了改？）：Q 用 mha.W_Q，K 用 mha.W_K"),
    Diagnosis("split_interleaved", _m(split="interleaved"),
              "拆头时每个头拿到的不是连着的 d_k 维，而是隔几个取一个（头交错了）：像是 view 成了 "
              "[batch, seq, d_k, heads]。先 view 成 [batch, seq, heads, d_k]，再 transpose(1, 2)"),
    Diagnosis("w_o_raw_weight", _m(no_transpose_in=("W_O",), no_bias_in=("W_O",)),
              "输出投影像是直接乘了 mha.W_O.weight：既没有转置，也没有加偏置。nn.Linear 算的是 "
              "x @ weight.T + bias，直接调用 mha.W_O(…) 最稳妥"),
    Diagnosis("single_head_by_d_model", _m(single_head=True, scale="d_model"),
              "像是只用了一个头：没有拆成各头，整个 d_model 维一起算注意力，还除以了 √d_model。"
              "要把 Q、K、V 拆成 [batch, heads, seq, d_k]，每个头各算各的，分数除以 √d_k"),
    Diagnosis("w_o_bias_only", _m(w_o_bias_only=True),
              "像是只加了 W_O 的偏置，没有乘它的权重：输出投影要整个过一次 mha.W_O(…)"),
    Diagnosis("scaled_by_num_heads", _m(scale="num_heads"),
              "分数像是除以了 √头数：缩放用的是 √d_k，d_k 是每个头的维数（d_model / 头数）"),
    Diagnosis("scaled_after_softmax", _m(scale_after_softmax=True),
              "像是 softmax 之后才除以 √d_k：这样每行权重加起来不再是 1。"
              "缩放要做在 softmax 之前：先 分数 / √d_k，再遮蔽，再 softmax"),
) + tuple(
    Diagnosis("filled_finite", _m(fill=value),
              f"被遮住的分数像是填成了 {value:g}：这个数不够小，e^({value:g}) 不是 0，"
              "未来位置还分到了一点权重。填 float(\"-inf\")")
    for value in (-1.0, -2.0, -3.0, -5.0, -10.0))

# 答案里有 NaN：某些行的分数全被换成了 -inf（或者有 +inf）
NAN_DIAGNOSES = (
    Diagnosis("inverted", _m(mask="inverted"),
              "遮蔽反了：被换成 -inf 的是能看的位置（对角线及以下），最后一行一个能看的也没剩下，softmax 得出 NaN。"
              "要换掉的是未来位置（mask == 0）"),
    Diagnosis("diagonal_masked", _m(mask="diagonal_masked"),
              "对角线也被遮住了：第 0 行一个能看的位置也没剩下，softmax 得出 NaN。位置 i 应当能看到自己"),
    Diagnosis("filled_pos_inf", _m(fill=float("inf")),
              "被遮住的分数填成了 +inf 而不是 -inf：softmax 只能算出 ∞/∞ = NaN。填 float(\"-inf\")"),
    Diagnosis("no_softmax", _m(softmax=False),
              "像是没有做 softmax：遮蔽后的分数（带着 -inf）直接乘了 V。权重 = softmax(遮蔽后的分数, dim=-1)"),
    Diagnosis("softmax_over_heads", _m(dim=1),
              "softmax 像是做在了头的维度（dim=1）上：未来位置在每个头里都是 -inf，沿头归一化就成了 NaN。"
              "每个头的权重各自归一化，沿最后一维（dim=-1）"),
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
    judge_tensor(attn_out, "attn_out", truth, DIAGNOSES, c, what=f"形状 {tuple(truth.shape)} 的浮点张量", shapes=(
        ("shape_heads", (truth.shape[0], mha.num_heads, truth.shape[1], truth.shape[2] // mha.num_heads),
         "这还是各头分开的输出：要把各头合并回 [batch, seq, d_model]，再过 W_O"),
    ), nan_diagnoses=NAN_DIAGNOSES)
    return passed(4, f"attn_out 的形状是 {tuple(truth.shape)}，和带因果遮蔽的 mha(x, mask) 一致")
