"""导读与第 1–3 节页面的渲染检查（读 conftest 的 built_book）。

只看页面正文（<article> 里的内容），不看侧边栏：侧边栏对每一页都列出全部链接。
“正文里的数字”指 glue 填进去的 <span class="pasted-text">，代码输出另算。
"""

from __future__ import annotations

import math
import re

import pytest

import torch

from pagekit import assert_figures, load, plain, self_check

pytestmark = pytest.mark.book


# ---------------------------------------------------------------- 导读


def test_intro_title_and_links_to_every_section_it_promises(built_book):
    page = load(built_book, "intro")
    assert page.title == "导读"
    for doc in ("s1_intuition", "s2_scaled_dot_product", "s3_causal_mask", "s4_multi_head", "s6_block"):
        assert any(h.split("#")[0] == f"{doc}.html" for h in page.hrefs), f"导读正文没有链接到 {doc}"
    # 三段结构和五个要点问题
    for part in ("输入层", "核心层", "输出层", "Position Encoding", "logits"):
        assert part in page.text
    assert "river bank" in page.text and "bank account" in page.text


# ---------------------------------------------------------------- 第 1 节


def test_s1_shows_vocab_ids_and_the_seeded_X(built_book):
    page = load(built_book, "s1_intuition")
    assert page.title.endswith("Attention 的直觉")
    assert "[0, 2, 4]" in page.text
    assert "[0, 2, 4, 6, 0, 9]" in page.text  # sofa → [UNK]
    assert "[PAD]" in page.text and "[UNK]" in page.text
    for value in ("1.9269", "1.4873", "-2.1055", "-0.4974"):
        assert value in page.text, value
    assert "1.9269" in page.pasted  # 正文引用 X[0, 0] 用的是 glue
    # 示意的权重行，并说明它不是算出来的
    assert "0.05" in page.text and "0.40" in page.text and "示意" in page.text
    assert any("W_Q" in m for m in page.math)


# ---------------------------------------------------------------- 第 2 节


def test_s2_regenerated_numbers_and_glued_scale(built_book):
    page = load(built_book, "s2_scaled_dot_product")
    assert page.title.endswith("Scaled Dot-Product Attention")
    for value in ("-0.9139", "-0.6422", "0.4003", "0.2454", "0.2811", "0.4735", "-0.0709", "0.7985"):
        assert value in page.text, value
    assert "2.00" in page.pasted, page.pasted
    # 第 4 节会引用的 sat 行
    for value in ("0.2493", "0.3921", "0.3586"):
        assert value in page.pasted, value


def test_s2_formulas_keep_the_square_root(built_book):
    page = load(built_book, "s2_scaled_dot_product")
    attention = [m for m in page.math if "Attention" in m and "softmax" in m]
    assert attention, "找不到合并后的注意力公式"
    assert all(r"\sqrt{d_k}" in m for m in attention)
    assert any(r"\operatorname{Var}" in m and "= d_k" in m for m in page.math)
    assert r"\sqrt{64} = 8" in " ".join(page.math)
    # 公式有编号并被引用（式 (2.7) 是合并后的公式）
    assert "(2.7)" in page.text


def test_s2_figures(built_book):
    page = load(built_book, "s2_scaled_dot_product")
    assert_figures(page, {"fig-s2-variance": "2.1", "fig-s2-saturation": "2.2", "fig-s2-heatmap": "2.3"})


# ---------------------------------------------------------------- 第 3 节


def _article(page) -> str:
    html = page.path.read_text(encoding="utf-8")
    return html[html.index("<article"):html.index("</article>")]


