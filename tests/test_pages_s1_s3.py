"""首页、导读、第 1–3 节与小结页面的渲染检查（读 conftest 的 built_book）。

只看页面正文（<article> 里的内容），不看侧边栏：侧边栏对每一页都列出全部链接。
“正文里的数字”指 glue 填进去的 <span class="pasted-text">，代码输出另算。
"""

from __future__ import annotations

import math
import re

import pytest

import torch

from support import golden as G
from support.book import REPO, toc_docnames
from minigpt.data import make_toy_example
from support.pagekit import (
    Page, articles, assert_figures, fragment, load, load_path, paragraphs, pasted_after, plain, prose_text,
    self_check, soup, table_rows, tables, text_nodes,
)
from support.pagekit import section as pagekit_section

pytestmark = pytest.mark.book


# ---------------------------------------------------------------- 分节读取


def section(built_book, name: str, heading: str) -> Page:
    """页面里标题文字以 heading 结尾（不计编号）的那一节（含其子节），读成 Page（pagekit.section）。"""
    return pagekit_section(built_book.html / "book" / f"{name}.html", heading)


def assert_self_check(built_book, name: str):
    """页面以“想一想”收尾：2–3 道题，每道题后面紧跟一个折叠的“答案”块（见 pagekit.self_check）。"""
    pairs = self_check(load(built_book, name))
    assert 2 <= len(pairs) <= 3, f"{name}：想一想里有 {len(pairs)} 道题"
    assert all(q and a for q, a in pairs), pairs


# ---------------------------------------------------------------- 首页


def _pinned_torch() -> str:
    req = (REPO / "requirements.txt").read_text(encoding="utf-8")
    return re.search(r"^torch==([\d.]+)", req, re.M).group(1)


def test_index_says_which_numbers_are_computed_and_which_are_illustrative(built_book):
    part = section(built_book, "index", "哪些数字是算出来的")
    items = [c for c in re.split(r"(?=算出来的。|手写的示意。)", part.text) if c.strip()]
    computed = next(c for c in items if c.startswith("算出来的。"))
    illustrative = next(c for c in items if c.startswith("手写的示意。"))
    for kind in ("打印", "图", "正文"):
        assert kind in computed, kind
    assert "“示意”" in illustrative and "第 1 节" in illustrative
    assert "来源教程" in illustrative, "示意数字出自来源教程，首页要说清"


def test_index_limits_reproducibility_to_the_pinned_pytorch_and_platform(built_book):
    import torch

    version = _pinned_torch()
    assert torch.__version__.split("+")[0] == version, "测试环境的 PyTorch 不是 requirements.txt 钉住的版本"
    part = section(built_book, "index", "能不能得到一样的数字")
    assert f"PyTorch（{version} 的 CPU 版本）" in part.text or f"{version} 的 CPU 版本" in part.text
    assert "平台" in part.text and "不保证" in part.text
    assert "pytorch.org/docs/stable/notes/randomness.html" in " ".join(part.hrefs)
    # 构建环境由代码读出、glue 进正文：版本就是钉住的版本，并写出平台和计算设备
    assert re.search(rf"PyTorch {re.escape(version)}\+cpu|PyTorch {re.escape(version)}\b", part.text)
    assert re.search(r"设备\s+cpu\b", part.text), "没有写出计算设备"
    assert any(v.startswith(version) for v in part.pasted), part.pasted
    import platform
    assert f"{platform.system()} {platform.machine()}" in part.pasted, part.pasted


def test_index_front_page_shows_no_code_cell(built_book):
    """首页是书的封面和说明：环境信息写在正文里（glue），页面上没有看得见的代码单元。"""
    doc = soup(built_book.html / "book" / "index.html")
    cells = articles(doc)[0].select("div.cell")
    assert not cells, f"首页上有 {len(cells)} 个看得见的代码单元"


# ---------------------------------------------------------------- 导读


def test_intro_title_and_links_to_every_section_it_promises(built_book):
    page = load(built_book, "intro")
    assert page.title == "导读"
    route = section(built_book, "intro", "本书的路线")
    for doc in ("s1_intuition", "s2_scaled_dot_product", "s3_causal_mask", "s4_multi_head",
                "s5_ffn", "s6_block"):
        assert any(h.split("#")[0] == f"{doc}.html" for h in route.hrefs), f"路线里没有链接到 {doc}"
    place = section(built_book, "intro", "本书在模型里的位置")
    # 倒着读模型：输出层（logits）、一摞 Transformer Block、输入层（含位置编码），本书只写中间那一摞
    assert place.text.index("logits") < place.text.index("Transformer Block") < place.text.index("positional encoding")
    assert "本书只写中间那一摞" in place.text
    first = section(built_book, "intro", "各算各的向量")
    # 多义词 bank：嵌入表里只有一行，哪个意思成立要看邻居 river 还是 account
    assert "bank" in first.text and "river" in first.text and "account" in first.text
    # 注意力早于 Transformer：Bahdanau 等（2015）的注意力、Transformer 之前的自注意力（Cheng 等，2016），
    # Vaswani 等（2017）是不用循环、不用卷积、位置之间只靠注意力传信息的模型，以及缩放点积注意力；三篇都引用到参考资料页
    credit = next(p for p in paragraphs(first) if "不是 Transformer 发明的" in p)
    for who in ("Bahdanau", "Cheng", "Vaswani"):
        assert who in credit, who
    assert "缩放点积注意力" in credit and "自注意力" in credit
    assert "卷积" in credit and "只用注意力搭成" not in credit  # 模型里还有 FFN、LayerNorm 等，不是只有注意力
    cited = {h for h in first.hrefs if h.startswith("references.html#")}
    assert len(cited) >= 3, cited  # 三篇各链接到参考资料页上自己的条目
    # 导读不编号：它的表没有“表 1”这种读起来像第 1 节的编号
    assert not load(built_book, "intro").captions, load(built_book, "intro").captions
    assert "表 1" not in load(built_book, "intro").text
    assert "“示意”" in route.text, "导读应说明手写的示意数字"


