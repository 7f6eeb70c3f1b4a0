"""导读与第 1–3 节页面的渲染检查（读 conftest 的 built_book）。

只看页面正文（<article> 里的内容），不看侧边栏：侧边栏对每一页都列出全部链接。
“正文里的数字”指 glue 填进去的 <span class="pasted-text">，代码输出另算。
"""

from __future__ import annotations

import re

import pytest

from pagekit import assert_figures, load

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


def test_s3_illustrative_rows_are_computed_not_copied(built_book):
    page = load(built_book, "s3_causal_mask")
    assert page.title.endswith("因果遮蔽")
    for value in ("0.45", "0.55", "0.27", "0.29", "0.44"):
        assert value in page.pasted, value
    assert "[0.27, 0.29, 0.44]" in page.text
    # 原稿里算错的那一行不能出现
    assert not re.search(r"(?<![\d.])0\.51(?!\d)", page.text)
    assert "0.22, 0.27" not in page.text


def test_s3_mask_weights_and_cat_sat(built_book):
    page = load(built_book, "s3_causal_mask")
    assert re.search(r"\[\[1, 0, 0\],\s*\[1, 1, 0\],\s*\[1, 1, 1\]\]", page.text), "没有打印出下三角 mask"
    assert "-inf" in page.text
    assert "0.3905" in page.pasted and "0.0000" in page.pasted  # cat → sat：遮蔽前 / 遮蔽后
    assert "0.4524" in page.text and "0.5476" in page.text
    for name in ("to_nn_mha_mask", "to_sdpa_mask", "ValueError"):
        assert name in page.text, name
    for word in ("从前有座山", "冰雪", "融化", "键盘"):
        assert word in page.text, word


def test_s3_figures(built_book):
    page = load(built_book, "s3_causal_mask")
    assert_figures(page, {"fig-s3-mask": "3.1", "fig-s3-before-after": "3.2"})