def _tables(page) -> list[tuple[list[str], list[list[str]]]]:
    """正文里每张表的（表头单元格, 各行单元格），都是去掉标签后的文字。"""
    def cells(html, tag):
        return [plain(c) for c in re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", html, re.S)]
    tables = []
    for t in re.findall(r"<table.*?</table>", _article(page), re.S):
        head = t.split("<tbody>")[0]
        body = t.split("<tbody>")[1] if "<tbody>" in t else ""
        rows = [cells(r, "td") for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]
        tables.append((cells(head, "th"), rows))
    return tables


def _paragraph_with(page, needle: str) -> str:
    """正文里含 needle 的那一个 <p> 段落（去掉标签）；必须恰好一个。"""
    paras = [plain(p) for p in re.findall(r"<p>(.*?)</p>", _article(page), re.S)]
    found = [p for p in paras if needle in p]
    assert len(found) == 1, (needle, found)
    return found[0]


def test_s3_illustrative_rows_are_computed_not_copied(built_book):
    page = load(built_book, "s3_causal_mask")
    assert page.title.endswith("因果遮蔽")
    for value in ("0.45", "0.55", "0.27", "0.29", "0.44"):
        assert value in page.pasted, value
    assert "[0.27, 0.29, 0.44]" in page.text
    # 原稿里算错的那一行不能出现
    assert not re.search(r"(?<![\d.])0\.51(?!\d)", page.text)
    assert "0.22, 0.27" not in page.text


def test_s3_every_position_has_a_question_and_the_last_one_predicts_past_the_sentence(built_book):
    page = load(built_book, "s3_causal_mask")
    head, rows = next((h, r) for h, r in _tables(page) if h and h[0] == "位置")
    words = "the cat sat on the mat".split()
    assert len(rows) == len(words), rows  # 六个 token，六道题，不是五道
    for i, row in enumerate(rows[:-1]):
        assert row == [str(i), " ".join(words[:i + 1]), words[i + 1]], row
    assert rows[-1][:2] == ["5", "the cat sat on the mat"] and "句子后面" in rows[-1][2], rows[-1]
    # 正文说清最后一个位置在训练时和生成时各猜什么
    last = _paragraph_with(page, "最后一个位置 mat")
    assert "训练时" in last and "生成时" in last, last


def test_s3_leak_is_any_nonzero_weight_and_training_would_grow_it(built_book):
    page = load(built_book, "s3_causal_mask")
    leak = _paragraph_with(page, "只要未来 token 的权重不是 0")
    # 这一段引用的是 glue 进来的、cat 分给 sat 的权重（示意分数的 softmax）
    toy = torch.softmax(torch.tensor([0.3, 0.5, 0.8]), dim=-1)
    assert f"占了 {toy[2].item():.2f}" in leak, leak
    assert "最大" not in leak, "泄露与份额是否最大无关"
    assert "梯度下降" in leak and "加大这份权重" in leak, leak


def test_s3_mask_weights_and_cat_sat(built_book):
    page = load(built_book, "s3_causal_mask")
    assert re.search(r"\[\[1, 0, 0\],\s*\[1, 1, 0\],\s*\[1, 1, 1\]\]", page.text), "没有打印出下三角遮蔽矩阵"
    assert "-inf" in page.text
    assert "0.3905" in page.pasted and "0.0000" in page.pasted  # cat → sat：遮蔽前 / 遮蔽后
    assert "0.4524" in page.text and "0.5476" in page.text
    for name in ("to_nn_mha_mask", "to_sdpa_mask", "ValueError"):
        assert name in page.text, name


def test_s3_tables_have_no_empty_header_cells_and_prose_says_因果遮蔽(built_book):
    page = load(built_book, "s3_causal_mask")
    tables = _tables(page)
    assert len(tables) >= 2
    for head, _ in tables:
        assert head and all(head), f"表头有空单元格：{head}"
    # 遮蔽矩阵表：行是 Query，列是 Key
    head, rows = next((h, r) for h, r in tables if h[1:] == ["the", "cat", "sat"])
    assert rows == [["the", "1", "0", "0"], ["cat", "1", "1", "0"], ["sat", "1", "1", "1"]], rows
    # 正文、图注、提示框里只用“因果遮蔽”，不写“因果 mask”（代码不算）
    prose = plain(re.sub(r"<(pre|code)[^>]*>.*?</\1>", "", _article(page), flags=re.S))
    assert "因果 mask" not in prose and "因果mask" not in prose


def test_s3_visible_code_glues_nothing(built_book):
    page = load(built_book, "s3_causal_mask")
    assert "glue(" not in page.text and "myst_nb" not in page.text


def test_s3_ends_with_self_check(built_book):
    pairs = self_check(load(built_book, "s3_causal_mask"))
    assert 2 <= len(pairs) <= 3, pairs
    count, zero, _ = pairs[0], pairs[1], pairs[2]
    assert "10 道" in count[1] and "55" in count[1], count  # 1 + 2 + … + 10
    # “换成 0 而不是 -inf”那题的答案：sat 的权重是 glue 进来的 softmax([0.3, 0.5, 0])[2]
    leaked = torch.softmax(torch.tensor([0.3, 0.5, 0.0]), dim=-1)[2].item()
    assert f"{leaked:.2f}" in zero[1], zero


def test_s3_leak_experiment_prose_agrees_with_its_printed_output(built_book):
    page = load(built_book, "s3_causal_mask")
    out = re.search(
        r"瞎猜的损失 ln 10 = (\S+)\s+不遮蔽\s+分给下一个位置的权重: (\S+) → (\S+)\s+"
        r"训练损失: \S+ → (\S+)\s+加上遮蔽在新数据上测: (\S+)\s+因果遮蔽\s+"
        r"分给下一个位置的权重: \S+ → \S+\s+训练损失: \S+ → (\S+)", page.text)
    assert out, "没有打印出两次训练的结果"
    chance, w0, w1, loss, ev, masked_loss = out.groups()
    assert chance == f"{math.log(10):.2f}"
    # 正文里的数就是打印出来的数（glue），并且结论和这些数相符
    para = _paragraph_with(page, "全是抄来的")
    assert f"从 {w0} 涨到了 {w1}" in para and f"降到 {loss}，远低于瞎猜的 {chance}" in para, para
    assert float(w1) > 0.9 and float(loss) < float(chance) / 3
    para = _paragraph_with(page, "诚实的成绩")
    assert f"自始至终是 0.00" in para and f"停在 {masked_loss}" in para and f"损失是 {ev}，比瞎猜还差" in para
    assert abs(float(masked_loss) - float(chance)) < 0.1 and float(ev) > float(chance)


def test_s3_figures(built_book):
    page = load(built_book, "s3_causal_mask")
    assert_figures(page, {"fig-s3-mask": "3.1", "fig-s3-before-after": "3.2", "fig-s3-leak": "3.3"})