# ---------------------------------------------------------------- 第 1 节


def test_s1_shows_vocab_ids_and_the_seeded_X(built_book):
    page = load(built_book, "s1_intuition")
    assert page.title.endswith("注意力在做什么")
    assert "[0, 2, 4]" in page.text
    assert "[0, 2, 4, 6, 0, 9]" in page.text  # sofa → [UNK]
    assert "[PAD]" in page.text and "[UNK]" in page.text
    for value in (G.S1_X_4F[0][0], G.S1_X_4F[0][1], G.S1_X_4F[0][3], G.S1_X_4F[2][2]):
        assert value in page.text, value
    assert G.S1_X_4F[0][0] in page.pasted  # 正文引用 X[0, 0] 用的是 glue
    assert any("W_Q" in m for m in page.math)


def test_s1_illustrative_row_has_full_header_and_is_marked(built_book):
    table = articles(soup(built_book.html / "book" / "s1_intuition.html"))[0].find("table")
    note = (table.find_parent("div") or table).find_next_sibling("div")
    assert note is not None and {"admonition", "note"} <= set(note.get("class", [])), \
        "第 1 节开头的示意表后面没有紧跟说明"
    headers, cells = table_rows(table)[:2]
    assert len(headers) == 7 and all(headers), f"表头有空格子：{headers}"
    assert cells[0] == "sat" and abs(sum(float(c) for c in cells[1:]) - 1) < 1e-9, cells
    assert "示意" in note.get_text()
    # 这一行数是来源教程编的，不是本书编的：说明里写明出处并链接到参考资料页
    assert "来源教程" in note.get_text() and "我们" not in note.get_text(), note.get_text()
    assert note.find("a", href=re.compile(r"^references\.html")), note


def test_s1_says_nn_linear_stores_the_transpose_and_shows_it(built_book):
    part = section(built_book, "s1_intuition", "三个投影")
    assert "nn.Linear" in part.text and "W_Q^\\top" in " ".join(part.math)
    check = section(built_book, "s1_intuition", "验证 Q、K、V")
    assert re.search(r"Q == X @ weight\.T:\s*True", check.text)
    assert re.search(r"Q == X @ weight:\s*False", check.text)


def test_s1_three_trues_sentence_holds_for_the_printed_line(built_book):
    """正文说“两两不同”那一行打印了三个 True：页面上的输出确实如此，三个矩阵也确实两两不同。"""
    ex = make_toy_example(("the", "cat", "sat"), d_model=4, d_k=4, seed=42)
    assert not torch.equal(ex.Q, ex.K) and not torch.equal(ex.Q, ex.V) and not torch.equal(ex.K, ex.V)
    check = section(built_book, "s1_intuition", "验证 Q、K、V")
    assert re.search(r"Q、K、V 两两不同： True True True", check.text)
    assert "打印了三个 `True`" in check.html or "打印了三个 True" in check.text


def test_s2_sentences_about_the_highest_score_and_weight_hold(built_book):
    """第 2 节两句关于打印结果的话：the 那一行里分数最高的是最后一个（sat）；softmax 之后 the 那一行份额最大的
    也是 sat，正对着最高的那个分数。"""
    torch_, ex, w = _toy()
    scores = ex.Q @ ex.K.T
    assert int(scores[0].argmax()) == 2 and int(w[0].argmax()) == 2
    part = section(built_book, "s2_scaled_dot_product", "第一步：给每一对 token 打分")
    assert "最后一个最高" in part.text
    step3 = section(built_book, "s2_scaled_dot_product", "第三步：softmax 归一化")
    assert "份额最大的是 sat" in step3.text and "最高的分数" in step3.text


def test_s1_explains_why_key_and_value_are_separate(built_book):
    part = section(built_book, "s1_intuition", "为什么 Key 和 Value 要分开")
    assert "it" in part.text and "animal" in part.text
    assert "匹配" in part.text and "投影" in part.text


def test_s1_data_flow_figure(built_book):
    page = load(built_book, "s1_intuition")
    assert_figures(page, {"fig-s1-qkv-flow": "1.1"})
    fig = soup(page.path).find("figure", id="fig-s1-qkv-flow")
    alt = fig.find("img")["alt"]
    for word in ("W_Q", "W_K", "W_V", "softmax", "缩放后的分数", "注意力权重"):
        assert word in alt, word
    assert "注意力分数" not in alt  # 图里那一格是除以 √d_k 之后的分数，术语“注意力分数”专指未缩放的 QKᵀ
    caption = fig.find("figcaption").get_text()
    assert "Query" in caption and "Value" in caption


