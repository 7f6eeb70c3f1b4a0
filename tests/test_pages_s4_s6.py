"""第 4–6 节、小结与参考资料页面的渲染检查（读 conftest 的 built_book）。

页面解析（只看 <article>）沿用 test_pages_s1_s3 的 `load` 与 `assert_figures`。
正文里 glue 进去的数字，在这里用同样的种子和包里的同一批函数重新算一遍再比较：
页面和包只要有一边变了，测试就会失败。
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

from minigpt.attention import causal_mask, scaled_dot_product_attention
from minigpt.data import make_toy_example
from minigpt.homework.names import listing
from minigpt.layers import (
    FeedForward,
    MultiHeadAttention,
    NaiveMultiHeadAttention,
    TransformerBlock,
    feedforward_num_params,
)
from support.pagekit import assert_figures, load, paragraphs, prose_text, self_check, soup

pytestmark = pytest.mark.book

SECTION_DOCS = ("s1_intuition", "s2_scaled_dot_product", "s3_causal_mask",
                "s4_multi_head", "s5_ffn", "s6_block")


def _n_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _seeded_x_and(module_factory):
    """页面里的顺序：种子 42 → x = randn(1, 5, 8) → 创建模块。"""
    torch.manual_seed(42)
    x = torch.randn(1, 5, 8)
    return x, module_factory()


def _links_to(page, doc: str) -> bool:
    return any(h.split("#")[0] == f"{doc}.html" for h in page.hrefs)


# ---------------------------------------------------------------- 第 4 节


def _paragraphs(page) -> list[str]:
    return paragraphs(page)


def test_s4_title_and_width_names_come_from_pytorch_itself(built_book):
    page = load(built_book, "s4_multi_head")
    assert page.title.endswith("多头注意力：几个头各读一份")
    for name in ("d_model", "embed_dim", "n_embd", "nn.MultiheadAttention", "nn.TransformerEncoderLayer"):
        assert name in page.text, name
    # 同一个宽度在 PyTorch 里有两个名字：构造时叫 d_model，层上没有这个属性，要按 embed_dim 读回来
    assert "MultiheadAttention(embed_dim=8) 的 .embed_dim： 8" in page.text
    assert "TransformerEncoderLayer(d_model=8) 有 .d_model 吗？ False" in page.text
    assert "它里面那个注意力的 .embed_dim： 8" in page.text
    assert soup(page.path).find(id="tab-s4-width-names") is None and "Hugging Face 上 BERT" not in page.text


def test_s4_head_widths_of_real_models_are_computed_and_cited(built_book):
    page = load(built_book, "s4_multi_head")
    # 代码按公开的 d_model 与头数算出每个头的宽度；T5 v1.1 small 的每头宽度另给，拼起来不等于 d_model
    for name, d_model, h, d_k in (("原论文 base", 512, 8, 64), ("GPT-2 small", 768, 12, 64),
                                  ("GPT-3 175B", 12288, 96, 128), ("T5 v1.1 small", 512, 6, 64)):
        row = (rf"{re.escape(name)}\s+d_model =\s+{d_model}\s+h =\s+{h}\s+d_k =\s+{d_k}"
               rf"\s+h·d_k =\s+{h * d_k}")
        assert re.search(row, page.text), name
    # 平均分是常见做法、nn.MultiheadAttention 只支持这一种，不是“几乎所有实现”
    prose = prose_text(page)
    assert "几乎所有实现" not in prose
    para = next(p for p in _paragraphs(page) if "T5 v1.1" in p and "nn.MultiheadAttention" in p)
    assert "最常见" in para and "只支持这一种" in para and "384" in page.pasted, para
    # “GPT-3 每层 96 个头、每个头 128 维”是 glue 进来的
    assert "96" in page.pasted and "128" in page.pasted, page.pasted
    # 给出这些尺寸的那一段引用了 GPT-2、GPT-3 的论文
    para = next(p for p in _paragraphs(page) if "GPT-3" in p and "GPT-2" in p)
    assert "Radford" in para and "Brown" in para, para


def test_s4_states_the_multihead_equation_with_heads_counted_from_0(built_book):
    """式 4.1 照本书（和作业 4）的数法从 0 数头：head_0 … head_{h-1}；正文说明论文从 1 数。"""
    page = load(built_book, "s4_multi_head")
    eq = next((m for m in page.math if "MultiHead" in m), "")
    assert "原论文从 1 数起" in page.text and "头 0" in page.text
    for part in (r"\operatorname{Concat}(\mathrm{head}_0, \dots, \mathrm{head}_{h-1})\, W_O",
                 r"\mathrm{head}_i &= \operatorname{Attention}(Q W_i^Q,\; K W_i^K,\; V W_i^V)"):
        assert part in eq, eq


def test_s4_single_head_weights_are_printed_from_the_computation(built_book):
    """单头的 3 × 3 权重表是代码当场算出、打印出来的（正文不再逐个念出 sat 那一行的数）。"""
    page = load(built_book, "s4_multi_head")
    ex = make_toy_example()
    _, w = scaled_dot_product_attention(ex.Q, ex.K, ex.V)
    for row in w.tolist():
        assert "[" + ", ".join(f"{value:.4f}" for value in row) + "]" in page.text, row


def test_s4_parameter_counts(built_book):
    page = load(built_book, "s4_multi_head")
    # 两个整体一样多；逐头写法按零件（每个头、W_O）拆开，合并写法按四个投影拆开，数都是 glue 的
    fused, naive = MultiHeadAttention(8, 2), NaiveMultiHeadAttention(8, 2)
    assert str(_n_params(fused)) in page.pasted and _n_params(fused) == _n_params(naive)
    per_head = [_n_params(h) for h in naive.heads]
    for n in (per_head[0], sum(per_head), _n_params(naive.W_O), _n_params(fused.W_Q)):
        assert str(n) in page.pasted, (n, page.pasted)
    assert sum(per_head) + _n_params(naive.W_O) == 4 * _n_params(fused.W_Q) == _n_params(fused)
    assert f"逐头写法：各头 {per_head}" in page.text
    for name in ("class AttentionHead", "class NaiveMultiHeadAttention", "def split_heads",
                 "def merge_heads", "class MultiHeadAttention", "from_fused"):
        assert name in page.text, name


def test_s4_naive_vs_fused_sentence_agrees_with_the_printed_difference(built_book):
    page = load(built_book, "s4_multi_head")
    printed = re.search(r"两种写法输出的最大绝对差：(\S+)\s+逐位相同： (True|False)", page.text)
    assert printed, "没有打印出两种写法的最大差"
    diff, identical = float(printed.group(1)), printed.group(2) == "True"
    # 打印的值就是种子 42 的 x、mha 在因果遮蔽下真正算出来的
    x, mha = _seeded_x_and(lambda: MultiHeadAttention(8, 2))
    naive = NaiveMultiHeadAttention.from_fused(mha)
    with torch.no_grad():
        a, b = mha(x, causal_mask(5)), naive(x, causal_mask(5))
    assert identical == torch.equal(a, b) and f"{(a - b).abs().max().item():.1e}" == printed.group(1)
    # 紧跟输出的那一段结论和打印的值一致
    para = next(p for p in _paragraphs(page) if "按行切开 W_Q.weight" in p)
    if diff == 0:
        assert identical and para.startswith("两种写法的输出逐位相同，最大差恰好是 0。"), para
        assert "舍入误差的量级" not in para and "不是逐位相同" not in para
    else:
        assert not identical and para.startswith(f"两种写法的输出不是逐位相同，最大差是 {printed.group(1)}"), para


def test_s4_transpose_contiguous_and_divisibility_are_shown(built_book):
    page = load(built_book, "s4_multi_head")
    # transpose(1, 2)：不挪头这一维，打分得到的是“头对头”的 2×2
    assert "不 transpose 就打分： torch.Size([1, 5, 2, 2])" in page.text
    assert "transpose 之后打分： torch.Size([1, 2, 5, 5])" in page.text
    # merge_heads 的 .contiguous()
    assert "transpose 之后还连续吗？ False" in page.text
    assert "直接 view： RuntimeError" in page.text
    assert "先 contiguous 再 view： torch.Size([1, 5, 8])" in page.text
    # d_model 不能被头数整除：包给出的中文错误原样打印
    try:
        MultiHeadAttention(d_model=8, num_heads=3)
    except ValueError as err:
        assert f"ValueError: {err}" in page.text
    else:
        raise AssertionError("MultiHeadAttention(8, 3) 没有报错")


def test_s4_each_head_scales_by_its_own_sqrt_dk_and_shares_the_mask(built_book):
    page = load(built_book, "s4_multi_head")
    assert "除以 √d_k = √4，和 mha 的权重一致？ True" in page.text
    assert "除以 √d_model = √8，和 mha 的权重一致？ False" in page.text
    assert "分数： [1, 2, 5, 5]  遮蔽矩阵： [5, 5]" in page.text
    assert "每个头的未来位置权重都是 0？ True" in page.text
    assert r"\sqrt{4} = 2" in " ".join(page.math)


def test_s4_shows_only_computed_head_weights_and_no_made_up_rows(built_book):
    page = load(built_book, "s4_multi_head")
    # 两个头给 sat 的两行权重由种子 42 的 mha 算出（下面核对），页面不再印编出来的示意权重
    doc = soup(page.path)
    assert doc.find("table", id="tab-s4-illustration") is None
    assert "荧光笔" not in page.text and "来源教程" not in page.text
    assert not re.search(r"0\.05\D+0\.70\D+0\.25", page.text) and "0.10 | 0.20 | 0.70" not in page.text
    assert_figures(page, {"fig-s4-schematic": "4.1", "fig-s4-heads": "4.2"})
    # 图旁边正文里的每个头的 sat 行，和种子 42 的 mha 算出来的一致
    _, mha = _seeded_x_and(lambda: MultiHeadAttention(8, 2))
    ex8 = make_toy_example(d_model=8, d_k=8)
    with torch.no_grad():
        _, w = mha(ex8.X.unsqueeze(0), return_weights=True)
    for h in range(2):
        for value in w[0, h, 2].tolist():
            assert f"{value:.2f}" in page.pasted, (h, value, page.pasted)


def test_s4_shape_flow_is_printed_by_code(built_book):
    page = load(built_book, "s4_multi_head")
    # 盯住一个数：Q 里位置 2 的分量 5，切头后是头 1 位置 2 的分量 1；头 1 的输出拼回后回到位置 2 的分量 5
    flow = re.search(
        r"\[1, 5, 8\]\s+Q = W_Q\(x\)\s+\[0, 2, 5\] = (\S+)\s+"
        r"\[1, 2, 5, 4\]\s+split_heads\(Q\)\s+\[0, 1, 2, 1\] = (\S+)\s+"
        r"\[1, 2, 5, 4\]\s+per_head\s+\[0, 1, 2, 1\] = (\S+)\s+"
        r"\[1, 5, 8\]\s+merge_heads\s+\[0, 2, 5\] = (\S+)\s+"
        r"\[1, 5, 8\]\s+W_O 之后，与 mha\(x, mask\) 相同？ True",
        page.text,
    )
    assert flow, "没有按顺序打印出数据流的每一步形状和盯住的那个数"
    x, mha = _seeded_x_and(lambda: MultiHeadAttention(8, 2))
    with torch.no_grad():
        q = mha.W_Q(x)
        qh, kh, vh = (mha.split_heads(t) for t in (q, mha.W_K(x), mha.W_V(x)))
        per_head, _ = scaled_dot_product_attention(qh, kh, vh, causal_mask(5))
    assert flow.group(1) == flow.group(2) == f"{q[0, 2, 5].item():.4f}"
    assert flow.group(3) == flow.group(4) == f"{per_head[0, 1, 2, 1].item():.4f}"
    assert "per head" not in page.text  # 输出标签用中文
    # 正文不再列数据流表，而说形状只在 split_heads 和 merge_heads 两处改变，由上面打印的代码印证
    assert "形状只在两处改变" in page.text and "穿过多头注意力时的形状" not in page.text
    # 正文里的形状是 glue 进来的，不是手抄的
    for shape in ("[1, 2, 5, 4]", "[1, 5, 8]"):
        assert shape in page.pasted, (shape, page.pasted)
    assert re.search(r"x 的形状： \[1, 5, 8\]\s+输出的形状： \[1, 5, 8\]", page.text)


def test_s4_ends_with_self_check(built_book):
    pairs = self_check(load(built_book, "s4_multi_head"))
    assert 2 <= len(pairs) <= 3, pairs
    assert "64" in pairs[0][1] and f"{math.sqrt(768):.1f}" in pairs[0][1], pairs[0]
    assert f"{_n_params(MultiHeadAttention(8, 1))} 个参数" in pairs[2][1], pairs[2]
    assert _n_params(MultiHeadAttention(8, 1)) == _n_params(MultiHeadAttention(8, 2))


# ---------------------------------------------------------------- 第 5 节


def test_s5_has_its_own_title_equation_and_one_token_detectors(built_book):
    page = load(built_book, "s5_ffn")
    assert page.title.endswith("前馈网络：注意力之后的两层小网络")
    assert any(r"\max(0" in m and "W_1" in m and "W_2" in m for m in page.math)
    assert "(5.1)" in page.text
    assert "[0.8, -1.2, 0.0, 2.5, -0.4, 1.0]" in page.text
    # 形状已由表 5.1 和式 (5.1) 给出，这个实验只数探测器，不再打印形状
    assert "形状： (1, 6)" not in page.text and "形状依次是" not in page.text
    # 用包里的 FeedForward（种子 0，d_ff 取默认的 4 倍）重算这个 token 的输出和发信号的探测器
    torch.manual_seed(0)
    ffn = FeedForward(6)
    token = torch.tensor([[0.8, -1.2, 0.0, 2.5, -0.4, 1.0]])
    with torch.no_grad():
        out = ffn(token)
        signal = torch.relu(ffn.up(token))
    fired = signal[0].nonzero().flatten().tolist()
    assert f"{out[0, 0].item():.4f}" in page.text
    assert f"发出信号的探测器（{len(fired)} 个）：{fired}" in page.text
    para = next(p for p in _paragraphs(page) if "个探测器里，这个 token 只让" in p)
    assert para.startswith(f"24 个探测器里，这个 token 只让 {len(fired)} 个发出了信号"), para
    assert f"其余 {24 - len(fired)} 个读数" in para, para


def test_s5_relu_and_gelu_values_are_printed(built_book):
    page = load(built_book, "s5_ffn")
    z = torch.tensor([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0])
    gelu = re.search(r"GELU: tensor\(\[([^\]]+)\]\)", page.text)
    assert gelu, "没有打印 GELU 的取值"
    assert [float(v) for v in gelu.group(1).split(",")] == [
        round(v, 4) for v in torch.nn.functional.gelu(z).tolist()]
    para = next(p for p in _paragraphs(page) if "GELU" in p and "ReLU" in p)
    assert "Radford" in para and "Hendrycks" in para, para


def test_s5_independence_sentence_agrees_with_the_printed_difference(built_book):
    page = load(built_book, "s5_ffn")
    printed = re.search(r"其余位置换前 vs 换后：allclose → (True|False)（最大差 (\S+)）", page.text)
    assert printed and printed.group(1) == "True", "没有打印出换掉一个位置前后、其余位置输出的比较"
    diff = float(printed.group(2))
    para = next(p for p in _paragraphs(page) if p.startswith("torch.allclose 的回答是"))
    if diff == 0:
        assert "逐位相同" in para and "并非逐位相同" not in para, para
    else:
        # 正文把差和输出本身的大小相比（相对差），并说它在 float32 的舍入范围内
        assert f"最大差 {printed.group(2)}" in para and "舍入" in para, para
        rel = re.search(r"差只是它的 (\S+?)。", para)
        assert rel and float(rel.group(1)) < 4 * 1.2e-7, para
    assert "相邻两个可表示数" not in para, para


def test_s5_param_counts_and_ffn_share_are_computed(built_book):
    page = load(built_book, "s5_ffn")
    small = feedforward_num_params(6, 24)
    assert page.pasted.count(str(small)) >= 2  # 按公式、数模块，两个 glue
    assert _n_params(FeedForward(6)) == small
    assert f"{feedforward_num_params(768, 3072):,}" in page.pasted
    attn, ffn = _n_params(MultiHeadAttention(768, 12)), _n_params(FeedForward(768))
    norms = 2 * _n_params(torch.nn.LayerNorm(768))
    share = ffn / (attn + ffn + norms)
    assert f"{share:.2%}" in page.pasted and f"{attn / (attn + ffn + norms):.2%}" in page.pasted
    assert re.search(rf"{ffn:,}\s+{share:.2%}\s+FFN", page.text)  # 打印的表和正文一致
    assert abs(share - 8 / 12) < 0.01  # 正文说它离 8/12 只差一点零头
    # 作业 3 的答案（512 / 2048）留给读者，不在正文里
    answer = feedforward_num_params(512, 2048)
    assert str(answer) not in page.text and f"{answer:,}" not in page.text
    assert _links_to(page, "homework")


def test_s5_motivates_the_ffn_with_what_attention_cannot_do(built_book):
    """注意力在定权重时就能表达“两个条件同时满足”（点积是双线性的）；权重一旦定下，输出对 Value 是线性的。
    FFN 补上的是每个位置上逐分量的非线性加工。两句话都对着 tests/test_torch_claims_s5_s6_appendix.py 里的计算。"""
    page = load(built_book, "s5_ffn")
    first = paragraphs(page)[0] + paragraphs(page)[1]   # 先介绍 FFN，再说为什么要它
    assert "同时成立" in first and "对 Value 就是线性的" in first and "非线性" in first, first
    assert "不是按比例掺合能表达的" not in page.text
    answer = self_check(page)[2][1]
    assert "注意力整体上不是线性的" in answer and "线性投影" in answer and "线性组合" not in answer, answer


def test_s5_ends_with_self_check(built_book):
    pairs = self_check(load(built_book, "s5_ffn"))
    assert 2 <= len(pairs) <= 3, pairs
    assert "4 倍" in pairs[1][1], pairs[1]
    assert feedforward_num_params(1536) / feedforward_num_params(768) == pytest.approx(4, rel=0.01)


def test_s4_s5_visible_code_glues_nothing_and_prose_says_因果遮蔽(built_book):
    for doc in ("s4_multi_head", "s5_ffn"):
        page = load(built_book, doc)
        assert "glue(" not in page.text and "myst_nb" not in page.text, doc
        prose = prose_text(page)
        assert "因果 mask" not in prose and "因果mask" not in prose, doc


# ---------------------------------------------------------------- 第 6 节


def test_s6_title_diagram_and_equations(built_book):
    page = load(built_book, "s6_block")
    assert page.title.endswith("Transformer Block：把注意力和 FFN 接起来")
    assert_figures(page, {"fig-s6-encdec": "6.1", "fig-s6-block": "6.2"})
    assert any("LayerNorm" in m and r"\mathrm{MHA}" in m and "mask" in m for m in page.math)
    assert any("LayerNorm" in m and r"\mathrm{FFN}(x')" in m for m in page.math)
    assert any(r"\gamma" in m and r"\beta" in m and r"\epsilon" in m for m in page.math)  # LayerNorm 的公式
    assert "class TransformerBlock" in page.text


def _s6_soup(built_book):
    return soup(built_book.html / "book" / "s6_block.html")


def _section(soup, label: str):
    """MyST 标签 (label)= 所在的小节：标签要么就是 <section> 的 id，要么是小节开头标题前的一个 <span>。"""
    target = soup.find(id=label)
    assert target is not None, f"页面上没有标签 {label}"
    section = target if target.name == "section" else target.find_parent("section")
    assert section is not None and section.find("h2", recursive=False), f"标签 {label} 不在一个小节里"
    return section


def _prose(section) -> str:
    return "\n".join(p.get_text() for p in section.find_all("p") if not p.find_parent("div", class_="cell"))


def test_s6_no_false_residual_claim_no_copyright_aside_and_figure1_is_cited(built_book):
    page = load(built_book, "s6_block")
    for gone in ("梯度也能沿这条路直接传回去", "残差给梯度留了一条直通路", "对照原论文的总图", "版权"):
        assert gone not in page.text, gone
    # 这条路只有一个名字：残差流，在第一次出现的地方定义（图里画的线叫“残差连接”，不另起“旁路”之类的名字）
    prose = prose_text(page)   # 正文（展示的源码里的 docstring 不算）
    for other in ("残差这条路", "主干上", "残差路径", "旁路"):
        assert other not in prose, other
    first = prose.index("残差流")
    assert re.search(r"叫作\**残差流", prose[first - 40:first + 3]), prose[first - 40:first + 10]
    soup = _s6_soup(built_book)
    paragraphs = [p for p in soup.select("article p") if "图 1" in p.get_text()]
    assert len(paragraphs) == 1
    assert any(a.get("href", "").startswith("references.html#") for a in paragraphs[0].find_all("a")), \
        "提到原论文图 1 的那一段没有通过参考文献引用论文"


def test_s6_layernorm_demo_matches_torch(built_book):
    soup = _s6_soup(built_book)
    section = _section(soup, "s6-layernorm")
    X = make_toy_example(("the", "cat", "sat"), d_model=4, d_k=4, seed=42).X
    mu = X.mean(-1, keepdim=True)
    var = X.var(-1, unbiased=False, keepdim=True)
    Y = torch.nn.functional.layer_norm(X, (4,))  # PyTorch 的参照实现，γ = 1，β = 0，eps = 1e-5
    assert torch.allclose((X - mu) / torch.sqrt(var + 1e-5), Y, atol=1e-6)
    outputs = "\n".join(o.get_text() for o in section.select("div.cell_output"))
    assert "按公式手算与 nn.LayerNorm 相同： True" in outputs
    prose = _prose(section)
    assert f"{X.mean(-1).abs().max().item():.4f}" in prose
    var_after = Y.var(-1, unbiased=False)
    assert (var_after < 1).all()  # 正文说：方差比 1 小一点点
    assert f"{var_after.min().item():.6f}" in prose
    assert "BatchNorm" in prose and "批次" in prose
    # 这一节只说 LayerNorm 算什么，并用节号指向后面量给你看的那一节
    why = _section(soup, "s6-why-ln").find("h2").get_text()
    number = re.search(r"第 (6\.\d) 节拿一摞 Block 量给你看", prose)
    assert number and number.group(1) in why, (number, why)


def test_s6_stack_without_layernorm_grows_and_with_it_stays_at_one(built_book):
    from minigpt.experiments import activation_scale

    soup = _s6_soup(built_book)
    section = _section(soup, "s6-why-ln")
    r = activation_scale(num_layers=32, seed=42)
    outputs = "\n".join(o.get_text() for o in section.select("div.cell_output"))
    for n in (0, 1, 2, 4, 8, 16, 24, 32):
        row = rf"^\s*{n} \| {r.rms_with_ln[n]:.4f}\s+\| {r.rms_without_ln[n]:.4f}$"
        assert re.search(row, outputs, re.M), (n, outputs)
    prose = _prose(section)
    ratio = r.rms_without_ln[32] / r.rms_without_ln[0]
    for value in (f"{r.rms_without_ln[0]:.4f}", f"{r.rms_without_ln[8]:.2f}", f"{r.rms_without_ln[16]:.2f}",
                  f"{r.rms_without_ln[32]:.2f}", f"{ratio:.1f}"):
        assert value in prose, (value, prose)
    dev = max(abs(v - 1) for v in r.rms_with_ln[1:])
    assert f"{dev:.1e}" in prose
    # 正文的几句结论：有 LayerNorm 时每层都回到 1；没有时并非每层都变大（变小的层数和层号是 glue 的），
    # 但总体往上走，32 层后是输入的好几倍
    assert "回到 1" in prose and dev < 1e-4
    no_ln = r.rms_without_ln
    down = [n for n in range(1, 33) if no_ln[n] < no_ln[n - 1]]
    assert down, "去掉 LayerNorm 后每层都变大了：正文“并不是每过一层都变大”不再成立"
    assert f"32 个 Block 里有 {len(down)} 个让它变小（第 {listing(down)} 个）" in prose, prose
    assert "一路往上走" not in prose and "一层比一层" not in prose
    assert "总体是往上走" in prose and no_ln[0] < no_ln[8] < no_ln[16] < no_ln[32]
    assert ratio > 5
    # 开头讲道理的那段：x + F(x) 可长可短，没有哪一步把尺度拉回固定值
    assert "也可能变短" in prose and "只要 $F(x)$ 不恰好" not in prose
    assert "def activation_scale" in section.get_text()  # 页面展示的就是包里的那份源码
    # 小节末尾回头看时引用的也是同一个倍数
    summary = _prose(_section(soup, "s6-summary"))
    assert f"{ratio:.1f} 倍" in summary, summary
    assert "一层比一层大" not in summary and "总体越摞越大" in summary


def test_s6_says_only_gpt1_is_post_ln_and_cites_karpathy_for_the_pre_ln_gpt(built_book):
    """图 6.2 是 Post-LN 的 Block：GPT 家族里只有第一代这样排，GPT-2/3 和 Karpathy 的 GPT 是 Pre-LN 加最后一个 LayerNorm。
    引用 Karpathy 的那句话必须说明这一点，参考资料页对这条引用的说明也一样。"""
    soup = _s6_soup(built_book)
    text = "\n".join(p.get_text() for p in soup.select("article p"))
    assert "GPT 只用右边那一摞" not in text and "这一摞 Block 就成了 GPT" not in text
    karpathy = [p for p in soup.select("article p") if "[Karpathy, 2023]" in p.get_text()]
    assert len(karpathy) == 1, karpathy
    k = karpathy[0].get_text()
    assert "Pre-LN" in k and "只有第一代" in k and "最后一个 Block 之后另加一个 LayerNorm" in k, k
    encdec = [p.get_text() for p in soup.select("article p") if "只用右边那一摞" in p.get_text()]
    assert len(encdec) == 1 and "只有第一代 GPT" in encdec[0], encdec
    refs = (Path(__file__).resolve().parent.parent / "book" / "references.md").read_text(encoding="utf-8")
    entry = next(line for line in refs.splitlines() if "`karpathy2023gpt`" in line)
    assert "Pre-LN" in entry and "依据的是它" not in entry, entry


def test_s6_encoder_layer_sentence_names_every_argument_the_test_sets():
    """第 6 节说 nn.TransformerEncoderLayer 要设哪些参数才和本页的 Block 相同；
    tests/test_layers.py 里做比较的那次创建用的正是这些参数：两边必须一致。"""
    import ast

    here = Path(__file__).resolve().parent
    tree = ast.parse((here / "test_layers.py").read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "attr", None) == "TransformerEncoderLayer"]
    assert len(calls) == 1
    kwargs = {k.arg for k in calls[0].keywords} | {"dim_feedforward"}   # d_ff 是第三个位置参数
    assert len(calls[0].args) == 3
    page = (here.parent / "book" / "s6_block.md").read_text(encoding="utf-8")
    # 引言、逐个参数的列表和结论句：从“PyTorch 自带的”到“构建本书时的测试核对过”
    start = page.index("PyTorch 自带的 `nn.TransformerEncoderLayer`")
    sentence = page[start:page.index("构建本书时的测试核对过", start)]
    for name in kwargs:
        assert f"`{name}`" in sentence or f"`{name}=" in sentence, (name, sentence)
    assert "2048" in sentence and "0.1" in sentence
    # 比较时遮蔽先换成 nn 的约定（True = 不许看）：正文也得这样说
    assert "to_nn_mha_mask(mask)" in (here / "test_layers.py").read_text(encoding="utf-8")
    assert "`to_nn_mha_mask`" in sentence and "`src_mask`" in sentence, sentence


def test_s6_residual_path_table_and_sentences_agree_with_the_computation(built_book):
    from minigpt.experiments import residual_path_gradient

    soup = _s6_soup(built_book)
    section = _section(soup, "s6-residual")
    depths = [1, 2, 4, 8, 16, 32, 64]
    post = [residual_path_gradient(n, norm_first=False) for n in depths]
    pre = [residual_path_gradient(n, norm_first=True) for n in depths]
    assert all(p == 1.0 for p in pre)          # 正文：Pre-LN 一列在每个深度都恰好是 1
    assert post[-1] < 0.1 < post[0]             # 正文：Post-LN 层数一多就越来越小
    outputs = "\n".join(o.get_text() for o in section.select("div.cell_output"))
    for n, a in zip(depths, post):
        assert re.search(rf"^\s*{n} \| {a:.4f}\s+\| 1\.0000$", outputs, re.M), (n, a)
    prose = _prose(section)
    assert f"{post[0]:.4f}" in prose and f"{post[-1]:.4f}" in prose
    if "中间有起伏" in prose:  # 正文说 Post-LN 一列不是一路单调往下走
        assert any(b > a for a, b in zip(post, post[1:])), post
    # LLaMA 是 Pre-LN 加 RMSNorm，不是二选一；三种排法/归一化都链接到术语表
    assert "Pre-LN 与 RMSNorm 不是二选一" in prose
    hrefs = [a.get("href", "") for a in section.find_all("a")]
    for term in ("Pre-LN", "RMSNorm"):
        assert any(h.endswith(f"glossary.html#term-{term}") for h in hrefs), term


def test_s6_mask_changes_exactly_the_positions_it_hides_columns_from(built_book):
    page = load(built_book, "s6_block")
    x, block = _seeded_x_and(lambda: TransformerBlock(8, 2))
    with torch.no_grad():
        a, b = block(x), block(x, causal_mask(5))
    gap = (a - b).abs().amax(dim=-1)[0]
    for pos in range(5):  # 打印的每一行：挡住的列数和这个位置的最大差
        assert f"位置 {pos}：挡住 {4 - pos} 列，输出最大差 {gap[pos].item():.4f}" in page.text
    assert (gap[:4] > 1e-6).all() and gap[4] < 1e-6  # 正文：被挡住列的位置都变了，最后一个位置不变
    para = next(p for p in _paragraphs(page) if "个位置的输出变了" in p)
    assert para.startswith("有 4 个位置的输出变了"), para
    # 最后一个位置的差：恰好为 0 时正文就说“恰好是 0”（glue 跟着算出来的值走）
    assert gap[4].item() != 0 or "输出的最大差恰好是 0" in para, para
    assert "torch.Size([1, 5, 8])" in page.text
    assert len(re.findall(r"第 \d 层之后：\[1, 5, 8\]", page.text)) == 4  # 摞 4 层，形状不变


def test_s6_ends_with_three_self_check_questions_and_collapsed_answers(built_book):
    soup = _s6_soup(built_book)
    def heading(sec):  # “6.7.想一想#” → “想一想”
        h2 = sec.find("h2", recursive=False)
        return re.sub(r"^[\d.]+", "", h2.get_text(strip=True)).rstrip("#¶").strip() if h2 else None

    sections = [sec for sec in soup.select("article section") if heading(sec) == "想一想"]
    assert len(sections) == 1
    section = sections[0]
    following = section.find_next_sibling("section")
    assert following is None or heading(following) == "练习", "想一想之后只许跟着练习"
    answers = section.select("div.admonition.dropdown")
    assert len(answers) == 3
    assert all(a.select_one(".admonition-title").get_text(strip=True) == "答案" for a in answers)
    with torch.no_grad():
        ln = torch.nn.LayerNorm(4)(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert "(" + ", ".join(f"{v:.4f}" for v in ln.tolist()) + ")" in answers[0].get_text()


# ---------------------------------------------------------------- 小结与参考资料


def test_summary_links_every_section(built_book):
    page = load(built_book, "summary")
    assert page.title.endswith("全书回顾")
    for doc in (*SECTION_DOCS, "s7_trained_heads"):
        assert _links_to(page, doc), f"小结没有链接到 {doc}"
    # 嵌入层和输出层：第 7 节的小 GPT 搭过，不能说“不在本书里”
    assert "这两头不在本书里" not in page.text
    assert "-\\infty" in " ".join(page.math)


def test_references_list_and_are_cited_from_the_pages(built_book):
    page = load(built_book, "references")
    assert page.title.endswith("参考资料")
    for title in ("Attention is all you need", "The annotated transformer", "Let's build GPT",
                  "Neural machine translation by jointly learning to align and translate",
                  "Long short-term memory-networks for machine reading", "BERT"):
        assert title.lower() in page.text.lower(), title
    for url in ("arxiv.org/abs/1706.03762", "nlp.seas.harvard.edu", "youtube.com"):
        assert any(url in h for h in page.hrefs), url
    # The Annotated Transformer：2018 年原版只有 Rush 一位作者；2022 年版（v2022）的署名是 Huang 等五人，
    # 原版作者 Rush 不在其列（出版物自己的署名行："v2022: Austin Huang, …, and Stella Biderman. Original: Sasha Rush."）
    entries = {c.get_text(" ", strip=True) for c in soup(page.path).select("article div.citation")}
    original = [e for e in entries if "2018/04/03/attention.html" in e]
    v2022 = [e for e in entries if "nlp.seas.harvard.edu/annotated-transformer/" in e]
    assert len(original) == 1 and len(v2022) == 1, entries
    assert "Alexander Rush" in original[0] and "Huang" not in original[0]
    for name in ("Austin Huang", "Suraj Subramanian", "Jonathan Sum", "Khalid Almubarak", "Stella Biderman"):
        assert name in v2022[0], name
    assert "Rush" not in v2022[0].split("URL")[0], v2022[0]
    prose = prose_text(page)
    assert "与 Rush 一起" not in prose and "with Sasha Rush" not in prose
    # 每条都给出 URL 或 DOI；唯一的例外是本书所依据的中文教程：它没有已知的网址和作者，条目里明说“作者不详”
    assert all(re.search(r"URL: https://|doi", e) or "作者不详" in e for e in entries), "有参考文献没有给出 URL 或 DOI"
    # 来源教程的书名照原样（Transformer Block 大写），条目里不混用中文句号和英文句点
    source = [e for e in entries if "作者不详" in e]
    assert len(source) == 1 and "Attention 机制与 Transformer Block" in source[0], source
    assert not [e for e in entries if "。" in e], [e for e in entries if "。" in e]
    cited = set()
    for doc in ("s4_multi_head", "s5_ffn", "s6_block"):
        cited |= {h.split("#")[0] for h in load(built_book, doc).hrefs if "#" in h}
    assert "references.html" in cited, "第 4–6 节没有一处引用指向参考资料页"


def test_references_page_names_every_chapter_page_that_cites_an_entry():
    """参考资料页开头说“说明每一份在哪一页、派了什么用场”：第 1–6 节和附录引用的每一条，
    它在参考资料页上的那一条说明都要提到这一页（{doc} 链接，附录也可以写“附录”）。"""
    book = Path(__file__).resolve().parent.parent / "book"
    lines, heading = [], ""
    for line in (book / "references.md").read_text(encoding="utf-8").splitlines():
        heading = line if line.startswith("## ") else heading
        lines.append(f"{heading}\n{line}")   # 每条说明连同它所在的小标题（如“……（附录）”）
    cite = re.compile(r"\{cite(?::\w+)?\}`([^`]+)`")
    missing = []
    for doc in (*SECTION_DOCS, "appendix_rnn"):
        text = (book / f"{doc}.md").read_text(encoding="utf-8")
        keys = {k.strip() for m in cite.finditer(text) for k in m.group(1).split(",")}
        for key in sorted(keys):
            entry = [line for line in lines if f"`{key}`" in line or f"`{key}," in line
                     or f",{key}`" in line]
            assert entry, f"{key}（{doc} 引用）在参考资料页的说明里没有出现"
            named = any(f"<{doc}>" in line or (doc == "appendix_rnn" and "附录" in line)
                        for line in entry)
            if not named:
                missing.append(f"{key} ← {doc}")
    assert not missing, f"参考资料页没说这些条目在哪一页用到：{missing}"
