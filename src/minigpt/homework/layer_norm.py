"""作业 5（一）：亲手算 LayerNorm（见第 6 节）。"""

from __future__ import annotations

import torch

from .errors import HomeworkWrong
from .hints import Diagnosis, given_input, judge_tensor
from .values import passed


def layer_norm_by_steps(h: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float, *,
                        dims=(-1,), unbiased: bool = False, eps_where: str = "inside",
                        affine: str = "both", divide: bool = True, center: str = "both",
                        root: bool = True, var_sum: bool = False, multiply: bool = False) -> torch.Tensor:
    """LayerNorm = γ ⊙ (h − 均值) / √(方差 + ε) + β，均值、方差沿 dims；参数可以换成典型的错误做法。

    center："both"（减均值，方差也是减了均值的）、"rms"（都不减：RMSNorm）、"none"（分子不减均值）；
    root=False：除以方差 + ε 而不是它的平方根。"""
    h, gamma, beta = h.double(), gamma.double(), beta.double()
    centered = h - h.mean(dim=dims, keepdim=True) if center == "both" else h
    if center == "rms":
        var = (h ** 2).mean(dim=dims, keepdim=True)
    else:
        var = h.var(dim=dims, keepdim=True, unbiased=unbiased)
    if var_sum:   # 平方差求和而不是求平均：方差大了 n 倍
        var = ((h - h.mean(dim=dims, keepdim=True)) ** 2).sum(dim=dims, keepdim=True)
    if eps_where == "inside":
        spread = var + eps
    elif eps_where == "outside":
        spread = torch.sqrt(var) + eps if root else var + eps
    else:
        spread = var
    if root and eps_where != "outside":
        spread = torch.sqrt(spread)
    normed = centered / spread if divide else centered
    if multiply:   # 乘了 √(方差 + ε) 而不是除以它
        normed = centered * spread
    if affine == "both":
        return gamma * normed + beta
    if affine == "no_gamma":
        return normed + beta
    if affine == "no_beta":
        return gamma * normed
    if affine == "swapped":
        return beta * normed + gamma
    if affine == "minus_beta":
        return gamma * normed - beta
    if affine == "gamma_after_beta":
        return gamma * (normed + beta)
    if affine == "gamma_times_beta":
        return gamma * beta * normed
    return normed


def _ln(**kw):
    return lambda c: layer_norm_by_steps(c.h, c.gamma, c.beta, c.eps, **kw)


def _second_moment(c):
    """方差没有减均值：用了二阶矩 (h**2).mean()（r36c F7 的 secondmoment）。"""
    h = c.h.double()
    mu = h.mean(-1, keepdim=True)
    return c.gamma.double() * (h - mu) / torch.sqrt((h ** 2).mean(-1, keepdim=True) + c.eps) + c.beta.double()


def _sqrt_of_std(c):
    """分母开了两次平方根：√(标准差 + ε)（r36c F7 的 stdinsqrt）。"""
    h = c.h.double()
    mu = h.mean(-1, keepdim=True)
    std = h.var(-1, keepdim=True, unbiased=False).sqrt()
    return c.gamma.double() * (h - mu) / torch.sqrt(std + c.eps) + c.beta.double()


def _beta_before_divide(c):
    """(γ·(h − μ) + β) / √(方差 + ε)：β 加在了除法之前。"""
    h = c.h.double()
    mu = h.mean(dim=-1, keepdim=True)
    var = h.var(dim=-1, keepdim=True, unbiased=False)
    return (c.gamma.double() * (h - mu) + c.beta.double()) / torch.sqrt(var + c.eps)