def test_s1_question_on_the_two_thes_holds_with_and_without_the_causal_mask(built_book):
    from minigpt.attention import causal_mask, scaled_dot_product_attention

    ex = make_toy_example(("the", "cat", "sat", "on", "the", "mat"), d_model=4, d_k=4, seed=42)
    _, full = scaled_dot_product_attention(ex.Q, ex.K, ex.V)
    _, causal = scaled_dot_product_attention(ex.Q, ex.K, ex.V, causal_mask(6))
    # 不遮蔽：每一行给位置 0 与位置 4 的 the 同样的权重；遮蔽：位置 0–3 看不到第二个 the
    assert torch.allclose(full[:, 0], full[:, 4])
    assert (causal[:4, 4] == 0).all() and (causal[:4, 0] > 0).all()
    assert torch.allclose(causal[4:, 0], causal[4:, 4])
    answer = self_check(load(built_book, "s1_intuition"))[0][1]
    for value in (f"{full[2, 0]:.3f}", f"{causal[2, 0]:.3f}", f"{causal[5, 0]:.3f}"):
        assert value in answer, (value, answer)
    assert "遮蔽" in answer and "位置编码" in answer
    # 后一问要用到第 3 节才讲的因果遮蔽：题目自己说明这一点，并链接到第 3 节
    question = self_check(load(built_book, "s1_intuition"))[0][0]
    assert "第 3 节才讲" in question and "先答前一问" in question, question


def test_s1_ends_with_self_check(built_book):
    assert_self_check(built_book, "s1_intuition")


# ---------------------------------------------------------------- 第 2 节


def test_s2_regenerated_numbers_and_glued_scale(built_book):
    page = load(built_book, "s2_scaled_dot_product")
    assert page.title.endswith("缩放点积注意力")
    output_row0 = [f"{v:.4f}" for v in G.S2_OUTPUT_ROW0_FULL[:2]]
    for value in (*G.S2_SCORES_4F[0], *G.S2_WEIGHTS_4F[0], *output_row0):
        assert value in page.text, value
    # 缩放前后之比（1/√d_k）和除数 √d_k 都是 glue 进来的，比值就在说“九个比值全是”的那句话里
    d_k = make_toy_example().Q.shape[-1]
    assert pasted_after(page, "九个比值全是") == [f"{1 / math.sqrt(d_k):.2f}"], page.pasted
    assert f"{math.sqrt(d_k):.2f}" in page.pasted
    assert "每一行的次序都没变： True" in page.text
    # 第 4 节会引用的 sat 行
    for value in G.S2_WEIGHTS_4F[2]:
        assert value in page.pasted, value
    assert "雅可比" not in page.text


def test_s2_introduces_its_name_once_with_the_english_name(built_book):
    page = load(built_book, "s2_scaled_dot_product")
    assert page.text.count("scaled dot-product attention") == 1
    i = page.text.index("scaled dot-product attention")
    assert page.text[:i].rstrip("（ ").endswith("缩放点积注意力")


def _toy():
    import torch

    from minigpt import attention
    from minigpt.data import make_toy_example

    ex = make_toy_example(("the", "cat", "sat"), d_model=4, d_k=4, seed=42)
    w = attention.softmax_weights(attention.scale_scores(attention.attention_scores(ex.Q, ex.K), 4))
    return torch, ex, w


def test_s2_length_paragraph_is_true_for_the_printed_row(built_book):
    torch, ex, _ = _toy()
    q = ex.Q[0]
    cos = [(q @ ex.K[j] / (q.norm() * ex.K[j].norm())).item() for j in range(3)]
    dot = [(q @ ex.K[j]).item() for j in range(3)]
    # 正文的结论：cat 的方向比 the 更不一致，分数却更高，因为 cat 的 Key 更短
    assert cos[1] < cos[0] and dot[1] > dot[0] and ex.K[1].norm() < ex.K[0].norm()
    part = section(built_book, "s2_scaled_dot_product", "点积既看方向，也看长度")
    # 正文里粘贴的负数和代码打印的一样用连字符减号“-”（全书统一，见下面的 OTHER_MINUS）
    for value in (f"{cos[1]:+.4f}", f"{cos[0]:+.4f}", f"{ex.K[1].norm():.4f}", f"{ex.K[0].norm():.4f}"):
        assert value in part.pasted, (value, part.pasted)
    assert any(r"\cos\theta" in m and r"\lVert" in m for m in part.math)


def test_s2_scales_the_toy_example_before_the_d_k_64_digression(built_book):
    page = load(built_book, "s2_scaled_dot_product")
    toy = page.text.index("每一行的次序都没变： True")
    digression = page.text.index("除数从方差里来")
    softmax_step = page.text.index("第三步：softmax")
    assert toy < digression < softmax_step


def test_s2_gives_the_softmax_formula_and_minus_infinity(built_book):
    part = section(built_book, "s2_scaled_dot_product", "第三步：softmax 归一化")
    assert any("e^{z_j}" in m and r"\sum" in m for m in part.math)
    assert any(r"e^{-\infty} = 0" in m for m in part.math)
    assert re.search(r"照式子算的 the 这一行： tensor\(\[0\.2454, 0\.2811, 0\.4735\]\)", part.text)
    assert "与函数的第 0 行相同： True" in part.text


