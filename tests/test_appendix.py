"""附录「梯度能否传回远处」的渲染结果（via built_book）。

数字本身由 minigpt.experiments 算出（见 tests/test_source_numbers.py）；这里检查它们真的出现在页面上，
图都在、都有编号并在正文里被引用，路径长度的表也在。
"""

from __future__ import annotations

import re

import pytest

from support import golden as G
from support.pagekit import soup as read_html
from support.pagekit import table_rows

pytestmark = pytest.mark.book

FIGURES = [
    "fig-ap-rnn-grad", "fig-ap-length-sweep", "fig-ap-rnn-vs-attn",
    "fig-ap-last-weights", "fig-ap-cumulative", "fig-ap-first-vs-length",
]


@pytest.fixture(scope="module")
def page(built_book):
    path = built_book.html / "book" / "appendix_rnn.html"
    return path, read_html(path)


def _outputs(soup) -> str:
    return "\n".join(o.get_text() for o in soup.select("div.cell_output"))


def _prose(soup) -> str:
    """正文段落（不含代码单元与其输出）。"""
    return "\n".join(p.get_text() for p in soup.select("article p") if not p.find_parent("div", class_="cell"))


def test_title(page):
    _, soup = page
    assert soup.find("h1").get_text(strip=True).startswith("附录：梯度能否传回远处")


def test_printed_losses_and_gradients(page):
    _, soup = page
    out = _outputs(soup)
    assert G.AP_RNN_REPR in out
    for shape in G.AP_RNN_SHAPES.values():
        assert str(shape) in out, shape
    assert f"L = {G.AP_RNN_LOSS_6F}" in out
    assert f"L = {G.AP_ATTN_LOSS_6F}" in out
    # 页面按“离末尾几步”读数（位置 79、78、75、71、63、47、15、0），不读位置 40，也不印来源教程的“首尾各 5 个位置的平均”
    printed = [v for k, v in [*G.AP_RNN_GRAD_3E.items(), *G.AP_ATTN_GRAD_3E.items()]
               if k != "位置 40" and "平均" not in k]
    printed += [G.AP_LENGTH_SWEEP_3E[20][0], G.AP_LENGTH_SWEEP_3E[20][2], G.AP_LENGTH_SWEEP_3E[80][2]]
    from minigpt.experiments import rnn_length_sweep
    g10 = rnn_length_sweep(lengths=(10, 80))[10]   # 长度 10 取长度 80 那条输入的开头（与原文不同，见 test_source_numbers）
    printed += [f"{g10[0].item():.3e}", f"{(g10[-1] / g10[0]).item():.3e}"]
    for number in printed:
        assert number in out, number
    assert re.search(rf"权重之和: {re.escape(G.AP_ATTN_WEIGHT_SUM_3F)}", out)


def test_first_half_shares_are_glued_into_the_prose(page):
    from minigpt.experiments import attention_input_gradients, first_half_share, rnn_input_gradients

    _, soup = page
    prose = _prose(soup)
    rnn_half = first_half_share(rnn_input_gradients().grad_norms)
    attn_half = first_half_share(attention_input_gradients().grad_norms)
    assert 0 < rnn_half < 1e-6
    assert 0.4 < attn_half < 0.5  # 正文：比 80 个位置平分时的 50% 略少
    # RNN 的占比以科学计数法出现在输出和正文里，显出它的真实量级，而不是 0.000%
    assert re.search(rf"RNN:\s+{rnn_half:.3e}", _outputs(soup))
    assert f"{rnn_half:.1e}" in prose
    # 份额读成“每十亿份里约 4.6 份”，不写成 4.6e-07% 那样的科学计数法百分比
    assert not re.search(r"e[-+]\d+%", prose), "正文里有科学计数法的百分比"
    import math
    k = math.ceil(-math.log10(rnn_half))
    units = {7: "一千万", 8: "一亿", 9: "十亿", 10: "一百亿"}
    assert f"每{units[k]}份梯度里约占 {rnn_half * 10**k:.1f} 份" in prose, prose
    assert 1 <= rnn_half * 10**k < 10
    # 两者之比读成“约 9400 万倍”（两位有效数字，按万、亿分段）
    ratio = attn_half / rnn_half
    big, name = (1e8, "亿") if ratio >= 1e8 else (1e4, "万")
    shown = re.search(rf"约是 RNN 的 ([\d.]+) {name}倍", prose)
    assert shown, prose
    assert abs(float(shown.group(1)) * big / ratio - 1) < 0.06, (shown.group(1), ratio)
    assert not re.search(r"RNN[^\n]*0\.000%", _outputs(soup))
    assert f"{attn_half:.3%}" == G.AP_FIRST_HALF_SHARE["Attention"] and G.AP_FIRST_HALF_SHARE["Attention"] in prose
    rnn = G.AP_RNN_GRAD_3E
    for number in (G.AP_RNN_LOSS_6F, G.AP_ATTN_LOSS_6F, rnn["位置 0"], rnn["位置 40"], rnn["位置 79"]):
        assert number in prose, f"正文里没有 glue 进来的 {number}"


