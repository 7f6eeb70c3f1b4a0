"""作业 1（一）：一个 Query 与一个 Key 的分数 = 点积（见第 2 节）。"""

from __future__ import annotations

import math

import torch

from .errors import HomeworkWrong
from .hints import Diagnosis, copied_decimals, copied_hint, first_match, rounding_hint
from .values import TOLERANCE_TEXT, close, float_tensor, passed, require


def _shape_hint(s: torch.Tensor, q: torch.Tensor) -> tuple[str, str]:
    if s.shape == q.shape:
        return "shape_not_summed", ("这像是只做了逐元素相乘 q * k，还没有求和："
                                    "点积 = 对应位置相乘再全部加起来")
    if s.dim() == 2 and s.numel() > 1:
        return "shape_matrix", ("这是一个矩阵，像是算成了外积（q 的列向量乘 k 的行向量），"
                                "或者算了整张分数矩阵；这一问只要一个数")
    return "shape_other", ("一个分数应该是标量（0 维张量或 Python 数字），"
                           "可以用 .sum() 或 .item() 得到它")


def _row_hint(s: torch.Tensor, q: torch.Tensor, k: torch.Tensor, Q, K) -> tuple[str, str] | None:
    """score 是 q 对所有 Key 的一行分数（q @ K.T），或所有 Query 对 k 的一列（Q @ k）时：(诊断名, 提示)。
    对它求和得不到答案，所以不能只说“用 .sum() 变成一个数”。"""
    try:
        Q = float_tensor(Q, "Q", "二维矩阵 [seq, d_k]", given=True)
        K = float_tensor(K, "K", "二维矩阵 [seq, d_k]", given=True)
    except HomeworkWrong:
        return None
    if s.dim() != 1 or K.dim() != 2 or Q.shape != K.shape or K.shape[-1] != q.shape[0]:
        return None
    if s.shape[0] != K.shape[0]:
        return None
    if close(s, q @ K.T):
        return "row_of_scores", (f"这是 q 对所有 {K.shape[0]} 个 Key 的一行分数（q @ K.T，第 j 个数是 q 与 K[j] 的点积），"
                                 "把它加起来也不是答案：这一问只要 q 与 k 这一对的点积，把 K 换成 k")
    if close(s, Q @ k):
        return "row_of_scores", (f"这是所有 {Q.shape[0]} 个 Query 对 k 的一列分数（Q @ k，第 i 个数是 Q[i] 与 k 的点积），"
                                 "把它加起来也不是答案：这一问只要 q 与 k 这一对的点积，把 Q 换成 q")
    return None