def test_s2_step4_shows_each_output_row_is_a_convex_combination_of_the_rows_of_v(built_book):
    torch, ex, w = _toy()
    out = w @ ex.V
    # 正文的结论：权重非负、每行和为 1，所以输出的每个分量都夹在 V 同一列的最小值与最大值之间
    assert (w >= 0).all() and torch.allclose(w.sum(-1), torch.ones(3))
    low, high = ex.V.min(0).values, ex.V.max(0).values
    assert ((out >= low) & (out <= high)).all()
    # 权重只由 Q、K 决定：W_V 乘以 2，权重不变、输出翻倍（想一想第 3 题）
    w2 = torch.softmax(ex.Q @ ex.K.T / 2, -1)
    assert torch.allclose(w2, w) and torch.allclose(w2 @ (2 * ex.V), 2 * out)
    part = section(built_book, "s2_scaled_dot_product", "第四步：按份额取回内容")
    assert re.search(r"与函数结果相同：\s*True", part.text)
    assert re.search(r"输出的每个分量都在这两者之间：\s*True", part.text)
    # 固定 V、只换权重：[1, 0, 0] 给出 V[0]，平均分配给出 V 三行的平均，页面把两者并排打印
    printed = re.sub(r"\s+", "", part.text)  # torch 按列宽补空格，比较时不计空白

    def row(t):
        return "[" + ",".join(f"{v:.4f}" for v in t.tolist()) + "]"
    assert printed.count(row(ex.V[0])) >= 2, row(ex.V[0])
    assert printed.count(row(ex.V.mean(0))) >= 2, row(ex.V.mean(0))
    assert "距离" not in part.text or "不可靠" in part.text  # 不再拿 X 与 V 之间的距离当证据
    assert any(r"A_{ij}" in m and "V_j" in m for m in part.math)


def test_s2_formulas_keep_the_square_root(built_book):
    page = load(built_book, "s2_scaled_dot_product")
    attention = [m for m in page.math if "Attention" in m and "softmax" in m]
    assert len(attention) == 1, "找不到合并后的注意力公式"
    assert r"\sqrt{d_k}" in attention[0]
    assert any(r"\operatorname{Var}" in m and "= d_k" in m for m in page.math)
    # 尺度的例子用页面自己的实验范围：d_k = 256 时标准差 16，分数差一个标准差，权重之比 e^16（glue）
    assert r"e^{16}" in " ".join(page.math) and f"{math.exp(16):,.0f}" in page.pasted
    # 合并后的公式有编号，正文引用了这个编号
    number = re.search(r"\((2\.\d+)\)", attention[0]).group(1)
    assert "#equation-s2-attention" in page.hrefs
    assert page.text.count(f"({number})") >= 2


def test_s2_figures(built_book):
    page = load(built_book, "s2_scaled_dot_product")
    assert_figures(page, {"fig-s2-variance": "2.1", "fig-s2-saturation": "2.2", "fig-s2-heatmap": "2.3"})
    # 方差与 d_k 成正比（线性），不是“等比”（几何）增长：图注的说法要对打印出的方差成立
    caption = soup(page.path).find("figure", id="fig-s2-variance").find("figcaption").get_text()
    assert "成正比" in caption and "等比" not in caption, caption
    from minigpt.experiments import dot_product_stats
    stats = dot_product_stats((4, 16, 64, 256), n_samples=20000, seed=0)
    assert all(abs(s.var_unscaled / s.d_k - 1) < 0.05 for s in stats), stats


def test_s2_ends_with_self_check(built_book):
    assert_self_check(built_book, "s2_scaled_dot_product")


# ---------------------------------------------------------------- 小结


def test_summary_follows_one_token_through_the_block(built_book):
    page = load(built_book, "summary")
    assert page.title.endswith("全书回顾")
    walk = section(built_book, "summary", "在一个 Block 里经历了什么")
    # 一个 Block 里的顺序：注意力（多头）→ 残差与 LayerNorm → FFN（之后再残差与 LayerNorm）
    order = ["Query", "注意力分数", "注意力权重", "因果遮蔽", "多头注意力", "残差连接", "LayerNorm", "前馈网络"]
    positions = [walk.text.index(term) for term in order]
    assert positions == sorted(positions), "小结里一个 token 的路程顺序不对"
    # 每一步只提到已经读过的步骤：第 k 步里不会出现“第 j 步”（j > k）
    items = fragment(walk).select("ol > li")
    assert len(items) == 7, len(items)
    for k, li in enumerate(items, start=1):
        later = [int(j) for j in re.findall(r"第 (\d) [步条]", li.get_text()) if int(j) > k]
        assert not later, f"第 {k} 步提前引用了第 {later} 步"
    assert "因果 mask" not in page.text and "Scaled Dot-Product" not in page.text


# ---------------------------------------------------------------- 第 3 节


def _tables(page) -> list[tuple[list[str], list[list[str]]]]:
    """正文里每张表的（表头单元格, 各行单元格），都是去掉标签后的文字。"""
    return tables(page)


def _paragraph_with(page, needle: str) -> str:
    """正文里含 needle 的那一个 <p> 段落（去掉标签）；必须恰好一个。"""
    paras = paragraphs(page)
    found = [p for p in paras if needle in p]
    assert len(found) == 1, (needle, found)
    return found[0]


def test_s3_illustrative_rows_are_computed_not_copied(built_book):
    page = load(built_book, "s3_causal_mask")
    assert page.title.endswith("因果遮蔽：只许往回看")
    # 遮蔽后的示意权重由代码打印；正文只引用 cat 给 sat 的那一格（glue）
    assert re.search(r"cat:\s+0\.45\s+0\.55\s+0\.00", page.text), "cat 那一行的权重没有打印出来"
    # 正文引用的那一格用 :g 印出：恰好是 0，紧接着一句说“这个 0 不是近似值”，不印成四舍五入似的 0.00
    assert "0" in page.pasted and "0.00" not in page.pasted
    # 打印的每个权重都是两位小数（“保留两位小数”说的是真的：1.00、0.00，不是 1.0、0.0）
    assert re.search(r"the:\s+1\.00\s+0\.00\s+0\.00", page.text), "遮蔽后的权重没有按两位小数打印"
    # sat 那一行随页面算出的缩放分数（种子 42）而定：在这里照页面的做法算一遍，和打印的两位小数一致
    from minigpt import attention
    from minigpt.data import make_toy_example

    ex = make_toy_example(("the", "cat", "sat"), d_model=4, d_k=4, seed=42)
    scaled = attention.scale_scores(attention.attention_scores(ex.Q, ex.K), d_k=4)
    sat = attention.softmax_weights(attention.apply_mask(scaled, attention.causal_mask(3)))[2]
    expected = r"sat:\s+" + r"\s+".join(f"{v:.2f}".replace(".", r"\.") for v in sat.tolist())
    assert re.search(expected, page.text), expected
    # 原稿里算错的那一行不能出现
    assert not re.search(r"(?<![\d.])0\.51(?!\d)", page.text)
    assert "0.22, 0.27" not in page.text


