"""作业 3：FFN 两个线性层的参数量（见第 5 节）。"""

from __future__ import annotations

from .errors import HomeworkWrong
from .values import count, passed, require


def _layer_rows(layer: str, name: str, h: int, f: int):
    """(名字, 判断 got 是否像这个错误, 提示)：一层的参数个数，按顺序比较。

    提示说出错在哪一类，但不说出任何一层的偏置个数或参数个数（那样只剩一步加法）。
    """
    weights = f * h
    other_out = "hidden_size" if layer == "W1" else "d_ff"
    in_dim = h if layer == "W1" else f
    out_dim = f if layer == "W1" else h
    return (
        ("both_dims_plus_one", lambda g: g == (h + 1) * (f + 1),
         "像是输入、输出维度各加了 1 再相乘：偏置只给每个输出维加一个，"
         "所以是（输入维度 + 1）× 输出维度，输出维度不加 1"),
        ("bias_twice", lambda g: g == weights + 2 * out_dim,
         "偏置像是算了两遍：每个输出维只有一个偏置"),
        ("no_bias", lambda g: g == weights,
         "只数了权重，漏了偏置：nn.Linear 默认带偏置，"
         f"每个输出维一个。{layer} 的输出是几维？"),
        ("bias_by_input", lambda g: g == weights + in_dim,
         "偏置个数不对：你加上的偏置个数等于 "
         f"{layer} 的输入维度（{other_out}），"
         "而偏置是每个输出维一个"),
        ("one_bias", lambda g: g == weights + 1,
         "偏置不是每层一个，而是每个输出维一个"),
        ("both_biases", lambda g: g == weights + f + h,
         f"偏置多算了：{layer} 只有它自己输出维度那么多个偏置，"
         "另一层的偏置算在另一层里"),
        ("both_layers", lambda g: g in (2 * weights, 2 * weights + f + h),
         f"这像是把两层都算进了 {name}："
         f"{name} 只数 {layer} 这一层"),
        ("weights_twice", lambda g: g == 2 * weights + out_dim,
         "权重像是算了两遍：一层只有一个 输入维度 × 输出维度 的权重矩阵"),
        ("added_dims", lambda g: g in (f + h, f + h + (f if layer == "W1" else h), 2 * (f + h)),
         "权重个数 = 输入维度 × 输出维度（乘，不是加），"
         "再加上输出维度个偏置"),
        ("squared_dim", lambda g: g in (f * f, h * h, f * f + f, h * h + h, f * f + h, h * h + f),
         "权重个数 = 输入维度 × 输出维度："
         "一个是 hidden_size，一个是 d_ff，"
         "不是同一个维度自乘"),
        ("dimension_minus_one", lambda g: g in ((h - 1) * f, h * (f - 1), (h - 1) * f + out_dim,
                                                h * (f - 1) + out_dim),
         "某个维度像是少算了 1（比如写成了 hidden_size - 1）：权重个数 = 输入维度 × 输出维度，两个维度都用原数"),
        ("units", lambda g: _in_units(g, weights + out_dim),
         "像是以千或百万为单位写的：这里要写参数的个数本身（一个精确的整数）"),
    )