DIAGNOSES = (
    Diagnosis("no_affine", _ln(affine="none"),
          "像是忘了 γ 和 β：标准化之后还要乘 gamma、加 beta（它们是可学习的参数）"),
    Diagnosis("gamma_times_beta", _ln(affine="gamma_times_beta"),
              "像是把 γ 和 β 乘在了一起（gamma * beta * …）：标准化之后乘 gamma，再加 beta"),
    Diagnosis("variance_summed", _ln(var_sum=True),
              "方差像是求了和（.sum()）而不是平均（.mean()）：方差是 (h − 均值)² 沿最后一维的平均"),
    Diagnosis("multiplied_by_std", _ln(multiply=True),
              "像是乘了 √(方差 + ε) 而不是除以它：标准化是 (h − 均值) / √(方差 + ε)"),
    Diagnosis("no_gamma", _ln(affine="no_gamma"), "像是忘了乘 γ（gamma）：标准化之后先乘 gamma，再加 beta"),
    Diagnosis("no_beta", _ln(affine="no_beta"), "像是忘了加 β（beta）：乘完 gamma 还要加 beta"),
    Diagnosis("gamma_beta_swapped", _ln(affine="swapped"), "gamma 和 beta 像是用反了：乘的是 gamma，加的是 beta"),
    Diagnosis("wrong_axis_seq", _ln(dims=(1,)),
          "均值和方差像是沿 seq 维（dim=1）算的：LayerNorm 是每个 token 自己跟自己比，"
          "沿最后一维（d_model，dim=-1）算"),
    Diagnosis("wrong_axis_all", _ln(dims=(1, 2)),
          "均值和方差像是对整个张量（所有 token 一起）算的：LayerNorm 对每个 token 单独算，沿最后一维"),
    Diagnosis("unbiased_variance", _ln(unbiased=True),
          "方差像是用了无偏估计（除以 n − 1，torch.var 的默认做法）：LayerNorm 除以 n，"
          "用 var(dim=-1, unbiased=False)，或者 ((h - mean) ** 2).mean(dim=-1)"),
    Diagnosis("no_eps", _ln(eps_where="none"),
          "像是没有加 ε：这里 h 的数很小，方差也小，ε = 1e-5 的作用看得出来。分母是 √(方差 + ε)"),
    Diagnosis("eps_outside_sqrt", _ln(eps_where="outside"),
          "ε 像是加在了开方之后（std + ε）：分母是 √(方差 + ε)，ε 加在根号里面"),
    Diagnosis("not_divided", _ln(divide=False), "像是只减了均值，没有除以 √(方差 + ε)"),
    Diagnosis("beta_subtracted", _ln(affine="minus_beta"), "β 像是被减去了：乘完 gamma 要加上 beta"),
    Diagnosis("beta_inside_gamma", _ln(affine="gamma_after_beta"),
              "像是先加 β、再乘 γ（gamma * (… + beta)）：应当先乘 gamma，再加 beta"),
    Diagnosis("no_sqrt", _ln(root=False),
              "像是除以了方差 + ε 本身，没有开平方：分母是 √(方差 + ε)（标准差），用 torch.sqrt"),
    Diagnosis("variance_not_centered", _second_moment,
              "方差像是没有减均值：(h ** 2).mean() 是二阶矩，方差是 ((h - 均值) ** 2).mean()，先减均值再平方"),
    Diagnosis("sqrt_of_std", _sqrt_of_std,
              "分母像是开了两次平方根（√(标准差 + ε)）：分母是 √(方差 + ε)，方差本身不开方"),
    Diagnosis("rms_norm", _ln(center="rms"),
              "像是没有减均值：这是 RMSNorm 的算法（除以均方根）。LayerNorm 先减去每个 token 的均值，"
              "方差也是减了均值之后算的"),
    Diagnosis("not_centered", _ln(center="none"),
              "分子像是没有减均值：(h - 均值) / √(方差 + ε)，减均值的是 h 本身"),
    Diagnosis("wrong_axis_batch", _ln(dims=(0,)),
              "均值和方差像是沿 batch 维（dim=0）算的：这里 batch 只有 1，每个数减去自己就成了 0，"
              "输出只剩下 β。LayerNorm 沿最后一维（d_model，dim=-1）算"),
    Diagnosis("eps_other_value", lambda c: layer_norm_by_steps(c.h, c.gamma, c.beta, 1e-6),
              "ε 像是用了 1e-6：用题目给的 eps（它也是 block 里 LayerNorm 的 ε）"),
    Diagnosis("eps_other_value", lambda c: layer_norm_by_steps(c.h, c.gamma, c.beta, 1e-3),
              "ε 像是用了 1e-3：用题目给的 eps（它也是 block 里 LayerNorm 的 ε）"),
    Diagnosis("block_ln_attn", lambda c: c.block_norm("ln_attn"),
              "像是用了 block.ln_attn(h)：那是作业 5（二）里 Block 的 LayerNorm，γ、β 不是这一题给的。"
              "用题目给的 gamma、beta、eps 亲手算"),
    Diagnosis("block_ln_ffn", lambda c: c.block_norm("ln_ffn"),
              "像是用了 block.ln_ffn(h)：那是作业 5（二）里 Block 的 LayerNorm，γ、β 不是这一题给的。"
              "用题目给的 gamma、beta、eps 亲手算"),
)

