"""作业 2（二）：遮蔽后的注意力权重（见第 3 节）。"""

from __future__ import annotations

import math

import torch

from .errors import HomeworkWrong
from .hints import Diagnosis, constant_offset, first_match, rounding_hint
from .values import (TOLERANCE, TOLERANCE_TEXT, after_colon, close, count, passed, require,
                     to_tensor, tril)

NEG_INF = float("-inf")


def masked_softmax(scores: torch.Tensor, allowed: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(~allowed, NEG_INF), dim=dim)


class _Data:
    """题目给的 scores 和由它算出的东西；root 是 √d_k（不知道 d_k 时为 None）。"""

    def __init__(self, s: torch.Tensor, root: float | None):
        self.s, self.root = s, root
        self.n = s.shape[-1]
        self.allowed = tril(self.n)
        self.future = ~self.allowed
        self.truth = masked_softmax(s, self.allowed)


def _needs_root(f):
    return lambda c: f(c) if c.root else None


# 答案里有 -inf：softmax 的输出不会有 -inf
NEG_INF_DIAGNOSES = (
    Diagnosis("not_softmaxed", lambda c: c.s.masked_fill(c.future, NEG_INF),
          "这是遮蔽之后的分数，还没有做 softmax："
          "再对它沿最后一维做 torch.softmax，未来位置的 -inf 会变成 0"),
    Diagnosis("log_softmax", lambda c: torch.log_softmax(c.s.masked_fill(c.future, NEG_INF), dim=-1),
          "像是用了 log_softmax：它给出的是权重的对数"
          "（都不大于 0，未来位置是 -inf）。"
          "这里要的是权重本身：用 torch.softmax"),
    Diagnosis("softmax_then_neg_inf",
          lambda c: torch.softmax(c.s, dim=-1).masked_fill(c.future, NEG_INF),
          "像是先做了 softmax，再用 masked_fill 把未来位置设成 -inf。"
          "-inf 应该放进分数里，在 softmax 之前；softmax 之后未来位置自然是 0"),
    Diagnosis("unscaled_not_softmaxed", _needs_root(lambda c: (c.s * c.root).masked_fill(c.future, NEG_INF)),
          "这是遮蔽之后、还没有缩放的分数（Q @ K.T），也还没有做 softmax。"
          "题目给的 scores 已经缩放过：遮蔽 scores，再做 softmax"),
)

# 答案里有 NaN：某些行的分数全被换成了 -inf
NAN_DIAGNOSES = (
    ("filled_pos_inf", lambda c: torch.softmax(c.s.masked_fill(c.future, float("inf")), dim=-1),
     "被遮住的分数填成了 +inf 而不是 -inf：e 的 +inf 次方是无穷大，"
     "凡是有未来位置的行，softmax 都只能算出 ∞/∞。填 float(\"-inf\")"),
    ("inverted", lambda c: torch.softmax(c.s.masked_fill(c.allowed, NEG_INF), dim=-1),
     "遮蔽反了：被换成 -inf 的是能看的位置（对角线及以下），留下的却是未来。"
     "像是写成了 masked_fill(mask == 1, …)，或者把 mask 直接当成了条件"
     "（masked_fill(mask.bool(), …)），或者 mask 本身 0、1 颠倒了。"
     "要换掉的是未来位置（mask == 0）"),
    ("diagonal_masked", lambda c: masked_softmax(c.s, tril(c.n).tril(-1)),
     "对角线也被遮住了：位置 i 应当能看到自己，"
     "所以第 0 行一个能看的位置也没剩下"),
)


