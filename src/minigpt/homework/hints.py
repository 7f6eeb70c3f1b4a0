"""诊断表（见「作业」页）：每条诊断是一行——名字、怎样算出“犯了这个错会得到的值”、说什么。

检查器按表的顺序，从最具体的错误到最笼统的，逐条比较；第一条在容差之内对得上的，就是提示。
一条也对不上时，检查器给出平铺直叙的事实（哪一格不一致），不猜。
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from .values import TOLERANCE, after_colon, close


@dataclass(frozen=True)
class Diagnosis:
    """一条诊断：答案与 ``make(ctx)`` 在容差之内相等（且那个值本身不是正确答案），就说 ``message``。

    make 返回 None 表示这条诊断对这组数据不适用（例如 Q、K 形状不同时没有 Q @ Q.T）。
    """

    name: str
    make: Callable[[Any], Any]
    message: str


def first_match(got: torch.Tensor, truth: torch.Tensor, rows, ctx) -> Diagnosis | None:
    """表里第一条对得上 got 的诊断；都对不上时返回 None。"""
    for row in rows:
        try:
            value = row.make(ctx)
        except (RuntimeError, IndexError, ValueError):  # 这组数据上算不出这种错误
            continue
        if value is None:
            continue
        value = torch.as_tensor(value).double()
        if close(got, value) and not close(value, truth):
            return row
    return None


def first_nan_match(got: torch.Tensor, rows, ctx) -> Diagnosis | None:
    """有 NaN 的答案：表里第一条连 NaN 的位置都对得上的诊断；都对不上时返回 None。"""
    for row in rows:
        try:
            value = row.make(ctx)
        except (RuntimeError, IndexError, ValueError):
            continue
        if value is None:
            continue
        value = torch.as_tensor(value).double()
        if value.shape == got.shape and torch.isnan(value).any() \
                and torch.allclose(got, value, equal_nan=True, **TOLERANCE):
            return row
    return None


def rounding_hint(got: torch.Tensor, truth: torch.Tensor) -> str | None:
    """got 在容差之外、是把 truth 四舍五入到 0～4 位小数的结果时给出提示
    （常见于照着打印出的小数抄）；
    否则，got 与 truth 处处相差不到千分之一时，如实说“很接近但超出了容差”。

    提示只说像是哪种做法，不说正确值，也不说差了多少。
    """
    if got.shape != truth.shape or not torch.isfinite(got).all():
        return None
    for d in range(5):
        rounded = torch.round(truth, decimals=d)
        if close(got, rounded) and not close(rounded, truth):
            return copied_hint(d)
    gap = (got - truth).abs().max()
    if gap <= 1e-3 * max(1.0, truth.abs().max().item()):
        return ("你的数与正确值处处相差不到千分之一，但超出了容差：像是用了照着打印出来的"
                "几位小数手算的数。请直接用题目给的张量计算，不要舍入")
    return None


# 书和检查器打印小数的位数（print 张量 4 位，✔ 消息 :.4f）；
# 抄下任何一种都认得出，多查几位也无妨
PRINTED_DECIMALS = range(0, 9)


def copied_decimals(got: torch.Tensor, truth: torch.Tensor,
                    spread: float = 0.0) -> int | None:
    """一个数的答案（0 维）正好是 truth 舍入到 d 位小数的那个数
    （照着打印出来的数抄的）时返回 d，否则返回 None。

    它与容差无关：0.2776 离正确值 0.277595… 在容差之内，却不是算出来的。
    只认恰好等于舍入值的数（float64 的，或转成 float32 的）；舍入值离 truth 近到
    float32 的计算也可能得出它时不算，
    所以 float32、float64、任何求和顺序算出的数都不会被当成抄的。
    spread：float32 按不同顺序求和可能差出的距离（由调用者按项数和各项大小估计）。
    """
    if got.dim() != 0 or truth.dim() != 0 or not torch.isfinite(got).all():
        return None
    g, t = got.double().item(), truth.double().item()
    # float32 的计算可能差到的距离：相对 1e-6（约 8 个 float32 的最小单位），
    # 再加一点绝对误差
    near = max(1e-6 * abs(t), spread) + 1e-12
    for d in PRINTED_DECIMALS:
        r = round(t, d)
        if abs(r - t) <= near:
            continue
        if g == r or g == torch.tensor(r, dtype=torch.float32).double().item():
            return d
    return None


def copied_hint(d: int, one: bool = False) -> str:
    """copied_decimals 认出的抄来的数：说像是哪种做法。one：答案只是一个数（英文里说 this number，
    不说 your numbers，r36c F9）。"""
    if d == 0:
        if one:
            return ("这个数像是取了整（int(…) 或 round(…)）：这里的数一般是小数，"
                    "请交计算出来的数本身，不要取整")
        return ("你的数像是取了整（int(…) 或 round(…)）：这里的数一般是小数，"
                "请交计算出来的张量本身，不要取整")
    # 英文里 1 位是单数（decimal place），单独一句
    if one:
        rounded = "这个数像是四舍五入到了 1 位小数" if d == 1 else f"这个数像是四舍五入到了 {d} 位小数"
    else:
        rounded = "你的数像是四舍五入到了 1 位小数" if d == 1 else f"你的数像是四舍五入到了 {d} 位小数"
    return (rounded + "（或者是照着打印出来的数抄的）："
            "请交计算出来的张量本身，不要舍入，也不要抄打印出来的数")


def constant_offset(got: torch.Tensor, truth: torch.Tensor) -> str | None:
    """got 的每个数都比 truth 多（或少）同一个数时的提示；否则返回 None。"""
    if got.shape != truth.shape or got.numel() < 2 or not torch.isfinite(got).all():
        return None
    gap = got - truth
    if close(gap, torch.full_like(gap, gap.flatten()[0].item())) and not close(gap, torch.zeros_like(gap)):
        return (f"每个数都比正确值多了同一个数（{gap.flatten()[0].item():.4g}）："
                "像是多加（或多减）了一个常数，检查最后一步有没有加上别的东西")
    return None


def judge_tensor(value, name: str, truth: torch.Tensor, diagnoses, ctx, *, what: str,
                 shapes: tuple = (), nan_diagnoses: tuple = ()) -> None:
    """一个浮点张量答案：没填、类型、形状（shapes 里是 (诊断名, 形状, 提示)）、典型错误（diagnoses；
    答案里有 NaN 时是 nan_diagnoses）、舍入，最后是平铺直叙的“与正确结果不一致”。
    对了返回 None，不对抛 HomeworkWrong。
    """
    from .errors import HomeworkWrong
    from .values import TOLERANCE_TEXT, float_tensor, require, to_tensor

    require(**{name: value})
    try:
        got = float_tensor(value, name, what)
    except HomeworkWrong as err:
        if err.diagnosis != "nan":
            raise
        row = first_nan_match(to_tensor(value, name, what).double(), nan_diagnoses, ctx)
        if row is None:
            raise
        raise HomeworkWrong(f"{name} 里有 NaN：{after_colon(row.message)}", row.name) from None
    if got.shape != truth.shape:
        hint = next(((n, h) for n, shape, h in shapes if tuple(got.shape) == tuple(shape)), None)
        raise HomeworkWrong((f"检查 {name} 的形状：应该是 {tuple(truth.shape)}，收到 {tuple(got.shape)}。"
                             + (hint[1] if hint else "")).rstrip(), hint[0] if hint else "shape")
    if not torch.isfinite(got).all():
        raise HomeworkWrong(f"{name} 里有无穷大：检查计算过程（遮蔽的 -inf 只该出现在 softmax 之前）",
                            "inf")
    copied = copied_decimals(got, truth)
    if copied is not None:
        raise HomeworkWrong(f"检查 {name} 的数值：{copied_hint(copied, one=True)}", "rounding")
    if close(got, truth):
        return
    row = first_match(got, truth, diagnoses, ctx)
    if row is not None:
        raise HomeworkWrong(f"检查 {name}：{after_colon(row.message)}", row.name)
    rounding = rounding_hint(got, truth)
    if rounding is not None:
        raise HomeworkWrong(f"检查 {name} 的数值：{rounding}", "rounding")
    offset = constant_offset(got, truth)
    if offset is not None:
        raise HomeworkWrong(f"检查 {name}：{offset}", "constant_offset")
    bad = ~torch.isclose(got, truth.to(got.dtype), **TOLERANCE)
    first = tuple(bad.nonzero()[0].tolist())
    raise HomeworkWrong(
        f"检查 {name}：与正确结果不一致（{TOLERANCE_TEXT}）：{int(bad.sum())} 个元素不相等，"
        f"{int((~bad).sum())} 个相等；第一个不相等的在下标 {list(first)}（你的是 {got[first].item():.4f}）。"
        "把这一步的中间结果打印出来，逐步和公式核对", "values")


def given_input(x, name: str = "x") -> torch.Tensor:
    """题目给的 [batch, seq, d_model] 浮点张量；不是的话请学生重新运行给数据的单元。"""
    from .errors import HomeworkWrong

    if not isinstance(x, torch.Tensor) or x.dim() != 3 or not x.dtype.is_floating_point \
            or x.device.type != "cpu" or not torch.isfinite(x).all():
        raise HomeworkWrong(f"题目给的 {name} 应是 CPU 上的三维浮点张量 [batch, seq, d_model]："
                            "请重新运行上面给出数据的单元", "given")
    return x.detach()


def given_module(module, kind: type, name: str, d_model: int):
    """题目给的模块（mha、block）：类型和宽度对得上才用它。"""
    from .errors import HomeworkWrong

    if not isinstance(module, kind) or getattr(module, "d_model", None) not in (None, d_model):
        raise HomeworkWrong(f"题目给的 {name} 应是 {kind.__name__}，宽度 {d_model}："
                            "请重新运行上面给出数据的单元", "given")
    return module
