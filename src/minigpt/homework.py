"""作业检查器（见「作业」一节）。

每个检查器都从题目给的数据（学生自己的输入）重新算出正确答案，
在容差 ``TOLERANCE`` 之内相等才算通过：

- 没填（还是 None 或 ...）→ ``HomeworkNotFilled``，指出哪个空还没有填写；
- 填错 → ``HomeworkWrong``，说明检查了什么、最可能错在哪一步、怎样找到它，
  但不透露正确的数值；
- 类型、形状、设备、数据类型不对，或出现 NaN → 也是 ``HomeworkWrong``，
  用中文说明期望什么、收到什么；
- 通过 → 打印一行 “✔ 作业 N 通过：…”，返回 None
  （笔记本里的调用不必用分号压住返回值）。

两个异常都是 AssertionError 的子类。检查器自己不会因为奇怪的输入抛出别的异常。
在 Jupyter 里，这两个异常只显示一行“异常名: 说明”，不带检查器内部的调用栈
（``_render_traceback_``，IPython 的约定）；学生自己代码里的其他错误照常带着行号显示。

批改作业用 ``python -m minigpt.grade``（见 minigpt/grade.py）；它用下面的
``EXERCISES`` 和 ``exercise_inputs()``：题目数据由包重新生成，
只从学生的笔记本里取答案变量。``Exercise.run`` 返回通过时的那一行消息。
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from dataclasses import dataclass
from typing import Callable

import torch

# 容差：|你的 − 正确| ≤ atol + rtol·|正确|（逐元素，和 torch.allclose 相同）
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
TOLERANCE_TEXT = "容差：逐元素 |差| ≤ 1e-5 + 1e-4 × |正确值|"


class _OneLineInJupyter(AssertionError):
    def _render_traceback_(self) -> list[str]:
        """IPython 显示异常时调用它（代替调用栈）：检查器的提示就是全部，
        检查器内部的代码行对学生没有用，还会露出正确答案是怎样算的。
        """
        return [f"{type(self).__name__}: {self}"]


class HomeworkNotFilled(_OneLineInJupyter):
    """答案还没有填写（仍是 None 或 ...）（见「作业」一节）。"""


class HomeworkWrong(_OneLineInJupyter):
    """答案填了但不对，或类型、形状不对；消息说明检查了什么、
    为什么不对（见「作业」一节）。
    """


# -------------------------------------------------- 输入整理（不抛出别的异常）


def _require(**answers) -> None:
    missing = [name for name, value in answers.items()
               if value is None or value is Ellipsis]
    if missing:
        raise HomeworkNotFilled(f"{'、'.join(missing)} 还没有填写："
                                "把 None 换成你的计算结果再运行")


def _passed(n: int, detail: str) -> str:
    return f"✔ 作业 {n} 通过：{detail}"


def _prints(judge: Callable[..., str]) -> Callable[..., None]:
    """把判题函数（通过时返回一行消息）包成给学生调用的检查器：
    通过时打印那一行，返回 None。

    返回 None，Jupyter 就不会在打印的那一行下面再显示一遍返回值
    （所以调用不需要分号）。
    判题函数本身留在 ``check_xxx.judge``：批改程序要的是消息，不是打印。
    """

    @functools.wraps(judge)
    def check(*args, **kwargs) -> None:
        print(judge(*args, **kwargs))

    check.__annotations__ = {**judge.__annotations__, "return": "None"}
    check.__signature__ = inspect.signature(judge).replace(return_annotation="None")
    check.judge = judge
    return check


def _type_name(value) -> str:
    return type(value).__name__


def _to_tensor(value, name: str, what: str, *, given: bool = False) -> torch.Tensor:
    """把数字、列表、numpy 数组或张量变成 CPU 上的张量；类型或设备不对时给出中文说明。

    given=True 表示这是题目给的数据（不是答案），消息会提醒重新运行给数据的单元。
    """
    where = f"题目给的 {name}" if given else name
    again = ("（它是题目给的数据：请重新运行上面给出数据的单元，不要改它）"
             if given else "")
    if value is None or value is Ellipsis:
        raise HomeworkWrong(f"{where} 是 {value!r}，应该是{what}{again}")
    odd = isinstance(value, (bool, str, bytes, dict, set))
    if odd or callable(value) and not isinstance(value, torch.Tensor):
        raise HomeworkWrong(f"{where} 应该是{what}，收到的是 {_type_name(value)}："
                            f"{_short(value)}{again}")
    if isinstance(value, torch.Tensor):
        t = value.detach()
    else:
        try:
            t = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError, OverflowError):
            raise HomeworkWrong(
                f"{where} 应该是{what}，收到的是 {_type_name(value)}："
                f"{_short(value)}{again}") from None
    if t.device.type != "cpu":
        raise HomeworkWrong(
            f"{where} 在设备 {t.device} 上；检查器在 CPU 上比较，"
            f"请先用 {name}.cpu() 把它拿回 CPU{again}")
    if t.is_complex():
        raise HomeworkWrong(f"{where} 是复数张量（{t.dtype}），应该是{what}{again}")
    return t


def _short(value, limit: int = 60) -> str:
    try:
        text = repr(value)
    except Exception:  # 学生自己的类，repr 也可能出错
        text = f"<{_type_name(value)} 对象>"
    return text if len(text) <= limit else text[:limit] + "…"


def _float_tensor(value, name: str, what: str, *,
                  given: bool = False) -> torch.Tensor:
    """答案或数据应当是实数：Python 数字或浮点张量（float32 / float64）。
    返回 float64 张量。
    """
    t = _to_tensor(value, name, what, given=given)
    if isinstance(value, torch.Tensor):
        if value.dtype in (torch.float16, torch.bfloat16):
            raise HomeworkWrong(
                f"{name} 的数据类型是 {value.dtype}，精度太低，无法在容差内比较；"
                "请用 float32（默认的 dtype）")
        if not value.dtype.is_floating_point:
            raise HomeworkWrong(
                f"{name} 的数据类型是 {value.dtype}，"
                "应该是浮点张量（float32 或 float64）："
                "这里的数都是小数，整数或布尔张量装不下它们")
    elif t.dtype == torch.bool:
        raise HomeworkWrong(f"{name} 应该是{what}，收到的是布尔值")
    t = t.double()
    if torch.isnan(t).any():
        raise HomeworkWrong(f"{name} 里有 NaN（不是数）：请检查计算过程")
    return t


def _count(value, name: str, *, given: bool = False) -> int:
    """一个整数：接受 Python int、numpy 整数、0 维整数张量；浮点数（哪怕是 1050624.0）
    不算。
    """
    where = f"题目给的 {name}" if given else name
    if value is None or value is Ellipsis:
        raise HomeworkWrong(f"{where} 是 {value!r}，应该是一个整数")
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            raise HomeworkWrong(f"{where} 在设备 {value.device} 上；"
                                "请先用 .cpu() 或 .item() 取出这个数")
        if value.dim() != 0:
            raise HomeworkWrong(f"{where} 应该是一个整数，"
                                f"收到形状 {tuple(value.shape)} 的张量；"
                                "用 .item() 取出一个数")
        if value.dtype == torch.bool:
            raise HomeworkWrong(f"{where} 应该是一个整数，收到布尔张量")
        if value.dtype.is_floating_point or value.is_complex():
            raise HomeworkWrong(
                f"{where} 必须是整数：参数个数是数出来的，"
                f"收到的是 {value.dtype} 张量 {value.item()!r}。"
                "计数只用整数的 * 和 +；若用了除法，换成 // 或 int(...)")
        return int(value.item())
    if hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        value = value[()]  # numpy 的 0 维数组 → numpy 标量
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise HomeworkWrong(f"{where} 应该是一个整数，收到布尔值 {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        raise HomeworkWrong(
            f"{where} 必须是整数：参数个数是数出来的，"
            f"收到的是浮点数 {value!r}（{_type_name(value)}）。"
            "计数只用整数的 * 和 +；若用了除法，换成 // 或 int(...)")
    raise HomeworkWrong(f"{where} 应该是一个整数，收到的是 {_type_name(value)}："
                        f"{_short(value)}")


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """a 与 b 形状相同，且在 TOLERANCE 之内逐元素相等（-inf 与 -inf 算相等）。"""
    return a.shape == b.shape and torch.allclose(a.double(), b.double(), **TOLERANCE)


def _tril(n: int) -> torch.Tensor:
    """n×n 的下三角布尔矩阵：第 i 行第 j 列为 True 当且仅当 j ≤ i（位置 i 能看 0…i）。
    """
    return torch.ones(n, n, dtype=torch.bool).tril()


# ---------------------------------------------------------------- 作业 1


def _rounding_hint(got: torch.Tensor, truth: torch.Tensor) -> str | None:
    """got 离 truth 很近却不在容差之内时给出提示
    （常见于四舍五入，或照着打印出的小数手算）。

    提示只说像是哪种做法，不说正确值，也不说差了多少。
    """
    if got.shape != truth.shape or not torch.isfinite(got).all():
        return None
    for d in range(5):
        rounded = torch.round(truth, decimals=d)
        if _close(got, rounded) and not _close(rounded, truth):
            if d == 0:
                return ("你的数像是取了整（int(…) 或 round(…)）：这里的数一般是小数，"
                        "请交计算出来的张量本身，不要取整")
            return (f"你的数像是四舍五入到了 {d} 位小数"
                    "（或者是照着打印出来的数抄的）："
                    "检查器按容差比较，请交计算出来的张量本身，不要舍入")
    gap = (got - truth).abs().max()
    if gap <= 1e-2 * max(1.0, truth.abs().max().item()):
        return ("你的数很接近，但超出了容差：像是取了近似值，或者照着打印出来的"
                "几位小数手算的。请直接用题目给的张量计算，不要舍入")
    return None


@_prints
def check_dot_score(score, q, k, Q=None, K=None) -> str:
    """作业 1（一）：一个 Query 与一个 Key 的分数 = 点积 (q * k).sum()（见第 2 节）。

    score：Python 数字或 0 维浮点张量；q、k：题目给的等长一维向量。
    Q、K：可选，q、k 取自的整个矩阵；给出时还能认出“取错了行”（例如 Q[2]·K[1]）。
    """
    _require(score=score)
    q = _float_tensor(q, "q", "一维向量", given=True)
    k = _float_tensor(k, "k", "一维向量", given=True)
    if q.dim() != 1 or q.shape != k.shape:
        raise HomeworkWrong(
            f"题目给的 q、k 应是等长的一维向量，现在形状是 {tuple(q.shape)} 和 "
            f"{tuple(k.shape)}："
            "请重新运行上面给出数据的单元")
    s = _float_tensor(score, "score", "一个数（Python 数字或 0 维张量）")
    truth = (q * k).sum()
    if s.dim() > 0:
        if s.shape == q.shape:
            hint = (
                "这像是只做了逐元素相乘 q * k，还没有求和："
                "点积 = 对应位置相乘再全部加起来")
        elif s.dim() == 2 and s.numel() > 1:
            hint = (
                "这是一个矩阵，像是算成了外积（q 的列向量乘 k 的行向量），"
                "或者算了整张分数矩阵；这一问只要一个数")
        else:
            hint = (
                "一个分数应该是标量（0 维张量或 Python 数字），"
                "可以用 .sum() 或 .item() 得到它")
        raise HomeworkWrong("检查 score 的形状：应该是一个数（0 维），"
                            f"收到形状 {tuple(s.shape)} 的张量。{hint}")
    if _close(s, truth):
        return _passed(1, f"score = {s.item():.4f}，等于 q 与 k 的点积")
    d_k = q.shape[-1]
    diagnoses = [
        (truth / math.sqrt(d_k), f"你已经除以了 √d_k = {math.sqrt(d_k):g}："
                                 "这里只要原始点积，缩放是下一步"),
        (truth / d_k, f"这像是求了平均（.mean()），或者除以了 d_k = {d_k}："
                      "点积是乘积的和，不除以任何数"),
        (-truth, "符号反了：点积是对应位置的乘积直接相加，检查是不是多了一个负号"
                 "或者做成了相减"),
        (q.sum() * k.sum(), "这是先各自求和再相乘：点积要先逐元素相乘，再求和"),
        ((q * q).sum(), "这是 q 和自己的点积；应该是 q 和 k"),
        ((k * k).sum(), "这是 k 和自己的点积；应该是 q 和 k"),
        ((q - k).pow(2).sum(), "这是 q 与 k 的距离的平方，不是点积"),
    ]
    hint = next((h for value, h in diagnoses if _close(s, value)), None)
    if hint is None and Q is not None and K is not None:
        hint = _wrong_pair_hint(s, q, k, Q, K)
    if hint is None:
        hint = _rounding_hint(s, truth)
    if hint is None:
        hint = ("没有认出是哪一种常见错误：把 q * k 打印出来，手算一两项核对，"
                f"再确认 {d_k} 个乘积都加了进去")
    raise HomeworkWrong("检查 score 是否等于 q 与 k 的点积："
                        f"不相等（{TOLERANCE_TEXT}）。{hint}")


def _wrong_pair_hint(s: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                     Q, K) -> str | None:
    """score 是另一对行的点积（Q[a]·K[b]、Q[a]·Q[b]、K[a]·K[b]）时，说出是哪一对。"""
    try:
        Q = _float_tensor(Q, "Q", "二维矩阵 [seq, d_k]", given=True)
        K = _float_tensor(K, "K", "二维矩阵 [seq, d_k]", given=True)
    except HomeworkWrong:
        return None
    if Q.dim() != 2 or Q.shape != K.shape or Q.shape[-1] != q.shape[-1]:
        return None
    qi = [i for i in range(Q.shape[0]) if _close(Q[i], q)]
    ki = [i for i in range(K.shape[0]) if _close(K[i], k)]
    if not qi or not ki:
        return None
    asked = (f"q = Q[{qi[0]}]（位置 {qi[0]} 的 Query）"
             f"与 k = K[{ki[0]}]（位置 {ki[0]} 的 Key）")
    n = Q.shape[0]
    pairs = (("Q", Q, "K", K), ("Q", Q, "Q", Q), ("K", K, "K", K))
    for name_a, A, name_b, B in pairs:
        for a in range(n):
            for b in range(n):
                if (name_a, name_b, a, b) == ("Q", "K", qi[0], ki[0]):
                    continue
                if _close(s, (A[a] * B[b]).sum()):
                    if (name_a, name_b) == ("Q", "K") and (a, b) == (ki[0], qi[0]):
                        what = "两个 token 的角色对调了"
                    elif (name_a, name_b) == ("Q", "K"):
                        what = "取错了行"
                    else:
                        what = f"两个向量都取自 {name_a}"
                    return (f"你的数是 {name_a}[{a}] 与 {name_b}[{b}] 的点积，"
                            f"{what}。"
                            f"题目要的是 {asked}的点积：直接用上面给出的 q 和 k")
    return None


@_prints
def check_score_matrix(S, Q, K) -> str:
    """作业 1（二）：整张注意力分数矩阵 S = Q Kᵀ，第 i 行第 j 列是 Query i 与 Key j 的
    点积（见第 2 节）。
    """
    _require(S=S)
    Q = _float_tensor(Q, "Q", "二维矩阵 [seq, d_k]", given=True)
    K = _float_tensor(K, "K", "二维矩阵 [seq, d_k]", given=True)
    if Q.dim() != 2 or K.dim() != 2 or Q.shape[-1] != K.shape[-1]:
        raise HomeworkWrong(
            f"题目给的 Q、K 应是最后一维相同的二维矩阵，现在形状是 {tuple(Q.shape)} "
            f"和 {tuple(K.shape)}："
            "请重新运行上面给出数据的单元")
    got = _float_tensor(S, "S", "二维张量 [seq_q, seq_k]")
    truth = Q @ K.T  # [seq_q, seq_k]
    if got.shape != truth.shape:
        if got.shape == (Q.shape[-1], K.shape[-1]):
            hint = ("这像是 Q.T @ K（特征维之间相乘）；"
                    "分数矩阵的行对应 Query、列对应 Key")
        elif got.shape == Q.shape:
            hint = "这像是逐元素相乘 Q * K，没有对特征维求和"
        elif got.squeeze().shape == truth.shape:
            hint = ("多了长度为 1 的维度：用 .squeeze() 去掉它，"
                    "或者检查是不是多加了一维")
        else:
            hint = "分数矩阵的行数 = Query 的个数，列数 = Key 的个数"
        raise HomeworkWrong(
            f"检查 S 的形状：应该是 {tuple(truth.shape)}（[seq_q, seq_k]），"
            f"收到 {tuple(got.shape)}。{hint}")
    if torch.isinf(got).any():
        raise HomeworkWrong(
            "S 里有无穷大（-inf）：像是已经做了遮蔽。"
            "这一问只要原始分数，遮蔽是作业 2 的事")
    if _close(got, truth):
        return _passed(1, f"S 的形状是 {tuple(got.shape)}，"
                          "每个元素都等于对应 Query 与 Key 的点积")
    d_k = Q.shape[-1]
    root = math.sqrt(d_k)
    n_q, n_k = truth.shape
    diagnoses = [
        (truth.T, "检查 S 的方向：你的结果是正确矩阵的转置，像是算成了 K @ Q.T，"
                  "或者在循环里写成了 S[j, i]。"
                  "第 i 行应当是 Query i 对所有 Key 的分数，请把 Q 放在左边"),
        (truth / root, f"检查 S：你已经除以了 √d_k = {root:g}；"
                       "这里只要原始分数，缩放是下一步"),
        (truth / d_k, f"检查 S：你除以了 d_k = {d_k}（缩放用的是 √d_k，而且这一问"
                      "根本不缩放）；这里只要原始分数"),
        (torch.softmax(truth, dim=-1),
         "检查 S：每一行加起来是 1，像是已经做了 softmax。"
         "这一问要的是 softmax 之前的分数本身"),
        (torch.softmax(truth, dim=0),
         "检查 S：每一列加起来是 1，像是已经（沿 dim=0）做了 softmax。"
         "这一问要的是 softmax 之前的分数本身"),
        (torch.softmax(truth / root, dim=-1),
         "检查 S：你交的像是注意力权重（缩放、再 softmax 之后）。"
         "这一问只要原始分数 Q @ K.T，缩放和 softmax 都是后面的步骤"),
        (-truth, "检查 S 的符号：每个元素都差一个负号"),
    ]
    if Q.shape == K.shape:
        diagnoses += [
            (Q @ Q.T, "检查 S：这像是 Q @ Q.T，Query 和自己做了点积。"
                      "分数是 Query 与 Key 的点积：右边应当是 K"),
            (K @ K.T, "检查 S：这像是 K @ K.T，Key 和自己做了点积。"
                      "分数是 Query 与 Key 的点积：左边应当是 Q"),
        ]
    diag = truth.diagonal() if n_q == n_k else None
    if diag is not None:
        diagnoses += [
            (diag[:, None].expand(n_q, n_k),
             "检查 S 的下标：每一行的数都相同，像是第 i 行只用了 Q[i] 与 K[i]"
             "（第二个下标也写成了 i）。S[i, j] 应当用 K[j]"),
            (diag[None, :].expand(n_q, n_k),
             "检查 S 的下标：每一列的数都相同，像是第 j 列只用了 Q[j] 与 K[j]"
             "（第一个下标也写成了 j）。S[i, j] 应当用 Q[i]"),
        ]
    hint = next((h for value, h in diagnoses
                 if _close(got, value) and not _close(value, truth)), None)
    if hint is not None:
        raise HomeworkWrong(hint)
    rounding = _rounding_hint(got, truth)
    if rounding is not None:
        raise HomeworkWrong(f"检查 S 的每个元素：{rounding}")
    bad = ~torch.isclose(got, truth, **TOLERANCE)
    right = ~bad
    untouched = bad & (got == 0)
    if untouched.any() and bool(untouched.sum() == bad.sum()):
        cells = untouched.nonzero().tolist()
        edge = all(i == n_q - 1 or j == n_k - 1 for i, j in cells)
        where = "，都在最后一行或最后一列" if edge else ""
        raise HomeworkWrong(
            f"检查 S 是否填满了：{len(cells)} 个格子还是 0{where}，其余的都对。"
            "像是循环没有走遍所有的 i 和 j：检查 range 的上界是不是 seq_len")
    i, j = bad.nonzero()[0].tolist()
    raise HomeworkWrong(
        f"检查 S 的每个元素：{int(bad.sum())} 个元素与对应的点积不相等（"
        f"{TOLERANCE_TEXT}），{int(right.sum())} 个相等；"
        f"第一个不相等的是第 {i} 行第 {j} 列（你的是 {got[i, j].item():.4f}）。"
        f"单独算一下 Q[{i}] 与 K[{j}] 的点积，和你的这一格比一比")


# ---------------------------------------------------------------- 作业 2


@_prints
def check_causal_mask(mask, seq_len) -> str:
    """作业 2（一）：因果遮蔽的遮蔽矩阵是下三角，1 / True = 可以看，
    0 / False = 遮住（见第 3 节）。
    """
    _require(mask=mask)
    n = _count(seq_len, "seq_len", given=True)
    if n < 1:
        raise HomeworkWrong(f"题目给的 seq_len 应该是正整数，现在是 {n}："
                            "请重新运行上面给出数据的单元")
    m = _to_tensor(mask, "mask", f"{n}×{n} 的张量（1 = 可以看，0 = 遮住）")
    if tuple(m.shape) != (n, n):
        extra = ("：多了长度为 1 的维度，这一问只要二维的方阵"
                 if tuple(m.squeeze().shape) == (n, n) and m.dim() > 2 else "")
        raise HomeworkWrong(f"检查 mask 的形状：应该是 ({n}, {n})，"
                            f"收到 {tuple(m.shape)}{extra}")
    if m.dtype != torch.bool:
        m = m.double()
        if torch.isnan(m).any():
            raise HomeworkWrong("mask 里有 NaN：遮蔽矩阵只能是 0 和 1"
                                "（或 False 和 True）")
        if torch.isinf(m).any():
            raise HomeworkWrong(
                "检查 mask 的取值：你的 mask 里有 -inf，这是“加到分数上”的加性写法。"
                "这里要的是本书的约定：1 = 可以看，0 = 遮住"
                "（-inf 是下一问用 masked_fill 放进分数里的）")
        bad = ~((m == 0) | (m == 1))
        if bad.any() and bool((m[bad] < 0).all()):
            raise HomeworkWrong(
                "检查 mask 的取值：你的 mask 里有负数"
                f"（{m[bad].unique().tolist()[:3]}），像是“加到分数上”的加性写法。"
                "这里要的是本书的约定：1 = 可以看，0 = 遮住")
        if bad.any():
            raise HomeworkWrong(
                "检查 mask 的取值：只能是 0 和 1（或 False / True），"
                f"发现了 {m[bad].unique().tolist()[:5]}")
    allowed = m if m.dtype == torch.bool else m != 0
    truth = _tril(n)
    if torch.equal(allowed, truth):
        return _passed(2, f"mask 是 {n}×{n} 的下三角矩阵，位置 i 只能看 0…i")
    if n > 1 and torch.equal(allowed, truth.T):
        hint = ("你的 mask 是上三角，正好是正确答案的转置："
                "位置 i 看到的是自己和它后面的 token（未来）。"
                "用 torch.tril 而不是 torch.triu")
    elif n > 1 and torch.equal(allowed, ~truth):
        hint = ("含义反了：你把“遮住”标成了 1 / True。这是 nn.MultiheadAttention 的约"
                "定（True = 不许看）；"
                "本书约定 1 / True = 可以看")
    elif bool(allowed.all()):
        hint = "所有位置都是 1，什么都没有遮住：每个 token 都能偷看未来"
    elif n > 1 and torch.equal(allowed, torch.ones(n, n, dtype=torch.bool).tril(1)):
        hint = ("每个位置还多看到了紧挨着的下一个 token（对角线上方那一条也是 1）："
                "像是 torch.tril 的 diagonal 参数多了 1。位置 i 只能看 0…i")
    elif torch.equal(allowed, torch.ones(n, n, dtype=torch.bool).tril(-1)):
        hint = (
            "对角线被遮住了：位置 i 应该能看到自己。这样第 0 行全被遮住，"
            "softmax 会得到 NaN")
    elif torch.equal(allowed, torch.eye(n, dtype=torch.bool)):
        hint = (
            "这是单位矩阵：每个位置只看自己。因果遮蔽只遮住位置 i 之后的 token，"
            "它前面的都能看")
    else:
        i, j = (allowed != truth).nonzero()[0].tolist()
        hint = (
            f"第 {i} 行第 {j} 列不对：规则是位置 i 只能看 0…i，按这条规则检查这一格")
    raise HomeworkWrong(f"检查 mask 是否为下三角（1 = 可以看）：{hint}")


def _masked_softmax(scores: torch.Tensor, allowed: torch.Tensor,
                    dim: int = -1) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=dim)


@_prints
def check_masked_weights(weights, scores, d_k=None) -> str:
    """作业 2（二）：遮蔽后的注意力权重（见第 3 节）。

    正确答案 = softmax(把未来位置设为 -inf 的 scores)，沿最后一维。

    weights：你的答案，与 scores 同形 [..., seq, seq]；scores：
    题目给的缩放后的注意力分数；
    d_k：可选，给出时还能认出“用了没缩放的分数”“缩放了两次”这类错误。
    正确答案由 scores 重新算出，
    在 TOLERANCE 之内相等才通过。
    """
    _require(weights=weights)
    s = _to_tensor(scores, "scores", "注意力分数张量 [seq, seq]", given=True)
    if not s.dtype.is_floating_point or s.dim() < 2 or s.shape[-1] != s.shape[-2]:
        raise HomeworkWrong(
            f"题目给的 scores 应是浮点方阵 [..., seq, seq]，现在是 {s.dtype}、"
            f"形状 {tuple(s.shape)}："
            "请重新运行上面给出数据的单元")
    s = s.double()
    n = s.shape[-1]
    allowed = _tril(n)
    if torch.isnan(s).any() or torch.isinf(s.masked_fill(~allowed, 0.0)).any():
        raise HomeworkWrong("题目给的 scores 在可见位置上有 NaN 或无穷大："
                            "请重新运行上面给出数据的单元")
    w = _to_tensor(weights, "weights", "浮点张量（softmax 的输出）")
    low = (torch.float16, torch.bfloat16)
    if isinstance(weights, torch.Tensor) and (
            not weights.dtype.is_floating_point or weights.dtype in low):
        raise HomeworkWrong(
            f"weights 的数据类型是 {weights.dtype}，应该是 float32 或 float64："
            "softmax 的输出是 0 和 1 之间的小数")
    w = w.double()
    if tuple(w.shape) != tuple(s.shape):
        raise HomeworkWrong(
            f"检查 weights 的形状：应该和 scores 一样是 {tuple(s.shape)}，"
            f"收到 {tuple(w.shape)}。"
            "softmax 不改变形状；检查是不是对错了张量，或者多/少了一维")
    root = None
    if d_k is not None:
        try:
            root = math.sqrt(_count(d_k, "d_k", given=True))
        except (HomeworkWrong, ValueError, OverflowError):
            root = None
    future = ~allowed
    neg_inf = float("-inf")
    if torch.isneginf(w).any():
        masked = s.masked_fill(future, neg_inf)
        candidates = [
            (masked, "这是遮蔽之后的分数，还没有做 softmax："
                     "再对它沿最后一维做 torch.softmax，未来位置的 -inf 会变成 0"),
            (torch.log_softmax(masked, dim=-1),
             "像是用了 log_softmax：它给出的是权重的对数"
             "（都不大于 0，未来位置是 -inf）。"
             "这里要的是权重本身：用 torch.softmax"),
            (torch.softmax(s, dim=-1).masked_fill(future, neg_inf),
             "像是先做了 softmax，再用 masked_fill 把未来位置设成 -inf。"
             "-inf 应该放进分数里，在 softmax 之前；softmax 之后未来位置自然是 0"),
        ]
        if root:
            candidates.append((
                (s * root).masked_fill(future, neg_inf),
                "这是遮蔽之后、还没有缩放的分数（Q @ K.T），也还没有做 softmax。"
                "题目给的 scores 已经缩放过：遮蔽 scores，再做 softmax"))
        hint = next((h for value, h in candidates if _close(w, value)),
                    "softmax 的输出都在 0 和 1 之间，"
                    "-inf 只该出现在 softmax 之前的分数里。"
                    "检查 weights 是不是 torch.softmax(…) 的输出，"
                    "以及 softmax 之后有没有又把某些位置填成了 -inf")
        raise HomeworkWrong(f"weights 里有 -inf：{hint}")
    if torch.isnan(w).any():
        rows = sorted({r[-2] for r in torch.isnan(w).nonzero().tolist()})
        head = (f"weights 的第 {rows} 行是 NaN：这几行的分数像是全被换成了 -inf，"
                "softmax 只能算出 0/0。")
        candidates = [
            (torch.softmax(s.masked_fill(allowed, neg_inf), dim=-1),
             "遮蔽反了：被换成 -inf 的是能看的位置（对角线及以下），留下的却是未来。"
             "像是写成了 masked_fill(mask == 1, …)，或者把 mask 直接当成了条件"
             "（masked_fill(mask.bool(), …)），或者 mask 本身 0、1 颠倒了。"
             "要换掉的是未来位置（mask == 0）"),
            (_masked_softmax(s, _tril(n).tril(-1)),
             "对角线也被遮住了：位置 i 应当能看到自己，"
             "所以第 0 行一个能看的位置也没剩下"),
        ]
        hint = next((h for value, h in candidates
                     if value.shape == w.shape
                     and torch.allclose(w, value, equal_nan=True, **TOLERANCE)),
                    "检查哪些位置被换成了 -inf：每个位置至少能看到自己，"
                    "所以每一行都应当留下可以看的分数")
        raise HomeworkWrong(head + hint)
    if torch.isinf(w).any():
        raise HomeworkWrong("weights 里有无穷大：softmax 的输出都在 0 和 1 之间，"
                            "检查计算过程")
    truth = _masked_softmax(s, allowed)
    if _close(w, truth):
        return _passed(2, "权重与由 scores 遮蔽后做 softmax 的结果一致："
                          "未来位置为 0，每行加起来等于 1")

    eye = torch.eye(n, dtype=torch.float64).expand_as(s)
    uniform = allowed.double() / allowed.double().sum(dim=-1, keepdim=True)
    mistakes = [
        (eye, "你的权重是单位矩阵：每个位置只看自己，分数没有起作用。"
              "像是遮蔽矩阵用成了 torch.eye，"
              "或者把对角线以外全遮住了；因果遮蔽只遮住位置 i 之后的 Key"),
        (uniform.expand_as(s), "每一行在能看的位置上平均分配：分数没有参与计算。"
                               "像是对遮蔽矩阵本身"
                               "（或全 0 的分数）做了 softmax，"
                               "或者用遮蔽矩阵除以了每行的个数；"
                               "softmax 的输入应当是遮蔽之后的 scores"),
        (s, "这就是题目给的 scores 本身：还没有遮蔽，也没有做 softmax"),
        (s.masked_fill(future, 0.0),
         "这是遮蔽之后的分数（未来位置是 0），还没有做 softmax。"
         "另外，被遮住的分数要填 -inf 而不是 0，softmax 之后它们才是 0"),
        (torch.softmax(s, dim=-1) * allowed,
         "像是先 softmax、再把未来位置乘 0（或填 0）：未来位置虽然是 0，"
         "被遮住的那部分权重却丢了，凡是遮住过位置的行，加起来都不到 1。"
         "应当先把未来位置的分数设为 -inf，再做 softmax"),
        (torch.softmax(s, dim=-1),
         "没有遮蔽：未来位置的权重不是 0。"
         "masked_fill(mask == 0, float(\"-inf\")) 要做在 softmax 之前"),
        (torch.softmax(s.masked_fill(future, 0.0), dim=-1),
         "被遮住的分数填成了 0 而不是 -inf（乘 mask 也是这个结果）："
         "e⁰ = 1，未来位置照样分到权重。填 float(\"-inf\")"),
        (torch.softmax(s + allowed.double(), dim=-1),
         "像是把 0/1 的 mask 直接加到了分数上：加 1 只是让能看的位置稍占便宜，"
         "未来位置照样分到权重。把 mask == 0 的分数换成 float(\"-inf\")"),
        (torch.softmax(s.masked_fill(allowed, -1e9), dim=-1),
         "遮蔽反了：被换掉的是能看的位置（对角线及以下），留下的却是未来。"
         "像是写成了 masked_fill(mask == 1, …)，或者 mask 本身 0、1 颠倒了。"
         "要换掉的是未来位置（mask == 0）"),
        (_masked_softmax(s, torch.ones(n, n, dtype=torch.bool).tril(1)),
         "遮蔽多放开了一格：每个位置还看到了紧挨着的下一个 token，"
         "像是遮蔽矩阵用了 torch.tril(…, diagonal=1)。位置 i 能看的是 0…i"),
        (_masked_softmax(s, allowed, dim=-2),
         "softmax 做在了错误的维度（dim=0 / dim=-2），每一列加起来是 1。"
         "每个 Query 的权重在一行里，应当用 dim=-1"),
        (_masked_softmax(s, allowed.T),
         "遮住的是过去而不是未来：遮蔽矩阵像是上三角（torch.triu）。"
         "位置 i 能看的是 0…i"),
        (torch.exp(s).masked_fill(future, 0.0),
         "像是只做了 exp，没有除以每行之和：softmax = exp 之后再按行归一化，"
         "直接用 torch.softmax(…, dim=-1)"),
        (truth.transpose(-2, -1),
         "你的结果是正确权重的转置，像是多做了一次 .T："
         "第 i 行应当是 Query i 分给各个 Key 的权重"),
    ]
    if root:
        mistakes += [
            (_masked_softmax(s * root, allowed),
             "像是用了没有除以 √d_k 的分数（Q @ K.T）："
             "题目给的 scores 已经缩放过，直接用 scores"),
            (_masked_softmax(s / root, allowed),
             "分数被缩小了两次：scores 已经除过 √d_k，你又除了一次"
             "（从 Q @ K.T 算起、除以 d_k 而不是 √d_k，也是这个结果）。"
             "直接用 scores"),
        ]
    for value, hint in mistakes:
        if _close(w, value) and not _close(value, truth):
            raise HomeworkWrong(f"检查 weights：{hint}")
    rounding = _rounding_hint(w, truth)
    if rounding is not None:
        raise HomeworkWrong(f"检查 weights 的数值：{rounding}")

    leak = (w.abs() > TOLERANCE["atol"]) & ~allowed
    if leak.any():
        idx = leak.nonzero()[0].tolist()
        i, j = idx[-2], idx[-1]
        raise HomeworkWrong(
            f"检查未来位置的权重是否为 0：第 {i} 行第 {j} 列"
            f"（Query {i} 看 Key {j}，{j} 在 {i} 之后）"
            f"是 {w[tuple(idx)].item():.4f}。"
            "遮蔽要在 softmax 之前把这些分数设为 -inf")
    if (w < -TOLERANCE["atol"]).any():
        raise HomeworkWrong("检查权重是否非负：出现了负数。"
                            "softmax 的输出都在 0 和 1 之间")
    row_sums = w.sum(dim=-1)
    if not torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-4):
        raise HomeworkWrong(
            "检查每一行是否加起来等于 1："
            f"你的行和是 {[round(x, 4) for x in row_sums.flatten().tolist()[:8]]}。"
            "请确认 weights 是对遮蔽后的分数沿最后一维做 softmax 的输出")
    raise HomeworkWrong(
        "检查 weights：未来位置是 0、每行和为 1，"
        f"但数值与由 scores 算出的权重不一致（{TOLERANCE_TEXT}）。"
        "检查 softmax 的输入是不是题目给的 scores（遮蔽之后），"
        "有没有对分数另做了别的变换")


# ---------------------------------------------------------------- 作业 3


@_prints
def check_ffn_params(w1_params, w2_params, total_params,
                     hidden_size=512, d_ff=2048) -> str:
    """作业 3：FFN 两个线性层的参数量，包含偏置（见第 5 节）。

    W1：hidden_size → d_ff，权重 d_ff × hidden_size 个，偏置 d_ff 个；
    W2：d_ff → hidden_size，权重 hidden_size × d_ff 个，偏置 hidden_size 个。
    计数接受 Python int、numpy 整数和 0 维整数张量。提示说出错在哪一类，
    但不说出任何一层的偏置个数或参数个数（那样只剩一步加法）。
    """
    _require(w1_params=w1_params, w2_params=w2_params, total_params=total_params)
    h = _count(hidden_size, "hidden_size", given=True)
    f = _count(d_ff, "d_ff", given=True)
    w1, w2, total = (_count(v, n) for v, n in (
        (w1_params, "w1_params"), (w2_params, "w2_params"),
        (total_params, "total_params")))
    right1, right2 = f * h + f, h * f + h
    if (w1, w2) == (right2, right1) and right1 != right2:
        raise HomeworkWrong(
            "检查 w1_params 和 w2_params：两个数像是对调了。"
            "W1 是把 hidden_size 升到 d_ff 的那一层，W2 是降回来的那一层；"
            "两层的权重一样多，偏置不一样多")
    for name, got, right, layer, out in (
            ("w1_params", w1, right1, "W1", "d_ff"),
            ("w2_params", w2, right2, "W2", "hidden_size")):
        if got == right:
            continue
        other_out = "hidden_size" if out == "d_ff" else "d_ff"
        weights = f * h
        if got == weights:
            hint = ("只数了权重，漏了偏置：nn.Linear 默认带偏置，"
                    f"每个输出维一个。{layer} 的输出是几维？")
        elif got == weights + (h if layer == "W1" else f):
            hint = ("偏置个数不对：你加上的偏置个数等于 "
                    f"{layer} 的输入维度（{other_out}），"
                    "而偏置是每个输出维一个")
        elif got == weights + 1:
            hint = "偏置不是每层一个，而是每个输出维一个"
        elif got == weights + f + h:
            hint = (f"偏置多算了：{layer} 只有它自己输出维度那么多个偏置，"
                    "另一层的偏置算在另一层里")
        elif got in (2 * weights, 2 * weights + f + h):
            hint = (f"这像是把两层都算进了 {name}："
                    f"{name} 只数 {layer} 这一层")
        elif got in (f + h, f + h + (f if layer == "W1" else h)):
            hint = ("权重个数 = 输入维度 × 输出维度（乘，不是加），"
                    "再加上输出维度个偏置")
        elif got in (f * f, h * h, f * f + f, h * h + h, f * f + h, h * h + f):
            hint = ("权重个数 = 输入维度 × 输出维度："
                    "一个是 hidden_size，一个是 d_ff，"
                    "不是同一个维度自乘")
        elif 100 * abs(got - right) <= right:  # 整数运算：大数也不溢出
            hint = ("很接近，但参数个数要一个不差："
                    "像是取了约数（比如写成了“约一百万”），"
                    "请用整数的 * 和 + 精确地算")
        else:
            hint = (f"{layer} 的参数 = 权重（输入维度 × 输出维度）"
                    "+ 偏置（输出维度）："
                    f"先弄清 {layer} 的输入、输出各是几维，再按这条式子数一遍")
        raise HomeworkWrong(f"检查 {name}：{got:,} 不对。{hint}")
    if total != w1 + w2:
        if total == 2 * h * f:
            hint = "总数漏了偏置：两层的偏置都没有算进去"
        elif total in (w1 + h * f, w2 + f * h):
            hint = "总数只算了一层的偏置：W1 和 W2 的偏置都要算"
        elif total in (2 * w1, 2 * w2) and w1 != w2:
            hint = "像是把一层的参数量乘了 2：两层的偏置个数不同，参数量并不一样多"
        elif total == w1 * w2:
            hint = "两层的参数量是加起来，不是乘起来"
        elif 100 * abs(total - (w1 + w2)) <= w1 + w2:
            hint = "很接近，但参数个数要一个不差：像是取了约数"
        else:
            hint = "FFN 的总参数量就是两层之和"
        raise HomeworkWrong(f"检查 total_params：{total:,} "
                            f"不等于 w1_params + w2_params。{hint}")
    return _passed(3, f"W1 {w1:,} + W2 {w2:,} = {total:,} 个参数，"
                      f"抵得上约 {total / h ** 2:.0f} 个 {h}×{h} 的方阵")


# ---------------------------------------------------------------- 批改用的题目清单


def exercise_inputs() -> dict:
    """题目给的数据（见「作业」一节），与学生版笔记本里的数据单元算出的相同。

    种子 42，句子 "the cat sat"。

    批改（minigpt.grade）用它，而不用学生笔记本里的 q、K、scores……：
    改了题目数据也骗不过检查。
    """
    from .attention import attention_scores, scale_scores
    from .data import make_toy_example

    toy = make_toy_example()
    Q, K = toy.Q.detach(), toy.K.detach()
    d_k = Q.shape[-1]
    return {"q": Q[1], "k": K[2], "Q": Q, "K": K, "d_k": d_k, "seq_len": Q.shape[0],
            "scores": scale_scores(attention_scores(Q, K), d_k),
            "hidden_size": 512, "d_ff": 2048}


@dataclass(frozen=True)
class Exercise:
    """一道（小）题：编号、标题、笔记本里的答案变量名、以及怎样用检查器判它。"""

    # key 与学生版笔记本里初始代码单元的标签 hw-starter-<key> 一致
    key: str
    title: str
    answers: tuple[str, ...]      # 答案变量名
    checker: str                  # 检查函数名（批改时判定未作答的单元要找它的调用）
    # run(答案, 题目数据) → 通过时的消息；答错、没填时抛出检查器的异常
    run: Callable[[dict, dict], str]
    points: int = 2               # 这道小题的分数（批改表、CSV 和作业页都用它）


EXERCISES = (
    Exercise("1a", "作业 1（一）一个分数", ("score",), "check_dot_score",
             lambda a, x: check_dot_score.judge(
                 a["score"], x["q"], x["k"], x["Q"], x["K"]),
             points=1),
    Exercise("1b", "作业 1（二）分数矩阵", ("S",), "check_score_matrix",
             lambda a, x: check_score_matrix.judge(a["S"], x["Q"], x["K"])),
    Exercise("2a", "作业 2（一）遮蔽矩阵", ("mask",), "check_causal_mask",
             lambda a, x: check_causal_mask.judge(a["mask"], x["seq_len"])),
    Exercise("2b", "作业 2（二）遮蔽后的权重", ("weights",), "check_masked_weights",
             lambda a, x: check_masked_weights.judge(
                 a["weights"], x["scores"], x["d_k"]),
             points=3),
    Exercise("3", "作业 3 FFN 的参数个数", ("w1_params", "w2_params", "total_params"),
             "check_ffn_params",
             lambda a, x: check_ffn_params.judge(
                 a["w1_params"], a["w2_params"], a["total_params"],
                 x["hidden_size"], x["d_ff"])),
)