def test_s3_every_position_has_a_question_and_the_last_one_predicts_past_the_sentence(built_book):
    page = load(built_book, "s3_causal_mask")
    head, rows = next((h, r) for h, r in _tables(page) if h and h[0] == "位置")
    words = "the cat sat on the mat".split()
    assert head == ["位置"] + [str(i) for i in range(len(words))], head  # 六个 token，六道题，不是五道
    inputs, answers = rows
    assert inputs == ["输入"] + words, inputs
    assert answers[:-1] == ["答案"] + words[1:] and answers[-1] == "？", answers  # 错开一格；最后一格不在句中
    # 正文说清最后一个位置在训练时和生成时各猜什么
    last = _paragraph_with(page, "不在这句话里")
    assert "训练时" in last and "生成时" in last, last


def _s3_seed42_scaled():
    from minigpt.attention import attention_scores, scale_scores
    from minigpt.data import make_toy_example

    ex = make_toy_example(("the", "cat", "sat"), d_model=4, d_k=4, seed=42)
    return scale_scores(attention_scores(ex.Q, ex.K), d_k=4)


def _s3_seed42_scaled_weights():
    return torch.softmax(_s3_seed42_scaled(), dim=-1)


def test_s3_leak_is_any_nonzero_weight_and_training_would_grow_it(built_book):
    page = load(built_book, "s3_causal_mask")
    leak = _paragraph_with(page, "未来位置的权重只要不是 0")
    # 这一段引用的是 glue 进来的、cat 分给 sat 的权重（种子 42 的缩放分数做 softmax，由代码算出）
    assert f"以 {_s3_seed42_scaled_weights()[1, 2].item():.2f} 的权重" in leak, leak
    assert "最大" not in leak, "泄露与份额是否最大无关"
    assert not any("示意分数" in p for p in paragraphs(page)), "第 3 节的例子用的是代码算出的分数，不是示意分数"
    assert any("种子 42" in p and "缩放分数" in p for p in paragraphs(page))
    assert "梯度下降" in leak and "加大这份权重" in leak, leak
    # 指向后面小实验的交叉引用写的是小节号（3.5 小节），不和“第 3 节”这样的整页节号混用
    assert "训练会把偷看放大一节" not in leak
    m = re.search(r"(3\.\d) 小节用一个小实验", leak)
    assert m, leak
    target = soup(page.path).find(id="s3-leak-training")
    sec = target if target.name == "section" else target.find_parent("section")
    h2 = sec.find("h2")
    assert m.group(1) in h2.get_text() and "训练会把抄答案的路越走越宽" in h2.get_text(), (m.group(1), h2.get_text())


def test_s3_says_a_whole_given_sentence_needs_no_mask(built_book):
    """不遮蔽的注意力本身没有错：理解一句写完了的话（编码器、BERT）时整句都在手上；只有逐词生成才要遮。"""
    page = load(built_book, "s3_causal_mask")
    para = next(p for p in paragraphs(page) if "BERT" in p)
    assert "不加遮蔽" in para and "编码器" in para and "GPT" in para, para
    # 这一段在“遮住右上角”那一节之前，也就是在读者学遮蔽之前
    assert page.text.index("BERT") < page.text.index("遮蔽矩阵把这条规则写成数字")


def test_s3_mask_weights_and_cat_sat(built_book):
    page = load(built_book, "s3_causal_mask")
    assert re.search(r"\[\[1, 0, 0\],\s*\[1, 1, 0\],\s*\[1, 1, 1\]\]", page.text), "没有打印出下三角遮蔽矩阵"
    assert "-inf" in page.text
    assert "0.3905" in page.pasted and "0.0000" in page.text  # cat → sat：遮蔽前（正文）/ 遮蔽后（打印）
    # 逐行检验：遮蔽后的权重就是左边的份额按比例放大；三行都打印 True，正文据此说“三行的检验都答 True”
    assert page.text.count("等于左边按比例放大？ True") == 3 and "等于左边按比例放大？ False" not in page.text
    assert "三行的检验都答 True" in page.text
    assert "0.4524" in page.text and "0.5476" in page.text
    for name in ("to_nn_mha_mask", "to_sdpa_mask", "ValueError"):
        assert name in page.text, name


def test_s3_tables_have_no_empty_header_cells_and_prose_says_因果遮蔽(built_book):
    page = load(built_book, "s3_causal_mask")
    tables = _tables(page)
    assert len(tables) >= 1
    for head, _ in tables:
        assert head and all(head), f"表头有空单元格：{head}"
    # 遮蔽矩阵不再另列一张表：规则 j ≤ i 写在正文里，矩阵由代码打印、由图 3.1 画出
    assert not any(h[1:] == ["the", "cat", "sat"] for h, _ in tables)
    assert "j \\le i" in "".join(load(built_book, "s3_causal_mask").math)
    # 正文、图注、提示框里只用“因果遮蔽”，不写“因果 mask”（代码不算）
    prose = prose_text(page)
    assert "因果 mask" not in prose and "因果mask" not in prose