def test_remedies_before_attention_are_explained_cited_and_lstm_is_measured(page):
    import torch

    _, soup = page
    section = soup.find("section", id="ap-before-attention")
    assert section is not None
    text = section.get_text()
    for idea in ("LSTM", "GRU", "遗忘门", "初始化", "残差连接", "梯度裁剪", "梯度爆炸"):
        assert idea in text, idea
    cites = [a for a in section.find_all("a") if a.get("href", "").startswith("../references.html")
             or a.get("href", "").startswith("references.html")]
    assert len(cites) >= 6, "附录的各种办法没有都给出处"
    torch.manual_seed(42)
    lstm = torch.nn.LSTM(4, 8, batch_first=True)
    x = torch.randn(1, 80, 4, requires_grad=True)
    lstm(x)[0][:, -1, :].pow(2).mean().backward()
    first = x.grad[0, 0].norm().item()
    outputs = "\n".join(o.get_text() for o in section.select("div.cell_output"))
    assert f"LSTM 位置 0 的梯度: {first:.3e}" in outputs
    assert f"{first:.1e}" in "\n".join(p.get_text() for p in section.find_all("p"))


def test_lstm_has_four_times_the_rnn_parameters_and_reads_a_different_input(page):
    """正文说 LSTM 的参数是同样大小的 RNN 的 4 倍，所以按同一种子随后抽出的输入不是 RNN 那串。"""
    import torch

    count = lambda m: sum(p.numel() for p in m.parameters())
    assert count(torch.nn.LSTM(4, 8)) == 4 * count(torch.nn.RNN(4, 8))
    xs = []
    for cls in (torch.nn.RNN, torch.nn.LSTM):
        torch.manual_seed(42)
        cls(4, 8, batch_first=True)
        xs.append(torch.randn(1, 80, 4))
    assert not torch.equal(*xs)
    text = page[1].find("section", id="ap-before-attention").get_text()
    assert "4 倍" in text and "不是同一串数" in text


def test_every_figure_exists_has_alt_and_is_referenced_by_number(page):
    path, soup = page
    text_links = {a["href"].lstrip("#"): a.get_text(strip=True)
                  for a in soup.select("article a.reference.internal") if a.get("href", "").startswith("#")}
    for name in FIGURES:
        figure = soup.find(id=name)
        assert figure is not None, f"页面上没有图 {name}"
        imgs = figure.find_all("img")
        assert len(imgs) == 1, f"{name} 应当恰好出现一次"
        assert imgs[0].get("alt"), f"{name} 没有替代文字"
        assert (path.parent / imgs[0]["src"]).resolve().is_file(), f"{name} 的图片文件不存在"
        number = figure.select_one(".caption-number").get_text(strip=True)
        assert re.fullmatch(r"图 A\.\d+", number), number  # 附录的图编号 A.1、A.2……（book_appendix）
        assert text_links.get(name) == number, f"正文没有用编号引用 {name}（{number}）"
    assert len(soup.select("article figure img")) == len(FIGURES), "有图没有编号或重复显示"


def test_path_length_table(page):
    _, soup = page
    table = soup.find("table", id="tbl-ap-path")
    assert table is not None
    rows = table_rows(table)
    assert rows[0] == ["层的类型", "顺序操作数", "最大路径长度", "每层计算量"]
    assert rows[1] == ["循环层（RNN）", "O(n)", "O(n)", "O(n·d²)"]
    assert rows[2] == ["自注意力", "O(1)", "O(1)", "O(n²·d)"]
    assert soup.select_one('a[href="#tbl-ap-path"]') is not None
    assert "Vaswani" in soup.select_one("article").get_text()


def test_mask_convention_and_careful_conclusion(page):
    _, soup = page
    out = _outputs(soup)
    assert "等于 torch.triu(..., diagonal=1): True" in out
    prose = _prose(soup)
    assert "路径长度都是 1" in prose
    assert "路短，不等于梯度大" in prose
    assert "学成什么样" in prose