def _mistakes() -> tuple[Diagnosis, ...]:
    """答案是有限的数却不对：按顺序比较的典型错误。"""
    return (
        Diagnosis("eye", lambda c: torch.eye(c.n, dtype=torch.float64).expand_as(c.s),
              "你的权重是单位矩阵：每个位置只看自己，分数没有起作用。"
              "像是遮蔽矩阵用成了 torch.eye，"
              "或者把对角线以外全遮住了；因果遮蔽只遮住位置 i 之后的 Key"),
        Diagnosis("uniform",
              lambda c: (c.allowed.double() / c.allowed.double().sum(dim=-1, keepdim=True)).expand_as(c.s),
              "每一行在能看的位置上平均分配：分数没有参与计算。"
              "像是对遮蔽矩阵本身"
              "（或全 0 的分数）做了 softmax，"
              "或者用遮蔽矩阵除以了每行的个数；"
              "softmax 的输入应当是遮蔽之后的 scores"),
        Diagnosis("scores_themselves", lambda c: c.s,
              "这就是题目给的 scores 本身：还没有遮蔽，也没有做 softmax"),
        Diagnosis("masked_with_zero_no_softmax", lambda c: c.s.masked_fill(c.future, 0.0),
              "这是遮蔽之后的分数（未来位置是 0），还没有做 softmax。"
              "另外，被遮住的分数要填 -inf 而不是 0，softmax 之后它们才是 0"),
        Diagnosis("softmax_then_mask", lambda c: torch.softmax(c.s, dim=-1) * c.allowed,
              "像是先 softmax、再把未来位置乘 0（或填 0）：未来位置虽然是 0，"
              "被遮住的那部分权重却丢了，凡是遮住过位置的行，加起来都不到 1。"
              "应当先把未来位置的分数设为 -inf，再做 softmax"),
        Diagnosis("no_mask", lambda c: torch.softmax(c.s, dim=-1),
              "没有遮蔽：未来位置的权重不是 0。"
              "masked_fill(mask == 0, float(\"-inf\")) 要做在 softmax 之前"),
        Diagnosis("filled_zero", lambda c: torch.softmax(c.s.masked_fill(c.future, 0.0), dim=-1),
              "被遮住的分数填成了 0 而不是 -inf（乘 mask 也是这个结果）："
              "e⁰ = 1，未来位置照样分到权重。填 float(\"-inf\")"),
        Diagnosis("mask_added", lambda c: torch.softmax(c.s + c.allowed.double(), dim=-1),
              "像是把 0/1 的 mask 直接加到了分数上：加 1 只是让能看的位置稍占便宜，"
              "未来位置照样分到权重。把 mask == 0 的分数换成 float(\"-inf\")"),
        Diagnosis("inverted", lambda c: torch.softmax(c.s.masked_fill(c.allowed, -1e9), dim=-1),
              "遮蔽反了：被换掉的是能看的位置（对角线及以下），留下的却是未来。"
              "像是写成了 masked_fill(mask == 1, …)，或者 mask 本身 0、1 颠倒了。"
              "要换掉的是未来位置（mask == 0）"),
        Diagnosis("diagonal_plus_one",
              lambda c: masked_softmax(c.s, torch.ones(c.n, c.n, dtype=torch.bool).tril(1)),
              "遮蔽多放开了一格：每个位置还看到了紧挨着的下一个 token，"
              "像是遮蔽矩阵用了 torch.tril(…, diagonal=1)。位置 i 能看的是 0…i"),
        Diagnosis("wrong_dim", lambda c: masked_softmax(c.s, c.allowed, dim=-2),
              "softmax 做在了错误的维度（dim=0 / dim=-2），每一列加起来是 1。"
              "每个 Query 的权重在一行里，应当用 dim=-1"),
        Diagnosis("triu", lambda c: masked_softmax(c.s, c.allowed.T),
              "遮住的是过去而不是未来：遮蔽矩阵像是上三角（torch.triu）。"
              "位置 i 能看的是 0…i"),
        Diagnosis("exp_only", lambda c: torch.exp(c.s).masked_fill(c.future, 0.0),
              "像是只做了 exp，没有除以每行之和：softmax = exp 之后再按行归一化，"
              "直接用 torch.softmax(…, dim=-1)"),
        Diagnosis("transposed", lambda c: c.truth.transpose(-2, -1),
              "你的结果是正确权重的转置，像是多做了一次 .T："
              "第 i 行应当是 Query i 分给各个 Key 的权重"),
        Diagnosis("unscaled", _needs_root(lambda c: masked_softmax(c.s * c.root, c.allowed)),
              "像是用了没有除以 √d_k 的分数（Q @ K.T）："
              "题目给的 scores 已经缩放过，直接用 scores"),
        Diagnosis("sigmoid", lambda c: torch.sigmoid(c.s).masked_fill(c.future, 0.0),
              "像是用了 sigmoid：每个数各自压到了 0 和 1 之间，每行加起来却不是 1。"
              "用 torch.softmax(…, dim=-1)"),
        Diagnosis("softmax_all", lambda c: torch.softmax(
            c.s.masked_fill(c.future, NEG_INF).flatten(-2), dim=-1).view_as(c.s),
              "像是对整个矩阵一起做了 softmax（所有格子加起来是 1）：每一行单独做，dim=-1"),
        Diagnosis("softmax_twice", lambda c: masked_softmax(c.truth, c.allowed),
              "像是做了两次 softmax：遮蔽后的分数只做一次 softmax"),
        Diagnosis("softmax_twice_leaking", lambda c: torch.softmax(c.truth, dim=-1),
              "像是对权重又做了一次 softmax：未来位置的 0 经过 e⁰ = 1 又分到了权重。遮蔽后的分数只做一次 softmax"),
        Diagnosis("normalised_without_exp", lambda c: (lambda m: m / m.sum(dim=-1, keepdim=True))(
            c.s.masked_fill(c.future, 0.0)),
              "像是没有取 exp 就除以了行和：softmax 先取 exp（把每个数变成正数），再按行归一化。"
              "用 torch.softmax(…, dim=-1)"),
        Diagnosis("filled_zero_then_mask", lambda c: torch.softmax(c.s.masked_fill(c.future, 0.0), dim=-1) * c.allowed,
              "被遮住的分数填了 0，softmax 之后又把未来位置乘了 0：被遮住的那部分权重丢了。"
              "应当在 softmax 之前把未来位置的分数设为 -inf"),
        Diagnosis("wrong_dim_filled_zero", lambda c: torch.softmax(c.s.masked_fill(c.future, 0.0), dim=-2),
              "softmax 做在了 dim=0（每一列加起来是 1），被遮住的分数也填成了 0 而不是 -inf。"
              "先填 float(\"-inf\")，再沿 dim=-1 做 softmax"),
        Diagnosis("negated", lambda c: masked_softmax(-c.s, c.allowed),
              "分数的符号像是反了（softmax(-scores)）：分数越大的位置，权重应当越大"),
        Diagnosis("scaled_twice", _needs_root(lambda c: masked_softmax(c.s / c.root, c.allowed)),
              "分数被缩小了两次：scores 已经除过 √d_k，你又除了一次"
              "（从 Q @ K.T 算起、除以 d_k 而不是 √d_k，也是这个结果）。"
              "直接用 scores"),
    )