def test_s3_visible_code_glues_nothing(built_book):
    page = load(built_book, "s3_causal_mask")
    assert "glue(" not in page.text and "myst_nb" not in page.text


def test_s3_ends_with_self_check(built_book):
    pairs = self_check(load(built_book, "s3_causal_mask"))
    assert 2 <= len(pairs) <= 3, pairs
    count, zero, _ = pairs[0], pairs[1], pairs[2]
    assert "10 道" in count[1] and "55" in count[1], count  # 1 + 2 + … + 10
    # “换成 0 而不是 −∞”那题的答案：cat 那一行把 sat 的分数换成 0 之后 softmax 给 sat 的权重
    row = _s3_seed42_scaled()[1].clone()
    row[2] = 0.0
    leaked = torch.softmax(row, dim=-1)[2].item()
    assert f"{leaked:.2f}" in zero[1], zero


def _leak_printout(page):
    """两次训练打印出的数：瞎猜的损失，以及每次的权重、训练损失、各位置损失、加遮蔽后的损失。"""
    out = re.search(
        r"瞎猜的损失（词表大小的自然对数）= (\S+)\s+不遮蔽\s+分给下一个位置的权重：(\S+) → (\S+)\s+"
        r"训练损失：\S+ → (\S+)\s+新数据上各位置的损失：\[([^\]]*)\]\s+加上遮蔽在新数据上测：(\S+)\s+"
        r"因果遮蔽\s+分给下一个位置的权重：\S+ → \S+\s+训练损失：\S+ → (\S+)\s+"
        r"新数据上各位置的损失：\[([^\]]*)\]", page.text)
    assert out, "没有打印出两次训练的结果"
    chance, w0, w1, loss, by_pos, ev, masked_loss, masked_by_pos = out.groups()
    return dict(chance=chance, w0=w0, w1=w1, loss=loss, ev=ev, masked_loss=masked_loss,
                by_pos=[float(v) for v in by_pos.split(",")],
                masked_by_pos=[float(v) for v in masked_by_pos.split(",")])


def test_s3_leak_experiment_prose_agrees_with_its_printed_output(built_book):
    page = load(built_book, "s3_causal_mask")
    r = _leak_printout(page)
    assert r["chance"] == f"{math.log(10):.2f}"
    # 正文里的数就是打印出来的数（glue），并且结论和这些数相符
    para = _paragraph_with(page, "只能是抄来的")
    assert f"从 {r['w0']} 涨到 {r['w1']}" in para, para
    assert f"降到 {r['loss']}，远低于瞎猜的 {r['chance']}" in para, para
    assert float(r["w1"]) > 0.9 and float(r["loss"]) < float(r["chance"]) / 3
    para = _paragraph_with(page, "能做到的也就是这样")
    assert "自始至终恰好是 0，" in para and f"停在 {r['masked_loss']}" in para, para
    assert f"损失是 {r['ev']}，比瞎猜还差" in para, para
    assert abs(float(r["masked_loss"]) - float(r["chance"])) < 0.1 and float(r["ev"]) > float(r["chance"])
    # “每个位置都在 ln 10 附近”
    assert all(abs(v - math.log(10)) < 0.1 for v in r["masked_by_pos"]), r["masked_by_pos"]


def test_s3_leak_text_matches_the_code_9_drawn_8_fed_and_the_last_position_cannot_cheat(built_book):
    """每条样本抽 seq_len + 1 个、送进 seq_len 个；最后一个位置无处可抄，不遮蔽的损失下限是 ln 10 / seq_len。"""
    from minigpt.leak import train_next_token
    import inspect
    seq_len = inspect.signature(train_next_token).parameters["seq_len"].default
    page = load(built_book, "s3_causal_mask")
    data = _paragraph_with(page, "均匀、独立地抽取")
    assert f"由 {seq_len + 1} 个 token 组成" in data and f"前 {seq_len} 个送进模型" in data, data
    r = _leak_printout(page)
    assert len(r["by_pos"]) == len(r["masked_by_pos"]) == seq_len
    *copied, last = r["by_pos"]
    floor = math.log(10) / seq_len
    para = _paragraph_with(page, "无处可抄")
    assert f"位置 {seq_len} 上的 token" in para and f"前 {seq_len - 1} 个位置" in para, para
    assert f"第 {seq_len + 1} 个 token" not in para, para  # 位置从 0 数：不写“第 N 个”
    # 比较的说法跟着数走：比瞎猜差就说“还差”，不然说“不比瞎猜好”
    verdict = "比瞎猜还差" if last > float(r["chance"]) else "不比瞎猜好"
    assert f"最后一个位置是 {last:.2f}，瞎猜是 {r['chance']}，它{verdict}" in para, para
    assert f"约 {floor:.2f}" in para, para
    # 结论和数相符：最后一个位置不比瞎猜好，其余位置抄到了，训练损失停在下限上方不远处
    assert last >= float(r["chance"]) - 0.005
    assert sum(copied) / len(copied) < 0.1
    assert floor < float(r["loss"]) < floor + 0.15