def _in_units(got: int, right: int) -> bool:
    """got 是 right 以千或百万为单位、取整之后的数。"""
    return got in {right // 1000, (right + 500) // 1000, right // 10**6, (right + 500_000) // 10**6}  # 整数运算：大数也不溢出


def _approximate(got: int, right: int) -> bool:
    """got 是个整数“约数”（末尾至少三个 0），和 right 相差不到 1%。"""
    return got % 1000 == 0 and 100 * abs(got - right) <= right  # 整数运算：大数也不溢出


def _off_by_one(got: int, right: int) -> bool:
    return abs(got - right) == 1


def _total_rows(w1: int, w2: int, h: int, f: int):
    return (
        ("total_no_bias", lambda t: t == 2 * h * f, "总数漏了偏置：两层的偏置都没有算进去"),
        ("total_one_bias", lambda t: t in (w1 + h * f, w2 + f * h),
         "总数只算了一层的偏置：W1 和 W2 的偏置都要算"),
        ("total_doubled", lambda t: t in (2 * w1, 2 * w2) and w1 != w2,
         "像是把一层的参数量乘了 2：两层的偏置个数不同，参数量并不一样多"),
        ("total_product", lambda t: t == w1 * w2, "两层的参数量是加起来，不是乘起来"),
        ("total_layernorm", lambda t: t == w1 + w2 + 2 * h,
         "多出来的正好是 2 × hidden_size 个：像是把 LayerNorm 的 γ 和 β 也算了进来。"
         "这一题只数 FFN 的两个线性层"),
        ("total_halved", lambda t: 2 * t in (w1 + w2, w1 + w2 - 1, w1 + w2 + 1),
         "这像是两层之和的一半（多除了一个 2）：总数就是两层直接相加"),
        ("total_off_by_one", lambda t: _off_by_one(t, w1 + w2),
         "和 w1_params + w2_params 只差 1：检查加法的式子，是不是多加或少加了 1"),
        ("total_approximate", lambda t: _approximate(t, w1 + w2),
         "很接近，但参数个数要一个不差：像是取了约数"),
        ("total_biases_twice", lambda t: t == w1 + w2 + h + f,
         "偏置像是又加了一遍：w1_params、w2_params 里已经含着各自的偏置，总数就是两者之和"),
        ("total_one_layer", lambda t: t in (w1, w2), "总数像是只算了一层：FFN 的总参数量是两层之和"),
        ("total_units", lambda t: _in_units(t, w1 + w2),
         "像是以千或百万为单位写的：这里要写参数的个数本身（一个精确的整数）"),
    )


# 已经收住一句的结尾字符（英文版只有 .?!：英文里以 “)” 结尾的，例如 “int(...)”，还要补句号）
SENTENCE_ENDS = "。？！）"


def _sentence(text: str) -> str:
    """一条提示收成一句：结尾没有句号、问号时补一个句号（r36b F8：英文里几条提示连起来时没有句号）。"""
    text = text.rstrip()
    return text if text and text[-1] in SENTENCE_ENDS else text + "。"


def _layer_problem(name: str, got: int, right: int, layer: str,
                   h: int, f: int) -> HomeworkWrong:
    """一层的参数个数不对时的提示：诊断表里的典型错误，
    否则差 1、约数，最后是平铺直叙的式子。"""
    for diagnosis, looks, hint in _layer_rows(layer, name, h, f):
        if looks(got):
            break
    else:
        if _off_by_one(got, right):
            diagnosis, hint = "off_by_one", (
                "和正确的个数只差 1：检查是不是多数或少数了一个偏置，"
                "或者某个维度写成了多 1、少 1 的数")
        elif _approximate(got, right):
            diagnosis, hint = "approximate", (
                "很接近，但参数个数要一个不差："
                "像是取了约数（比如写成了“约一百万”），"
                "请用整数的 * 和 + 精确地算")
        else:
            diagnosis, hint = "layer", (
                f"{layer} 的参数 = 权重（输入维度 × 输出维度）"
                "+ 偏置（输出维度）："
                f"先弄清 {layer} 的输入、输出各是几维，再按这条式子数一遍")
    return HomeworkWrong(f"检查 {name}：{got:,} 不对。{hint}", diagnosis)


def judge_ffn_params(w1_params, w2_params, total_params,
                     hidden_size=512, d_ff=2048) -> str:
    """作业 3：FFN 两个线性层的参数量，包含偏置（见第 5 节）。

    W1：hidden_size → d_ff，权重 d_ff × hidden_size 个，偏置 d_ff 个；
    W2：d_ff → hidden_size，权重 hidden_size × d_ff 个，偏置 hidden_size 个。
    计数接受 Python int、numpy 整数和 0 维整数张量。提示说出错在哪一类，
    但不说出任何一层的偏置个数或参数个数（那样只剩一步加法）。
    """
    require(w1_params=w1_params, w2_params=w2_params, total_params=total_params)
    h = count(hidden_size, "hidden_size", given=True)
    f = count(d_ff, "d_ff", given=True)
    problems: list[HomeworkWrong] = []   # 这一题里每个不对的数各一条，都说出来
    counts = {}
    for value, name in ((w1_params, "w1_params"), (w2_params, "w2_params"),
                        (total_params, "total_params")):
        try:
            counts[name] = count(value, name)
        except HomeworkWrong as err:
            problems.append(err)
    w1, w2, total = (counts.get(n)
                     for n in ("w1_params", "w2_params", "total_params"))
    right1, right2 = f * h + f, h * f + h
    if (w1, w2) == (right2, right1) and right1 != right2:
        raise HomeworkWrong(
            "检查 w1_params 和 w2_params：两个数像是对调了，或者两层的偏置都按输入维度算了"
            "（这两种错误得到同样的两个数）。"
            "W1 是把 hidden_size 升到 d_ff 的那一层，W2 是降回来的那一层；"
            "两层的权重一样多，偏置是每个输出维一个，所以不一样多", "swapped")
    for name, got, right, layer in (("w1_params", w1, right1, "W1"),
                                    ("w2_params", w2, right2, "W2")):
        if got is not None and got != right:
            problems.append(_layer_problem(name, got, right, layer, h, f))
    if None not in (w1, w2, total) and total != w1 + w2:
        for diagnosis, looks, hint in _total_rows(w1, w2, h, f):
            if looks(total):
                break
        else:
            diagnosis, hint = "total", "FFN 的总参数量就是两层之和"
        problems.append(HomeworkWrong(
            f"检查 total_params：{total:,} 不等于 w1_params + w2_params。{hint}",
            diagnosis))
    if problems:
        raise HomeworkWrong(" ".join(_sentence(str(p)) for p in problems),
                            problems[0].diagnosis)
    return passed(3, f"W1 {w1:,} + W2 {w2:,} = {total:,} 个参数，"
                     f"其中偏置 {h + f:,} 个")