def _given_scores(scores) -> torch.Tensor:
    s = to_tensor(scores, "scores", "注意力分数张量 [seq, seq]", given=True)
    if not s.dtype.is_floating_point or s.dim() < 2 or s.shape[-1] != s.shape[-2]:
        raise HomeworkWrong(
            f"题目给的 scores 应是浮点方阵 [..., seq, seq]，现在是 {s.dtype}、"
            f"形状 {tuple(s.shape)}："
            "请重新运行上面给出数据的单元", "given")
    s = s.double()
    allowed = tril(s.shape[-1])
    if torch.isnan(s).any() or torch.isinf(s.masked_fill(~allowed, 0.0)).any():
        raise HomeworkWrong("题目给的 scores 在可见位置上有 NaN 或无穷大："
                            "请重新运行上面给出数据的单元", "given")
    return s


def _answer(weights, s: torch.Tensor) -> torch.Tensor:
    w = to_tensor(weights, "weights", "浮点张量（softmax 的输出）")
    low = (torch.float16, torch.bfloat16)
    if isinstance(weights, torch.Tensor) and (
            not weights.dtype.is_floating_point or weights.dtype in low):
        raise HomeworkWrong(
            f"weights 的数据类型是 {weights.dtype}，应该是 float32 或 float64："
            "softmax 的输出是 0 和 1 之间的小数", "dtype")
    w = w.double()
    if tuple(w.shape) != tuple(s.shape):
        raise HomeworkWrong(
            f"检查 weights 的形状：应该和 scores 一样是 {tuple(s.shape)}，"
            f"收到 {tuple(w.shape)}。"
            "softmax 不改变形状；检查是不是对错了张量，或者多/少了一维", "shape")
    return w