def test_s3_warning_box_states_each_torch_behaviour_and_the_page_shows_it(built_book):
    page = load(built_book, "s3_causal_mask")
    # 提示框里的每条说法（各条都由 tests/test_torch_facts_s3_s4.py 对照 torch 检查）
    for claim in ("causal_mask 返回 int64 张量", "原样传入会报错", "AssertionError", "RuntimeError",
                  ".bool() 之后两个接口方向相反", "True 表示可以看", ".float() 之后什么也没遮住",
                  "加到分数上的偏置", "need_weights=True", "输出和权重都是 NaN", "这一行的输出为 0"):
        assert claim in page.text, claim
    # 页面上的代码把它们演示出来
    assert "nn.MultiheadAttention 收到 int64： only bool and floating types of attn_mask are supported" \
        in page.text
    assert "F.scaled_dot_product_attention 收到 int64： RuntimeError" in page.text
    assert re.search(r"torch\.softmax 的第 0 行： tensor\(\[nan, nan, nan\]\)", page.text)
    assert re.search(r"F\.scaled_dot_product_attention 第 0 行的输出： tensor\(\[0\., 0\., 0\., 0\.\]\)",
                     page.text)
    assert re.search(r"nn\.MultiheadAttention 第 0 行的权重： tensor\(\[nan, nan, nan\]\)", page.text)
    # .bool() 交给 nn.MultiheadAttention：权重落在未来，最后一行整行 NaN
    flipped = re.search(r"收到 mask\.bool\(\) 的权重：\s*tensor\(\[\[(.*?)\]\]\)", page.text, re.S)
    assert flipped, "没有打印 .bool() 之后的权重"
    rows = [r.strip(" []\n,") for r in flipped.group(1).split("],")]
    assert rows[-1].replace(" ", "") == "nan,nan,nan", rows
    assert float(rows[0].split(",")[0]) == 0.0