def _diagnoses(d_k: int) -> tuple[Diagnosis, ...]:
    root = math.sqrt(d_k)
    return (
        Diagnosis("cosine", lambda c: c.truth / (c.q.norm() * c.k.norm()),
              "这是余弦相似度（点积再除以两个向量的长度）：这里只要点积本身，不除以长度"),
        Diagnosis("scaled", lambda c: c.truth / root,
              f"你已经除以了 √d_k = {root:g}：这里只要原始点积，缩放是下一步"),
        Diagnosis("mean", lambda c: c.truth / d_k,
              f"这像是求了平均（.mean()），或者除以了 d_k = {d_k}："
              "点积是乘积的和，不除以任何数"),
        Diagnosis("sign", lambda c: -c.truth,
              "符号反了：点积是对应位置的乘积直接相加，检查是不是多了一个负号"
              "或者做成了相减"),
        Diagnosis("sum_then_multiply", lambda c: c.q.sum() * c.k.sum(),
              "这是先各自求和再相乘：点积要先逐元素相乘，再求和"),
        Diagnosis("q_with_itself", lambda c: (c.q * c.q).sum(), "这是 q 和自己的点积；应该是 q 和 k"),
        Diagnosis("k_with_itself", lambda c: (c.k * c.k).sum(), "这是 k 和自己的点积；应该是 q 和 k"),
        Diagnosis("distance", lambda c: (c.q - c.k).pow(2).sum(), "这是 q 与 k 的距离的平方，不是点积"),
        Diagnosis("max_product", lambda c: (c.q * c.k).max(),
                  "这是逐元素乘积里最大的那一个（.max()）：点积要把所有乘积加起来（.sum()）"),
        Diagnosis("product_of_products", lambda c: (c.q * c.k).prod(),
                  "这是把乘积再连乘了起来（.prod()）：点积是乘积的和（.sum()）"),
        Diagnosis("norm_product", lambda c: c.q.norm() * c.k.norm(),
                  "这是两个向量长度的乘积 |q|·|k|：点积还要乘上夹角的余弦，直接算对应位置的乘积之和"),
        Diagnosis("abs_products", lambda c: (c.q * c.k).abs().sum(),
                  "像是把每个乘积都取了绝对值：负的乘积要照样加进去（等于减掉）"),
        Diagnosis("squared", lambda c: c.truth ** 2, "这是点积的平方：点积本身就是答案，不要再平方"),
        Diagnosis("square_root", lambda c: c.truth.abs().sqrt(), "像是对点积开了平方根：点积本身就是答案"),
        Diagnosis("k_reversed", lambda c: (c.q * c.k.flip(0)).sum(),
                  "像是把 k 倒过来用了（下标写成了 k[d_k - 1 - i]）：q 的第 i 维乘 k 的第 i 维"),
        Diagnosis("sum_of_sums", lambda c: c.q.sum() + c.k.sum(),
                  "这是 q、k 各自的元素和相加（或者 (q + k).sum()）：点积是对应位置相乘，再求和"),
        Diagnosis("difference_sum", lambda c: (c.q - c.k).sum(), "这是 q − k 的元素和：点积是对应位置相乘，再求和"),
        Diagnosis("only_q", lambda c: c.q.sum(), "这只是 q 的元素和，k 没有参与：点积是 q、k 对应位置相乘，再求和"),
        Diagnosis("only_k", lambda c: c.k.sum(), "这只是 k 的元素和，q 没有参与：点积是 q、k 对应位置相乘，再求和"),
        Diagnosis("length_of_q", lambda c: c.q.norm(), "这是 q 的长度 |q|：点积是 q、k 对应位置相乘，再求和"),
        Diagnosis("multiplied_by_d_k", lambda c: c.truth * d_k,
                  f"像是乘了 d_k = {d_k}：点积不乘也不除任何数"),
        Diagnosis("multiplied_by_root", lambda c: c.truth * root,
                  f"像是乘了 √d_k = {root:g}：缩放是除以 √d_k，而且这一问只要原始点积"),
        Diagnosis("plus_one", lambda c: c.truth + 1,
                  "和点积正好差 1：像是求和的初值写成了 1，或者多加了 1"),
        Diagnosis("minus_one", lambda c: c.truth - 1, "和点积正好差 1：检查是不是多减了 1"),
    )


def _term_hint(s: torch.Tensor, c) -> tuple[str, str] | None:
    """score 只是其中一项乘积、或者少加了一项时：(诊断名, 提示)。"""
    terms = c.q * c.k
    for i in range(terms.shape[0]):
        if close(s, terms[i]) and not close(terms[i], c.truth):
            return "one_term", (f"这只是第 {i} 维的乘积 q[{i}]·k[{i}]：点积要把所有 {terms.shape[0]} 个乘积加起来")
        rest = c.truth - terms[i]
        if close(s, rest) and not close(rest, c.truth):
            return "missing_term", (f"少加了一项（第 {i} 维的乘积）：像是循环少走了一步，"
                                    "检查 range 的上下界")
    return None


def _matrix_hint(s: torch.Tensor, c, Q, K) -> tuple[str, str] | None:
    """score 是由整个分数矩阵算出的别的数时：(诊断名, 提示)。"""
    try:
        Q = float_tensor(Q, "Q", "二维矩阵 [seq, d_k]", given=True)
        K = float_tensor(K, "K", "二维矩阵 [seq, d_k]", given=True)
    except HomeworkWrong:
        return None
    if Q.dim() != 2 or Q.shape != K.shape or Q.shape[-1] != c.q.shape[-1]:
        return None
    S = Q @ K.T
    if close(s, S.sum()):
        return "matrix_sum", "这是整张分数矩阵 Q @ K.T 所有元素的和：这一问只要 q 与 k 这一对的点积"
    if close(s, S.mean()):
        return "matrix_mean", "这是整张分数矩阵 Q @ K.T 的平均值：这一问只要 q 与 k 这一对的点积"
    weights = torch.softmax(S / math.sqrt(Q.shape[-1]), dim=-1)
    # 没有缩放就 softmax 的权重也算（r36c F7 的 softmaxed：torch.softmax(Q[1] @ K.T, -1)[2]）
    unscaled = torch.softmax(S, dim=-1)
    if any(close(s, w) for w in torch.cat([weights.flatten(), unscaled.flatten()])):
        return "attention_weight", "这像是一个注意力权重（softmax 之后）：这一问只要 softmax 之前的点积"
    return None