def _root(d_k) -> float | None:
    if d_k is None:
        return None
    try:
        return math.sqrt(count(d_k, "d_k", given=True))
    except (HomeworkWrong, ValueError, OverflowError):
        return None


def _non_finite(w: torch.Tensor, c: _Data) -> HomeworkWrong | None:
    """答案里有 -inf、NaN 或 +inf 时的诊断。"""
    if torch.isneginf(w).any():
        row = first_match(w, c.truth, NEG_INF_DIAGNOSES, c)
        hint = row.message if row else (
            "softmax 的输出都在 0 和 1 之间，"
            "-inf 只该出现在 softmax 之前的分数里。"
            "检查 weights 是不是 torch.softmax(…) 的输出，"
            "以及 softmax 之后有没有又把某些位置填成了 -inf")
        return HomeworkWrong(f"weights 里有 -inf：{after_colon(hint)}", row.name if row else "neg_inf")
    if torch.isnan(w).any():
        rows = sorted({r[-2] for r in torch.isnan(w).nonzero().tolist()})
        listed = "、".join(map(str, rows))
        head = f"weights 的第 {listed} 行都是 NaN。" if len(rows) > 1 else f"weights 的第 {listed} 行是 NaN。"
        for name, make, hint in NAN_DIAGNOSES:
            value = make(c)
            if value.shape == w.shape and torch.allclose(w, value, equal_nan=True, **TOLERANCE):
                return HomeworkWrong(head + hint, name)
        return HomeworkWrong(head + "softmax 的输入里一行全是 -inf（0/0），或者有 +inf（∞/∞），"
                                    "都会算出 NaN。检查哪些位置被换成了什么：每个位置至少能看到自己，"
                                    "所以每一行都应当留下可以看的分数", "nan")
    if torch.isinf(w).any():
        return HomeworkWrong("weights 里有无穷大：softmax 的输出都在 0 和 1 之间，"
                             "检查计算过程", "inf")
    return None


def _finite_fill(w: torch.Tensor, c: _Data) -> HomeworkWrong | None:
    """未来位置的分数填成了一个有限的数（-10、-5……）而不是 -inf：未来位置分到一点权重。

    由第一个漏出权重的格子反推填的数 v（w[i, j] / w[i, i] = e^(v - s[i, i])），
    再核对整个答案是不是 softmax(把未来位置填成 v 的 scores)。
    """
    leak = (w > TOLERANCE["atol"]) & c.future
    if not leak.any() or not bool((w[..., c.allowed] > 0).all()):
        return None
    idx = leak.nonzero()[0].tolist()
    i, j = idx[-2], idx[-1]
    lead = tuple(idx[:-2])
    v = math.log(w[lead + (i, j)].item() / w[lead + (i, i)].item()) + c.s[lead + (i, i)].item()
    if not close(w, torch.softmax(c.s.masked_fill(c.future, v), dim=-1)):
        return None
    return HomeworkWrong(
        f"检查 weights：被遮住的分数像是填成了 {v:.3g}，而不是 -inf："
        "e 的这个次方虽小，却不是 0，未来位置照样分到一点权重。"
        "填 float(\"-inf\")（或 torch.finfo(scores.dtype).min）", "small_leak")