DIAGNOSES += (
    Diagnosis("std_unbiased_no_eps", _ln(unbiased=True, eps_where="none"),
              "像是除以了 h.std(…)：它默认是无偏的标准差（除以 n − 1），而且没有加 ε。"
              "LayerNorm 用有偏的方差（除以 n），再加 ε 开平方：torch.sqrt(h.var(dim=-1, keepdim=True, "
              "unbiased=False) + eps)"),
    Diagnosis("beta_before_divide", _beta_before_divide,
              "β 像是加在了除法之前：(γ·(h − μ) + β) / √(方差 + ε)。先标准化 (h − μ) / √(方差 + ε)，"
              "再乘 γ、加 β"),
)


class _Data:
    def __init__(self, h, gamma, beta, eps):
        self.h, self.gamma, self.beta, self.eps = h.detach(), gamma.detach(), beta.detach(), float(eps)

    def block_norm(self, name: str) -> torch.Tensor | None:
        """作业 5（二）的 Block 里那个 LayerNorm 对 h 的输出（学生用错了零件时会得到它）。"""
        from .given_data import block_exercise_data

        norm = getattr(block_exercise_data()["block"], name)
        if norm.weight.shape != self.h.shape[-1:]:
            return None
        with torch.no_grad():
            return norm(self.h.float())


def judge_layer_norm(ln_out, h, gamma, beta, eps=1e-5) -> str:
    """作业 5（一）：ln_out = γ ⊙ (h − 均值) / √(方差 + ε) + β，均值和方差沿最后一维、方差除以 n
    （见第 6 节 LayerNorm）。"""
    h = given_input(h, "h")
    d = h.shape[-1]
    params = []
    for name, p in (("gamma", gamma), ("beta", beta)):
        if not isinstance(p, torch.Tensor) or tuple(p.shape) != (d,) or not p.dtype.is_floating_point:
            raise HomeworkWrong(f"题目给的 {name} 应是长度 {d} 的浮点张量：请重新运行上面给出数据的单元", "given")
        params.append(p.detach())
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < 1:
        raise HomeworkWrong("题目给的 eps 应是一个很小的正数（1e-5）：请重新运行上面给出数据的单元", "given")
    c = _Data(h, *params, eps)
    truth = layer_norm_by_steps(c.h, c.gamma, c.beta, c.eps)
    judge_tensor(ln_out, "ln_out", truth, DIAGNOSES, c, what=f"形状 {tuple(truth.shape)} 的浮点张量", shapes=(
        ("reduced", tuple(truth.shape[:-1]), "像是只交了每个 token 的均值或方差：LayerNorm 的输出和输入同形"),
        ("keepdim", tuple(truth.shape[:-1]) + (1,), "像是只交了每个 token 的均值或方差：LayerNorm 的输出和输入同形"),
    ))
    return passed(5, f"ln_out 的形状是 {tuple(truth.shape)}，与 nn.LayerNorm（同样的 γ、β、ε）的输出一致")
