"""把学生的答案和题目数据整理成张量或整数（见「作业」页）；不合要求时抛中文的 HomeworkWrong。

这里的函数不会因为奇怪的输入抛出别的异常。
"""

from __future__ import annotations

import numbers

import torch

from .errors import HomeworkNotFilled, HomeworkWrong
from .names import listing

# 容差：|你的 − 正确| ≤ atol + rtol·|正确|（逐元素，和 torch.allclose 相同）
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
TOLERANCE_TEXT = "容差：逐元素 |差| ≤ 1e-5 + 1e-4 × |正确值|"


# 这些词在句首也保持大写（专有名词与本书的术语）
_PROPER = ("Query", "Key", "Value", "Queries", "Keys", "Values", "Python", "Boolean")


def after_colon(hint: str) -> str:
    """接在冒号后面的一句提示：句首是普通单词时，首字母改成小写（中文没有大小写，原样返回）。"""
    word = hint.split(" ", 1)[0]
    if word == "A" or (len(word) > 1 and word[0].isupper() and word[1:].isalpha()
                       and word[1:].islower() and word not in _PROPER):
        return hint[0].lower() + hint[1:]
    return hint


def require(**answers) -> None:
    """还是 None 或 ... 的答案：抛 HomeworkNotFilled，说出是哪几个。"""
    missing = [name for name, value in answers.items()
               if value is None or value is Ellipsis]
    if missing:
        verb = "还没有填写：" if len(missing) == 1 else "都还没有填写："
        raise HomeworkNotFilled(f"{listing(missing)} {verb}"
                                "把 None 换成你的计算结果再运行", "not_filled")


def passed(n: int, detail: str) -> str:
    return f"✔ 作业 {n} 通过：{detail}"


def type_name(value) -> str:
    return type(value).__name__


def short(value, limit: int = 60) -> str:
    try:
        text = repr(value)
    except Exception:  # 学生自己的类，repr 也可能出错
        text = f"<{type_name(value)} 对象>"
    return text if len(text) <= limit else text[:limit] + "…"


def to_tensor(value, name: str, what: str, *, given: bool = False) -> torch.Tensor:
    """把数字、列表、numpy 数组或张量变成 CPU 上的张量；类型或设备不对时给出中文说明。

    given=True 表示这是题目给的数据（不是答案），消息会提醒重新运行给数据的单元。
    """
    where = f"题目给的 {name}" if given else name
    again = ("（它是题目给的数据：请重新运行上面给出数据的单元，不要改它）"
             if given else "")
    if value is None or value is Ellipsis:
        raise HomeworkWrong(f"{where} 是 {value!r}，应该是{what}{again}", "type")
    odd = isinstance(value, (bool, str, bytes, dict, set))
    if odd or callable(value) and not isinstance(value, torch.Tensor):
        raise HomeworkWrong(f"{where} 应该是{what}，收到的是 {type_name(value)}："
                            f"{short(value)}{again}", "type")
    if isinstance(value, torch.Tensor):
        t = value.detach()
    else:
        try:
            t = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError, OverflowError):
            raise HomeworkWrong(
                f"{where} 应该是{what}，收到的是 {type_name(value)}："
                f"{short(value)}{again}", "type") from None
    if t.device.type != "cpu":
        raise HomeworkWrong(
            f"{where} 在设备 {t.device} 上；检查器在 CPU 上比较，"
            f"请先用 {name}.cpu() 把它拿回 CPU{again}", "device")
    if t.is_complex():
        raise HomeworkWrong(f"{where} 是复数张量（{t.dtype}），应该是{what}{again}", "dtype")
    return t


def float_tensor(value, name: str, what: str, *, given: bool = False) -> torch.Tensor:
    """答案或数据应当是实数：Python 数字或浮点张量（float32 / float64）。
    返回 float64 张量。
    """
    t = to_tensor(value, name, what, given=given)
    if isinstance(value, torch.Tensor):
        if value.dtype in (torch.float16, torch.bfloat16):
            raise HomeworkWrong(
                f"{name} 的数据类型是 {value.dtype}，精度太低，无法在容差内比较；"
                "请用 float32（默认的 dtype）", "dtype")
        if not value.dtype.is_floating_point:
            raise HomeworkWrong(
                f"{name} 的数据类型是 {value.dtype}，"
                "应该是浮点张量（float32 或 float64）："
                "这里的数都是小数，整数或布尔张量装不下它们", "dtype")
    elif t.dtype == torch.bool:
        raise HomeworkWrong(f"{name} 应该是{what}，收到的是布尔值", "type")
    t = t.double()
    if torch.isnan(t).any():
        raise HomeworkWrong(f"{name} 里有 NaN（不是数）：请检查计算过程", "nan")
    return t


def count(value, name: str, *, given: bool = False) -> int:
    """一个整数：接受 Python int、numpy 整数、0 维整数张量；浮点数（哪怕是 1050624.0）
    不算。
    """
    where = f"题目给的 {name}" if given else name
    if value is None or value is Ellipsis:
        raise HomeworkWrong(f"{where} 是 {value!r}，应该是一个整数", "type")
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            raise HomeworkWrong(f"{where} 在设备 {value.device} 上；"
                                "请先用 .cpu() 或 .item() 取出这个数", "device")
        if value.dim() != 0:
            raise HomeworkWrong(f"{where} 应该是一个整数，"
                                f"收到形状 {tuple(value.shape)} 的张量；"
                                "用 .item() 取出一个数", "shape")
        if value.dtype == torch.bool:
            raise HomeworkWrong(f"{where} 应该是一个整数，收到布尔张量", "type")
        if value.dtype.is_floating_point or value.is_complex():
            raise HomeworkWrong(
                f"{where} 必须是整数：参数个数是数出来的，"
                f"收到的是 {value.dtype} 张量 {value.item()!r}。"
                "计数只用整数的 * 和 +；若用了除法，换成 // 或 int(...)", "float_count")
        return int(value.item())
    if hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        value = value[()]  # numpy 的 0 维数组 → numpy 标量
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise HomeworkWrong(f"{where} 应该是一个整数，收到布尔值 {value!r}", "type")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        raise HomeworkWrong(
            f"{where} 必须是整数：参数个数是数出来的，"
            + (f"收到的是浮点数 {value!r}。" if type(value) is float
               else f"收到的是浮点数 {value!r}（{type_name(value)}）。") +
            "计数只用整数的 * 和 +；若用了除法，换成 // 或 int(...)", "float_count")
    if type(value).__name__ == "int":   # 探针读不回的大整数（≥ 2**63，r36b F9）
        raise HomeworkWrong(f"{where} 是一个太大的整数（绝对值不小于 2**63）：参数个数没有这么多，"
                            "检查是不是乘了不该乘的数", "type")
    raise HomeworkWrong(f"{where} 应该是一个整数，收到的是 {type_name(value)}："
                        f"{short(value)}", "type")


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """a 与 b 形状相同，且在 TOLERANCE 之内逐元素相等（-inf 与 -inf 算相等）。"""
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), **TOLERANCE)


def tril(n: int) -> torch.Tensor:
    """n×n 的下三角布尔矩阵：第 i 行第 j 列为 True 当且仅当 j ≤ i（位置 i 能看 0…i）。"""
    return torch.ones(n, n, dtype=torch.bool).tril()