def test_orders_of_magnitude_named_in_the_prose_hold():
    """正文用“十几个数量级”“一个数量级左右”描述的比值，在这里按同样的种子算出来核对。"""
    import torch

    from minigpt.experiments import attention_input_gradients, lstm_input_gradients, rnn_input_gradients

    rnn = rnn_input_gradients().grad_norms
    lstm = lstm_input_gradients()
    attn = attention_input_gradients().grad_norms
    for g in (rnn, lstm):                       # RNN 与未训练的 LSTM：首尾相差十几个数量级
        assert 1e10 < (g[-1] / g[0]).item() < 1e20
    assert 3 < (attn[-1] / attn[0]).item() < 30  # 注意力：只差一个数量级左右
    assert (attn.max() / attn.min()).item() < 100  # 注意力：整条曲线在不到两个数量级宽的带子里
    assert 1e10 < (attn[0] / rnn[0]).item() < 1e20  # 位置 0：RNN 比注意力低十几个数量级
    above = (rnn > attn).nonzero().flatten().tolist()  # RNN 高过注意力的位置：末尾连续的一小段
    assert above and above == list(range(len(rnn) - len(above), len(rnn))) and len(above) < 15, above
    assert torch.all(attn > 0)
    shown = [attn[79 - b].item() for b in (1, 4, 8, 16, 32, 64, 79)]  # 正文：离末尾这些步数的读数有高有低，不随距离单调变化
    assert shown != sorted(shown) and shown != sorted(shown, reverse=True), shown
    from minigpt.experiments import rnn_length_sweep
    ends = [g[-1].item() for g in rnn_length_sweep(lengths=(10, 20, 40, 80)).values()]
    assert all(1e-2 <= e < 1e-1 for e in ends), ends  # 正文：长度扫描里右端的四个值在同一个量级里


def test_length_160_rnn_gradient_is_representable_but_its_squares_underflow_float32():
    """正文说：长度 160 时位置 0 的梯度分量 float32 存得下，平方后却小于 float32 最小的正数，范数于是算成 0。"""
    import torch

    from minigpt.experiments import rnn_input_gradients

    r32 = rnn_input_gradients(160, seed=42)
    comp = r32.x.grad[0, 0].abs()
    assert comp.min().item() > 0                                    # 分量不是 0，float32 存得下
    assert comp.double().pow(2).max().item() < 2.0 ** -149          # 平方后都小于 float32 最小的正数
    assert r32.grad_norms[0].item() == 0.0                          # 所以 float32 的范数是 0


def test_last_weights_alt_text_matches_the_printed_weights(page):
    """图 A.4 的替代文字、正文和打印的权重说的是同一件事：两个点超过平均值的两倍，其余大多在一半到一倍半之间。"""
    from minigpt.experiments import attention_input_gradients

    _, soup = page
    alt = soup.find(id="fig-ap-last-weights").find("img")["alt"]
    assert "没有哪个位置特别突出" not in alt
    assert "有几个点高于一倍半，其中两个超过平均值的两倍" in alt and "一半到一倍半之间" in alt
    w = attention_input_gradients().last_token_weights
    ratio = w * len(w)
    assert int((ratio > 2).sum()) == 2 and int(((ratio >= 0.5) & (ratio <= 1.5)).sum()) > len(w) // 2
    assert 2 < int((ratio > 1.5).sum()) < 10   # “几个”高于一倍半，不止那两个
    prose = _prose(soup)
    assert f"{ratio.max().item():.1f} 倍" in prose and f"位置 {int(w.argmax())}" in prose


def test_attention_first_position_decomposition_is_glued(page):
    """附录末尾：位置 0 的梯度斜率、权重与 ‖o_T‖ 两个因子的斜率和 ‖o_T‖ 的首尾值都来自计算。"""
    from minigpt.experiments import first_position_gradient_vs_length, loglog_slope

    _, soup = page
    prose = _prose(soup)
    fp = first_position_gradient_vs_length()
    k = loglog_slope(fp.lengths, fp.attention)
    k_w = loglog_slope(fp.lengths, fp.attention_weight_0)
    k_o = loglog_slope(fp.lengths, fp.attention_last_output_norm)
    for number in (f"{k:.2f}", f"{k_w:.2f}", f"{k_o:.2f}", f"{k_w + k_o:.2f}",
                   f"{fp.attention_last_output_norm[0]:.3f}", f"{fp.attention_last_output_norm[-1]:.3f}"):
        assert number in prose, number   # 正文里的负数和代码打印的一样用连字符减号“-”（全书统一）
    assert "离 -1.5 比离 -1 近" in prose and abs(k + 1.5) < abs(k + 1)
    assert abs(k_w + 1) < 0.1, k_w   # “斜率……差不多正好是 1/n”