def test_s3_fully_masked_row_error_is_printed_whole_and_without_layout_code(built_book):
    """minigpt 的报错原样打印（一句一行），页面上没有 textwrap 之类的排版代码。"""
    import torch as _torch
    from minigpt.attention import softmax_weights
    page = load(built_book, "s3_causal_mask")
    assert "textwrap" not in page.text
    try:
        softmax_weights(_torch.tensor([[float("-inf")] * 3, [0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]))
    except ValueError as err:
        lines = str(err).splitlines()
    assert len(lines) >= 3
    for line in lines[:-1]:
        assert line in page.text, line
        assert line.endswith("。"), line  # 每行是一句完整的话


def test_s3_figures(built_book):
    page = load(built_book, "s3_causal_mask")
    assert_figures(page, {"fig-s3-mask": "3.1", "fig-s3-before-after": "3.2", "fig-s3-leak": "3.3"})


def test_s2_s3_alt_texts_state_what_the_code_computes(built_book):
    """图 2.2 与图 3.3 的替代文字写着计算的结果（几乎只有一根柱子接近 1；权重从 0.1 多升到接近 1；
    遮蔽时损失贴着 ln 10、权重一直是 0）：这些说法要对代码算出的数成立。"""
    from minigpt.experiments import softmax_saturation
    from minigpt.leak import train_next_token

    def alt(name, fig_id):
        return soup(load(built_book, name).path).find("figure", id=fig_id).find("img")["alt"]

    # 图 2.2：d_k = 64 那一次“典型”抽样（正文的参数：8 个 Key，种子 0，一千次）
    text = alt("s2_scaled_dot_product", "fig-s2-saturation")
    assert "左图（不缩放）几乎只有一根柱子接近 1" in text and "分布在多根柱子上" in text, text
    r = softmax_saturation(d_k=64, n_keys=8, seed=0, n_trials=1000)
    assert r.max_weight > 0.9 and sorted(r.weights.tolist())[-2] < 0.1, r.weights
    assert r.scaled_max_weight < 0.5 and (r.scaled_weights > 0.05).sum() >= 3, r.scaled_weights
    # 图 3.3：两次训练（正文用的默认参数）
    text = alt("s3_causal_mask", "fig-s3-leak")
    assert "不遮蔽的曲线从 0.1 多升到接近 1" in text and "因果遮蔽的曲线一直是 0" in text, text
    assert "因果遮蔽的曲线一直贴着灰色虚线" in text and "停在蓝色点线" in text, text
    unmasked, masked = train_next_token(masked=False), train_next_token(masked=True)
    assert 0.1 <= unmasked.next_weight[0] < 0.2 and unmasked.next_weight[-1] > 0.95, unmasked.next_weight
    assert max(masked.next_weight) == 0.0
    assert all(abs(v - masked.chance_loss) < 0.1 for v in masked.losses), (min(masked.losses), max(masked.losses))
    floor = unmasked.chance_loss / unmasked.seq_len
    assert floor < unmasked.losses[-1] < floor + 0.15


# ---------------------------------------------------------------- 全书：负号


# 负号的写法全书统一：正文和 glue 进正文的数一律用 ASCII 的连字符减号“-”（和代码打印的一样）；
# 公式里的负号由 MathJax 排版，源码里同样是“-”。U+2212（−）、全角的“－”和小号的“﹣”都不用。
OTHER_MINUS = re.compile("[\u2212\uff0d\ufe63]")


def test_other_minus_pattern():
    assert OTHER_MINUS.search("反向为 \u22121") and OTHER_MINUS.search("\uff0d0.5")
    assert not OTHER_MINUS.search("反向为 -1，位置 0–4")  # 连字符减号和表示范围的短横线都不算


@pytest.mark.parametrize("docname", toc_docnames())
def test_minus_sign_is_the_ascii_hyphen_minus_in_prose_and_glued_values(built_book, docname):
    page = load_path(built_book.html / f"{docname}.html")
    bad = [t.strip()[:60] for t in page.chunks if OTHER_MINUS.search(t)]
    assert not bad, f"{docname}：这些文字里的负号不是 ASCII 的“-”：{bad}"
    assert not any(OTHER_MINUS.search(v) for v in page.pasted), page.pasted



def test_s2_even_weights_are_explained_by_the_small_scaled_scores_and_those_by_the_initialization(built_book):
    """第三步末尾：权重分得比较平均，因为缩放后的分数小、行内差距小；分数小的原因是 nn.Linear 的默认初始化，
    不是 d_k 小（式 2.3：缩放后的尺度与 d_k 无关）。句中的数都是 glue 的，这里按算出的值核对：
    行内最大权重不到最小的 2 倍，这个倍数正是 e^(行内分数差)；四个 d_k 下缩放后分数的标准差都在 1/3 附近。"""
    from minigpt import attention, experiments

    _, ex, w = _toy()
    scaled = attention.scale_scores(attention.attention_scores(ex.Q, ex.K), 4)
    ratio = (w.max(dim=-1).values / w.min(dim=-1).values).max().item()
    spread = (scaled.max(dim=-1).values - scaled.min(dim=-1).values).max().item()
    bound = math.ceil(scaled.abs().max().item() * 100) / 100
    part = section(built_book, "s2_scaled_dot_product", "第三步：softmax 归一化")
    assert pasted_after(part, "最多是最小的") == [f"{ratio:.2f}"], part.pasted
    assert pasted_after(part, "绝对值都不超过") == [f"{bound:.2f}"], part.pasted
    assert pasted_after(part, "最多差") == [f"{spread:.2f}"], part.pasted
    assert scaled.abs().max().item() <= bound
    assert ratio < 2 and math.isclose(ratio, math.exp(spread), rel_tol=1e-5)
    stds = [s.std_scaled for s in experiments.init_score_std((4, 16, 64, 256), n_seeds=100)]
    assert pasted_after(part, "这个标准差都在") == [f"{min(stds):.2f}"], part.pasted
    assert pasted_after(part, f"{min(stds):.2f} 到") == [f"{max(stds):.2f}"], part.pasted
    assert all(0.28 < s < 0.42 for s in stds), stds
    assert stds[-1] <= stds[0], stds  # “不随 d_k 变大”
    assert "原因在初始化" in part.text and "不是因为 $d_k$" not in part.text


def test_s2_equations_count_positions_from_zero_like_the_code(built_book):
    """全书位置从 0 数：第 2 节的求和、softmax 的下标都写 0 到 n-1，和下面代码里的 V[0]、w0[0] 同一个基。"""
    page = load(built_book, "s2_scaled_dot_product")
    sums = [m for m in page.math if r"\sum" in m]
    assert sums and not [m for m in sums if re.search(r"\\sum_\{\w=1\}", m)], sums
    assert any(r"\sum_{j=0}^{n-1}" in m and "A_{ij}" in m for m in sums), sums
    assert any(r"\sum_{l=0}^{n-1}" in m and "e^{z_l}" in m for m in sums), sums
    assert "从 0 数起" in page.text


def test_pages_do_not_point_to_chapters_this_book_does_not_have():
    """本书只有这一章：输入层、输出层在来源教程里，不能写成本书的“前面几章”“下一章”。"""
    for doc in ("intro", "summary", *(p.stem for p in (REPO / "book").glob("s[0-9]_*.md"))):
        text = (REPO / "book" / f"{doc}.md").read_text(encoding="utf-8")
        for phrase in ("前面几章", "下一章", "上一章"):
            assert phrase not in text, (doc, phrase)
    intro = (REPO / "book" / "intro.md").read_text(encoding="utf-8")
    # 输入层、输出层只说“不展开”，引用来源教程，不许诺它的“下一节”
    assert "分词、嵌入和输出层都不展开" in intro and "source_tutorial_zh" in intro and "下一节" not in intro
    summary = (REPO / "book" / "summary.md").read_text(encoding="utf-8")
    assert "下一节" not in summary and "来源教程" not in summary


def test_d_k_and_d_model_are_called_width_everywhere_like_the_glossary():
    """术语表说每个概念一个中文说法：d_k、d_model 叫“宽度”，不叫“维度”。"""
    book = REPO / "book"
    glossary = (book / "glossary.md").read_text(encoding="utf-8")
    assert "每个概念只用一个中文说法" in glossary
    for name in ("d_model", "d_k"):
        entry = glossary.split(f"\n{name}\n", 1)[1].split("\n\n", 1)[0]
        assert "宽度" in entry and "维度" not in entry, entry
    pattern = re.compile(r"维度\s*\[?\$?\\?(d_k|d_\{?\\text\{model\}|d_\\text)|维度\s*`?\{term\}`d_")
    for path in book.glob("*.md"):
        if path.name == "homework.md":
            continue
        text = path.read_text(encoding="utf-8")
        assert not pattern.search(text), (path.name, pattern.search(text).group(0))
        assert "维度越高" not in text, path.name


def test_numbered_cross_references_are_followed_by_a_space_before_chinese():
    """{numref} 按默认格式渲染成“图 4.1”“表 4.2”，以数字结尾：后面紧跟汉字时，和全书一样空一格。
    自定格式以汉字结尾的（如“第 %s 节”）不在此列。"""
    ref = re.compile(r"\{numref\}`([^`]*)`(?=[\u4e00-\u9fff])")
    bad = []
    for path in (REPO / "book").glob("*.md"):
        for m in ref.finditer(path.read_text(encoding="utf-8")):
            title = m.group(1).split("<")[0].strip()
            if "<" not in m.group(1) or title.endswith("%s"):
                bad.append(f"{path.name}: {m.group(0)}")
    assert not bad, bad
