"""作业检查：答对时给出确认，答错时说明检查了什么、错在哪里（见「作业」一节）。

- 没填（还是 None 或 ...）→ `HomeworkNotFilled`，指出哪个空没填；
- 填错 → `HomeworkWrong`，说明检查了什么、为什么不对、常见的错因；
- 通过 → 打印并返回一行 “✔ 作业 N 通过：…”。

两个异常都是 AssertionError 的子类，和作业里原来的 assert 写法一致。
"""

import math

import torch

from .attention import causal_mask


class HomeworkNotFilled(AssertionError):
    """答案还没有填写（仍是 None 或 ...）（见「作业」一节）。"""


class HomeworkWrong(AssertionError):
    """答案填了但不对；消息说明检查了什么、为什么不对（见「作业」一节）。"""


def _require(**answers) -> None:
    missing = [
        name for name, value in answers.items() if value is None or value is Ellipsis
    ]
    if missing:
        raise HomeworkNotFilled(
            f"{'、'.join(missing)} 还没有填写：把 None 换成你的计算结果再运行"
        )


def _passed(n: int, detail: str) -> str:
    msg = f"✔ 作业 {n} 通过：{detail}"
    print(msg)
    return msg


def _as_tensor(value, name: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach()
    try:
        return torch.as_tensor(value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise HomeworkWrong(
            f"{name} 应该是数字或张量，"
            f"收到的是 {type(value).__name__}：{value!r}"
        ) from None


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(
        a.double(), b.double(), rtol=1e-4, atol=1e-5
    )


# ---------------------------------------------------------------- 作业 1


def check_dot_score(score, q, k) -> str:
    """作业 1（一）：一个 query 与一个 key 的分数 = 点积 (q * k).sum()
    （见第 2 节 Scaled Dot-Product Attention）。

    score 可以是 Python 数字或 0 维张量；q、k 是等长的一维向量。
    """
    _require(score=score)
    q, k = _as_tensor(q, "q").double(), _as_tensor(k, "k").double()
    s = _as_tensor(score, "score")
    expected = (q * k).sum()
    if s.dim() > 0:
        if s.shape == q.shape:
            hint = ("这像是只做了逐元素相乘 q * k，还没有求和："
                    "点积 = 对应位置相乘再全部加起来，即 (q * k).sum()")
        elif s.dim() == 2 and s.numel() > 1:
            hint = ("这是一个矩阵，像是算成了外积（q 的列向量乘 k 的行向量）；"
                    "点积只要一个数")
        else:
            hint = ("一个分数应该是标量（0 维张量或 Python 数字），"
                    "可以用 (q * k).sum() 或 .item()")
        raise HomeworkWrong(
            "检查 score 的形状：期望一个数（0 维），"
            f"得到形状 {tuple(s.shape)} 的张量。{hint}"
        )
    got = s.double()
    if _close(got, expected):
        return _passed(1, f"score = {got.item():.4f}，等于 (q * k).sum()")
    d_k = q.shape[-1]
    diagnoses = [
        (expected / math.sqrt(d_k),
         f"你已经除以了 √d_k = {math.sqrt(d_k):.2f}：这里只要原始点积，缩放是下一步"),
        (q.sum() * k.sum(),
         "这是先各自求和再相乘 q.sum() * k.sum()；点积要先逐元素相乘再求和"),
        ((q * q).sum(), "这是 q 和自己的点积；应该是 q 和 k"),
        ((k * k).sum(), "这是 k 和自己的点积；应该是 q 和 k"),
    ]
    hint = next(
        (h for value, h in diagnoses if _close(got, value)),
        "请检查是否对应位置相乘后全部相加",
    )
    raise HomeworkWrong(
        "检查 score 是否等于 (q * k).sum()："
        f"期望 {expected.item():.4f}，得到 {got.item():.4f}。{hint}"
    )


def check_score_matrix(S, Q, K) -> str:
    """作业 1（二）：整张分数矩阵 S = Q @ K.T，
    第 i 行第 j 列是 query i 与 key j 的点积
    （见第 2 节 Scaled Dot-Product Attention）。
    """
    _require(S=S)
    Q, K = _as_tensor(Q, "Q").double(), _as_tensor(K, "K").double()
    got = _as_tensor(S, "S").double()
    expected = Q @ K.T  # [seq_q, seq_k]
    if got.shape != expected.shape:
        if got.shape == (Q.shape[-1], K.shape[-1]):
            hint = ("这像是 Q.T @ K（特征维之间相乘）；"
                    "应该是 Q @ K.T，结果是 [seq_q, seq_k]")
        elif got.shape == Q.shape:
            hint = ("这像是逐元素相乘 Q * K，没有对特征维求和；"
                    "应该用矩阵乘法 Q @ K.T")
        else:
            hint = "分数矩阵的行数 = query 个数，列数 = key 个数"
        raise HomeworkWrong(
            f"检查 S 的形状：期望 {tuple(expected.shape)}（[seq_q, seq_k]），"
            f"得到 {tuple(got.shape)}。{hint}"
        )
    if _close(got, expected):
        return _passed(
            1,
            f"S 的形状是 {tuple(got.shape)}，每个元素都等于对应 query 与 key 的点积",
        )
    if _close(got, expected.T):
        raise HomeworkWrong(
            "检查 S 是否等于 Q @ K.T：你的结果正好是它的转置（K @ Q.T）。"
            "第 i 行应当是 query i 对所有 key 的分数，请把 Q 放在左边：Q @ K.T"
        )
    if _close(got, expected / math.sqrt(Q.shape[-1])):
        raise HomeworkWrong(
            "检查 S 是否等于 Q @ K.T："
            f"你已经除以了 √d_k = {math.sqrt(Q.shape[-1]):.2f}；这里只要原始分数"
        )
    i, j = (~torch.isclose(got, expected, rtol=1e-4, atol=1e-5)).nonzero()[0].tolist()
    raise HomeworkWrong(
        f"检查 S 是否等于 Q @ K.T：第 {i} 行第 {j} 列应为 Q[{i}] 与 K[{j}] 的点积 "
        f"{expected[i, j].item():.4f}，"
        f"得到 {got[i, j].item():.4f}"
    )


# ---------------------------------------------------------------- 作业 2


def check_causal_mask(mask, seq_len: int) -> str:
    """作业 2（一）：因果 mask 是下三角，1 / True = 可以看，0 / False = 遮住
    （见第 3 节 因果遮蔽）。
    """
    _require(mask=mask)
    m = mask.detach() if isinstance(mask, torch.Tensor) else _as_tensor(mask, "mask")
    if tuple(m.shape) != (seq_len, seq_len):
        raise HomeworkWrong(
            f"检查 mask 的形状：期望 ({seq_len}, {seq_len})（[seq_len, seq_len]），"
            f"得到 {tuple(m.shape)}"
        )
    if m.dtype != torch.bool:
        if torch.isinf(m).any():
            raise HomeworkWrong(
                "检查 mask 的取值：你的 mask 里有 -inf，这是“加到分数上”的加性写法。"
                "这里要的是本书的约定：1 = 可以看，0 = 遮住"
                "（-inf 是后面 masked_fill 才放进分数里的）"
            )
        bad = ~((m == 0) | (m == 1))
        if bad.any():
            raise HomeworkWrong(
                "检查 mask 的取值：只能是 0 和 1（或 False / True），"
                f"发现了 {m[bad].unique().tolist()}"
            )
    allowed = m.bool() if m.dtype == torch.bool else m != 0
    expected = causal_mask(seq_len).bool()
    if torch.equal(allowed, expected):
        return _passed(
            2, f"mask 是 {seq_len}×{seq_len} 的下三角矩阵，位置 i 只能看 0…i"
        )
    n = seq_len
    if n > 1 and torch.equal(allowed, expected.T):
        hint = ("你的 mask 是上三角，正好是正确答案的转置："
                "位置 i 看到的是自己和它后面的 token（未来）。"
                "用 torch.tril 而不是 torch.triu")
    elif n > 1 and torch.equal(allowed, ~expected):
        hint = ("含义反了：你把“遮住”标成了 1/True。"
                "这是 nn.MultiheadAttention 的约定（True = 不许看）；"
                "本书约定 1 / True = 可以看")
    elif allowed.all():
        hint = "所有位置都是 1，什么都没有遮住：每个 token 都能偷看未来"
    elif torch.equal(
        allowed, torch.tril(torch.ones(n, n, dtype=torch.bool), diagonal=-1)
    ):
        hint = ("对角线被遮住了：位置 i 应该能看到自己。这样第 0 行全是 0，"
                "softmax 会对整行 -inf 求值，得到 NaN")
    else:
        i, j = (allowed != expected).nonzero()[0].tolist()
        hint = (f"第 {i} 行第 {j} 列应为 {int(expected[i, j])}"
                f"（{'可以看' if expected[i, j] else '遮住'}），"
                f"你的是 {int(allowed[i, j])}")
    raise HomeworkWrong(f"检查 mask 是否为下三角（1 = 可以看）：{hint}")


def check_masked_weights(weights, mask=None) -> str:
    """作业 2（二）：遮蔽后的注意力权重——未来位置为 0，每行加起来等于 1
    （见第 3 节 因果遮蔽）。

    weights: [..., seq, seq]；mask 默认是同样大小的因果 mask（1 = 可以看）。
    """
    _require(weights=weights)
    w = _as_tensor(weights, "weights").double()
    if w.dim() < 2 or w.shape[-1] != w.shape[-2]:
        raise HomeworkWrong(
            f"检查 weights 的形状：期望 [..., seq, seq] 的方阵，得到 {tuple(w.shape)}"
        )
    n = w.shape[-1]
    allowed = causal_mask(n).bool() if mask is None else _as_tensor(mask, "mask") != 0
    if torch.isnan(w).any():
        rows = sorted({r[-2] for r in torch.isnan(w).nonzero().tolist()})
        raise HomeworkWrong(
            f"检查 weights 里有没有 NaN：第 {rows} 行出现了 NaN。"
            "通常是某一行的分数全被换成了 -inf（比如对角线也被遮住）再做 softmax"
        )
    if (w < -1e-6).any():
        raise HomeworkWrong(
            "检查权重是否非负：出现了负数。softmax 的输出都在 0 和 1 之间"
        )
    leak = (w.abs() > 1e-6) & ~allowed
    if leak.any():
        idx = leak.nonzero()[0].tolist()
        i, j = idx[-2], idx[-1]
        raise HomeworkWrong(
            f"检查未来位置的权重是否为 0：第 {i} 行第 {j} 列"
            f"（query {i} 看 key {j}，{j} 在 {i} 之后）是 "
            f"{w[tuple(idx)].item():.4f}。mask 要在 softmax 之前把这些分数设为 -inf"
        )
    row_sums, col_sums = w.sum(dim=-1), w.sum(dim=-2)
    ones = torch.ones_like(row_sums)
    if not torch.allclose(row_sums, ones, atol=1e-4):
        if torch.allclose(col_sums, ones, atol=1e-4):
            hint = ("每一列加起来是 1，每一行却不是："
                    "softmax 做在了错误的维度（dim=0 / dim=-2）。"
                    "每个 query 的权重在一行里，应当用 softmax(..., dim=-1)")
        elif (row_sums <= 1 + 1e-4).all():
            hint = ("有的行加起来小于 1，像是先 softmax、再把未来位置乘 0："
                    "被遮住的那部分权重丢掉了。"
                    "应该先把分数设为 -inf，再做 softmax")
        else:
            hint = "请确认 weights 是 softmax 的输出"
        raise HomeworkWrong(
            "检查每一行是否加起来等于 1："
            f"得到的行和是 {[round(x, 4) for x in row_sums.flatten().tolist()[:8]]}。"
            f"{hint}"
        )
    return _passed(2, "未来位置的权重都是 0，每一行加起来等于 1")


# ---------------------------------------------------------------- 作业 3


def _as_int(value, name: str) -> int:
    if isinstance(value, torch.Tensor):
        value = value.item()
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or value != int(value)):
        raise HomeworkWrong(f"{name} 应该是一个整数（参数个数），收到 {value!r}")
    return int(value)


def check_ffn_params(w1_params, w2_params, total_params, hidden_size: int = 512,
                     d_ff: int = 2048) -> str:
    """作业 3：FFN 的参数量，包含偏置（见第 5 节 FFN）。

    W1: d_ff × hidden_size 个权重 + d_ff 个偏置；
    W2: hidden_size × d_ff 个权重 + hidden_size 个偏置。
    """
    _require(w1_params=w1_params, w2_params=w2_params, total_params=total_params)
    w1, w2, total = (_as_int(v, n) for v, n in (
        (w1_params, "w1_params"),
        (w2_params, "w2_params"),
        (total_params, "total_params"),
    ))
    h, f = hidden_size, d_ff
    exp_w1, exp_w2 = f * h + f, h * f + h
    if w1 != exp_w1:
        if w1 == f * h:
            hint = f"只算了权重 {f}×{h}，漏了偏置：W1 还有 d_ff = {f} 个偏置项"
        elif w1 == f * h + h:
            hint = f"偏置个数不对：W1 的偏置个数等于它的输出维度 d_ff = {f}，不是 {h}"
        else:
            hint = f"W1 把 {h} 维升到 {f} 维：权重 {f}×{h}，再加 {f} 个偏置"
        raise HomeworkWrong(f"检查 w1_params：期望 {exp_w1:,}，得到 {w1:,}。{hint}")
    if w2 != exp_w2:
        if w2 == h * f:
            hint = f"只算了权重 {h}×{f}，漏了偏置：W2 还有 hidden_size = {h} 个偏置项"
        elif w2 == h * f + f:
            hint = (f"偏置个数不对：W2 的偏置个数等于它的输出维度 hidden_size = {h}，"
                    f"不是 {f}")
        else:
            hint = f"W2 把 {f} 维降回 {h} 维：权重 {h}×{f}，再加 {h} 个偏置"
        raise HomeworkWrong(f"检查 w2_params：期望 {exp_w2:,}，得到 {w2:,}。{hint}")
    if total != w1 + w2:
        if total == 2 * h * f:
            hint = "总数漏了偏置：两层的偏置都没有算进去"
        elif total in (w1 + h * f, w2 + f * h):
            hint = "总数只算了一层的偏置：W1 和 W2 的偏置都要算"
        else:
            hint = "总参数量就是两层之和"
        raise HomeworkWrong(
            "检查 total_params = w1_params + w2_params："
            f"期望 {w1 + w2:,}，得到 {total:,}。{hint}"
        )
    return _passed(
        3,
        f"W1 {w1:,} + W2 {w2:,} = {total:,} 个参数，"
        f"约是 hidden_size² 的 {total / h ** 2:.0f} 倍",
    )