def _properties(w: torch.Tensor, c: _Data) -> HomeworkWrong:
    """没有认出的错误：按性质说哪里不对（未来位置、负数、行和），最后是数值不一致。"""
    offset = constant_offset(w, c.truth)
    if offset is not None:
        return HomeworkWrong(f"检查 weights：{offset}", "constant_offset")
    leak = (w.abs() > TOLERANCE["atol"]) & c.future
    if leak.any():
        idx = leak.nonzero()[0].tolist()
        i, j = idx[-2], idx[-1]
        return HomeworkWrong(
            f"检查未来位置的权重是否为 0：第 {i} 行第 {j} 列"
            f"（Query {i} 看 Key {j}，{j} 在 {i} 之后）"
            f"是 {w[tuple(idx)].item():.4f}。"
            "遮蔽要在 softmax 之前把这些分数设为 -inf", "leak")
    if (w < -TOLERANCE["atol"]).any():
        return HomeworkWrong("检查权重是否非负：出现了负数。"
                             "softmax 的输出都在 0 和 1 之间", "negative")
    row_sums = w.sum(dim=-1)
    scale = row_sums.flatten()[0].item()
    if abs(scale - 1) > 1e-4 and close(w, c.truth * scale):
        return HomeworkWrong(f"检查 weights：每一行加起来都是 {scale:.4g}，权重的比例却都对："
                             "像是多乘（或除）了一个数。softmax 的输出每行加起来是 1", "scaled_weights")
    if not torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-4):
        return HomeworkWrong(
            "检查每一行是否加起来等于 1："
            f"你的行和是 {[round(x, 4) for x in row_sums.flatten().tolist()[:8]]}。"
            "请确认 weights 是对遮蔽后的分数沿最后一维做 softmax 的输出", "row_sums")
    return HomeworkWrong(
        "检查 weights：未来位置是 0、每行和为 1，"
        f"但数值与由 scores 算出的权重不一致（{TOLERANCE_TEXT}）。"
        "检查 softmax 的输入是不是题目给的 scores（遮蔽之后），"
        "有没有对分数另做了别的变换", "values")


def judge_masked_weights(weights, scores, d_k=None) -> str:
    """作业 2（二）：遮蔽后的注意力权重（见第 3 节）。

    正确答案 = softmax(把未来位置设为 -inf 的 scores)，沿最后一维。

    weights：你的答案，与 scores 同形 [..., seq, seq]；scores：
    题目给的缩放后的注意力分数；
    d_k：可选，给出时还能认出“用了没缩放的分数”“缩放了两次”这类错误。
    正确答案由 scores 重新算出，
    在 TOLERANCE 之内相等才通过。
    """
    require(weights=weights)
    s = _given_scores(scores)
    w = _answer(weights, s)
    c = _Data(s, _root(d_k))
    problem = _non_finite(w, c)
    if problem is not None:
        raise problem
    if close(w, c.truth):
        return passed(2, "权重与由 scores 遮蔽后做 softmax 的结果一致："
                         "未来位置为 0，每行加起来等于 1")
    row = first_match(w, c.truth, _mistakes(), c)
    if row is not None:
        raise HomeworkWrong(f"检查 weights：{after_colon(row.message)}", row.name)
    problem = _finite_fill(w, c)
    if problem is not None:
        raise problem
    rounding = rounding_hint(w, c.truth)
    if rounding is not None:
        raise HomeworkWrong(f"检查 weights 的数值：{rounding}", "rounding")
    raise _properties(w, c)