def test_length_sweep_says_short_inputs_are_prefixes(page):
    _, soup = page
    prose = _prose(soup)
    assert "只是输入变长了" not in prose
    assert "长度 10、20、40 的序列就是它的前 10、20、40 个位置" in prose
    assert "页面只负责" not in prose and "只能写成" not in prose


def test_first_position_claims_in_alt_text_and_prose_hold():
    """图 A.6 的替代文字和末段：注意力那一格每翻一倍都比上一次降得多，10 → 160 一共不到两个数量级；
    RNN 在 160 处是 0；‖o_T‖ 从 10 到 160 变短，但中途有起伏（不是单调的）。"""
    from minigpt.experiments import first_position_gradient_vs_length

    fp = first_position_gradient_vs_length()
    a = fp.attention
    drops = [x / y for x, y in zip(a, a[1:])]
    assert all(d > 1 for d in drops) and drops == sorted(drops), drops  # 下降得越来越快
    assert a[0] / a[-1] < 100                                             # 不到两个数量级
    assert fp.rnn[-1] == 0.0 and all(r > 0 for r in fp.rnn[:-1])         # 只有长度 160 下溢成 0
    o = fp.attention_last_output_norm
    assert o[-1] < o[0]
    assert any(y > x for x, y in zip(o, o[1:])), o                        # 中途有起伏


def test_positions_count_from_zero_and_embed_dim_is_d_model(page):
    """附录和全书一样从 0 数位置：RNN 的示意图从 x0 读起，位置 0 到位置 T 要改写 T 次；
    nn.MultiheadAttention 的 embed_dim 说的是 d_model，链接到 d_model 的词条，不是“嵌入”。"""
    _, soup = page
    article = soup.select_one("article")
    diagram = next(pre.get_text() for pre in article.select("pre") if "W_hh" in pre.get_text())
    # 展开的 RNN：x0 经 W_ih 进 h0，h0 经同一个 W_hh 到 h1，每个箭头上都标着权重
    assert "x0" in diagram and "0 ──W_hh──→ h0 ──W_hh──→ h1" in diagram, diagram
    assert diagram.count("W_ih") == diagram.count("x") == 3, diagram
    prose = _prose(soup)
    assert "第 1 个词" not in prose and "位置 0 的词要影响位置" in prose
    para = next(p for p in article.select("p") if "embed_dim" in p.get_text())
    hrefs = [a.get("href", "") for a in para.find_all("a")]
    glossary = [h.split("#")[1] for h in hrefs if "glossary.html#" in h]
    terms = {a.get_text() for a in para.find_all("a") if "glossary.html#" in a.get("href", "")}
    assert "d_model" in terms and "嵌入" not in terms, (terms, glossary)


def test_h_last_sentence_holds_for_the_printed_true(page):
    """正文说“最后一行的 True 说明 h_last[0] 就是 outputs 在最后一个位置上的那一格”：打印的确实是 True。"""
    _, soup = page
    assert "outputs[:, -1] 与 h_last[0] 相同: True" in _outputs(soup)
    assert "最后一行的 True 说明" in _prose(soup)



def test_rnn_curve_ratio_and_attention_share_read_the_same_in_prose_and_output(page):
    """“位置 70 以前最高的点是末尾那个点的百分之几”是 glue 的算出值（不是向上取整的界）；
    注意力前半段的占比，正文写百分数，打印的输出里也有同一个百分数。"""
    from minigpt.experiments import attention_input_gradients, first_half_share, rnn_input_gradients

    _, soup = page
    prose, out = _prose(soup), _outputs(soup)
    g = rnn_input_gradients(seq_len=80, input_dim=4, hidden_dim=8, seed=42).grad_norms
    below = (g[:70].max() / g[-1]).item()
    assert f"位置 70 以前最高的一个点只有末尾那个点的 {below:.2%}" in prose, prose
    assert "也不到末尾那个点的" not in prose
    attn_half = first_half_share(attention_input_gradients().grad_norms)
    assert f"注意力的前 40 个位置合计 {attn_half:.3%}" in prose
    assert re.search(rf"注意力:\s+{attn_half:.3e}（即 {re.escape(f'{attn_half:.3%}')}）", out), out