class _Data:
    def __init__(self, q, k):
        self.q, self.k, self.truth = q, k, (q * k).sum()


def wrong_pair_hint(s: torch.Tensor, q: torch.Tensor, k: torch.Tensor, Q, K) -> tuple[str, str] | None:
    """score 是另一对行的点积（Q[a]·K[b]、Q[a]·Q[b]、K[a]·K[b]）时，说出是哪一对：(诊断名, 提示)。"""
    try:
        Q = float_tensor(Q, "Q", "二维矩阵 [seq, d_k]", given=True)
        K = float_tensor(K, "K", "二维矩阵 [seq, d_k]", given=True)
    except HomeworkWrong:
        return None
    if Q.dim() != 2 or Q.shape != K.shape or Q.shape[-1] != q.shape[-1]:
        return None
    qi = [i for i in range(Q.shape[0]) if close(Q[i], q)]
    ki = [i for i in range(K.shape[0]) if close(K[i], k)]
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
                if close(s, (A[a] * B[b]).sum()):
                    if (name_a, name_b) == ("Q", "K") and (a, b) == (ki[0], qi[0]):
                        name, what = "swapped_roles", "两个 token 的角色对调了"
                    elif (name_a, name_b) == ("Q", "K"):
                        name, what = "wrong_rows", "取错了行"
                    else:
                        name, what = f"both_from_{name_a}", f"两个向量都取自 {name_a}"
                    return name, (f"你的数是 {name_a}[{a}] 与 {name_b}[{b}] 的点积，"
                            f"{what}。"
                            f"题目要的是 {asked}的点积：直接用上面给出的 q 和 k")
    return None


def judge_dot_score(score, q, k, Q=None, K=None) -> str:
    """作业 1（一）：一个 Query 与一个 Key 的分数 = 点积 (q * k).sum()（见第 2 节）。

    score：Python 数字或 0 维浮点张量；q、k：题目给的等长一维向量。
    Q、K：可选，q、k 取自的整个矩阵；给出时还能认出“取错了行”（例如 Q[2]·K[1]）。
    """
    require(score=score)
    q = float_tensor(q, "q", "一维向量", given=True)
    k = float_tensor(k, "k", "一维向量", given=True)
    if q.dim() != 1 or q.shape != k.shape:
        raise HomeworkWrong(
            f"题目给的 q、k 应是等长的一维向量，现在形状是 {tuple(q.shape)} 和 "
            f"{tuple(k.shape)}："
            "请重新运行上面给出数据的单元", "given")
    s = float_tensor(score, "score", "一个数（Python 数字或 0 维张量）")
    data = _Data(q, k)
    if s.dim() > 0:
        name, hint = (Q is not None and K is not None and _row_hint(s, q, k, Q, K)) or _shape_hint(s, q)
        raise HomeworkWrong("检查 score 的形状：应该是一个数（0 维），"
                            f"收到形状 {tuple(s.shape)} 的张量。{hint}", name)
    # float32 求和的误差上界：项数 × 2⁻²⁴ × 各项绝对值之和
    spread = q.shape[0] * 2.0 ** -24 * (q * k).abs().sum().item()
    copied = copied_decimals(s, data.truth, spread)
    if copied is not None:   # 照着 ✔ 消息或答案里打印的数抄的：在容差之内，也不算
        raise HomeworkWrong("检查 score 是否等于 q 与 k 的点积：它不是算出来的。"
                            f"{copied_hint(copied, one=True)}", "rounding")
    if close(s, data.truth):
        return passed(1, f"score = {s.item():.4f}，等于 q 与 k 的点积")
    d_k = q.shape[-1]
    row = first_match(s, data.truth, _diagnoses(d_k), data)
    found = (row.name, row.message) if row else None
    if found is None:
        found = _term_hint(s, data)
    if found is None and Q is not None and K is not None:
        found = wrong_pair_hint(s, q, k, Q, K) or _matrix_hint(s, data, Q, K)
    if found is None:
        rounding = rounding_hint(s, data.truth)
        found = ("rounding", rounding) if rounding else None
    if found is None:
        found = ("values", f"你的是 {s.item():.4f}；没有认出是哪一种常见错误："
                           "把 q * k 打印出来，手算一两项核对，"
                           f"再确认 {d_k} 个乘积都加了进去")
    name, hint = found
    raise HomeworkWrong("检查 score 是否等于 q 与 k 的点积："
                        f"与正确结果不一致（{TOLERANCE_TEXT}）。{hint}", name)
