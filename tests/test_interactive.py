"""minigpt.interactive：交互图的多格式输出、Vega-Lite 说明能编译、默认状态的读数就是 minigpt 算的数。

不需要构建书：Vega-Lite 说明用 vl-convert-python（与网站同一个 Vega 库）在 Python 里编译、渲染成 SVG。
浏览器里拖动控件的测试在 tests/test_interactive_browser.py。
"""

from __future__ import annotations

import base64
import html
import json
import re

import matplotlib.pyplot as plt
import pytest
import vl_convert

from support import interactive_cases as cases
from minigpt import interactive, plots

VL_VERSION = "6.4"  # 与 book/_ext/book_interactive.py 打包的 Vega-Lite 同一版本


@pytest.fixture(scope="module", autouse=True)
def chinese_font():
    """画图之前装好中文字体（书页里由 setup_notebook 完成；导入 plots 本身不装）。"""
    return plots.setup_chinese_font()



def build(name: str) -> interactive.InteractiveFigure:
    """用 minigpt 的数（按页面的做法）造出六张交互图之一，静态图与页面上的相同。"""
    t = cases.toy()
    if name == "s2-score-weight":
        fig = plots.attention_heatmap(t.weights, t.labels, t.labels)
        made = interactive.score_weight_explorer(t.scores, t.d_k, t.weights, t.labels,
                                                 static=fig, alt="热力图")
    elif name == "s2-softmax-saturation":
        fig = plots.softmax_saturation_plot(cases.saturation(64))
        made = interactive.saturation_explorer(static=fig, alt="柱状图", **cases.SATURATION)
    elif name == "s3-causal-mask":
        fig = plots.masked_vs_unmasked(t.weights, t.masked_weights, t.labels)
        made = interactive.mask_toggle(t.weights, t.masked_weights, t.labels,
                                       static=fig, alt="热力图")
    elif name == "s4-heads":
        labels, w = cases.heads()
        fig = plots.head_weights(w, labels)
        made = interactive.head_selector(w, labels, static=fig, alt="热力图")
    elif name == "s7-trained-heads":
        tokens, weights, start, length = cases.trained_heads()
        fig = plots.layer_head_maps(weights, tokens,
                                    [(t, t - length + 1) for t in range(start, len(tokens))])
        made = interactive.trained_head_explorer(weights, tokens, static=fig, alt="热力图",
                                                 copy_start=start, copy_length=length)
    else:
        fp = cases.path_length()
        fig = plots.first_position_vs_length(fp)
        made = interactive.path_length_slider(fp, static=fig, alt="折线图")
    plt.close(fig)
    return made


# 第 7 节的图要先训练页面上的模型（单线程约 9 s CPU）：make test 跑它，make unit 不跑
NAMES = ["s2-score-weight", "s2-softmax-saturation", "s3-causal-mask", "s4-heads",
         "ap-path-length", pytest.param("s7-trained-heads", marks=pytest.mark.slow)]


class _Figures(dict):
    """用到哪张图才造哪张（每张只造一次）。"""

    def __missing__(self, name: str) -> interactive.InteractiveFigure:
        self[name] = build(name)
        return self[name]


@pytest.fixture(scope="module")
def figures() -> dict[str, interactive.InteractiveFigure]:
    return _Figures()


def svg_texts(svg: str) -> list[str]:
    """SVG 里每个 <text> 的文字；多行文字（<tspan>）的每一行单独算一条。"""
    out = []
    for body in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S):
        lines = re.findall(r"<tspan[^>]*>([^<]*)</tspan>", body) or [body]
        out += [html.unescape(line) for line in lines]
    return out


def readout(name: str, figures) -> list[str]:
    """默认状态下图下方读数的各行（Vega 把读数画在 class 含 readout_marks 的组里）。"""
    svg = vl_convert.vegalite_to_svg(figures[name].spec, vl_version=VL_VERSION)
    group = re.search(r'<g class="mark-text role-mark readout_marks"[^>]*>(.*?)</g>', svg, re.S)
    assert group, f"{name} 的 SVG 里没有读数"
    return svg_texts(group.group(1))


@pytest.mark.parametrize("name", NAMES)
def test_bundle_has_html_chart_for_the_site_and_static_figure_for_the_pdf(figures, name):
    fig = figures[name]
    bundle = fig._repr_mimebundle_()
    assert set(bundle) == {"text/html", "application/pdf", "image/png", "text/plain"}
    assert base64.b64decode(bundle["application/pdf"]).startswith(b"%PDF")
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    page = bundle["text/html"]
    # 一个带 data-figure 名字的容器、一份图表说明、一个空绘图区、一张带替代文字的静态图
    assert page.count('class="interactive-figure"') == 1
    assert f'data-figure="{name}"' in page
    spec = re.search(r'<script type="application/json" class="interactive-figure-spec">'
                     r"(.*?)</script>", page, re.S)
    assert json.loads(spec.group(1)) == fig.spec
    assert '<div class="interactive-figure-chart"></div>' in page
    img = re.search(r'<img class="interactive-figure-static" alt="([^"]+)" '
                    r'src="data:image/svg\+xml;base64,([^"]+)">', page)
    assert img and base64.b64decode(img.group(2)).lstrip().startswith(b"<?xml")
    # 页面里只有数据：没有库代码、没有外部脚本或其他主机的地址（$schema 只是版本标记）
    assert "<script src" not in page and "vegaEmbed" not in page
    assert re.findall(r"https?://[^\"\s]+", page) == [interactive.SCHEMA]


@pytest.mark.parametrize("name", NAMES)
def test_spec_compiles_with_the_sites_vega_lite(figures, name):
    vega = vl_convert.vegalite_to_vega(figures[name].spec, vl_version=VL_VERSION)
    signals = {s["name"] for s in vega.get("signals", [])}
    bound = {s["name"] for s in vega.get("signals", []) if "bind" in s}
    assert bound, f"{name} 没有任何控件"
    assert signals


def test_score_weight_default_readout_is_minigpts_numbers(figures):
    t = cases.toy()
    texts = svg_texts(vl_convert.vegalite_to_svg(figures["s2-score-weight"].spec,
                                                 vl_version=VL_VERSION))
    assert readout("s2-score-weight", figures)[-1] == texts[-1]
    readout_ = texts[-1]
    s, w = t.scores[0, 2].item(), t.weights[0, 2].item()
    assert readout_ == (f"Query the，Key sat：q·k = {s:.4f}；"
                        f"除以 √{t.d_k} 后 = {s / t.d_k ** 0.5:.4f}；softmax 权重 = {w:.4f}")
    # 两张热力图的 18 个格子标着分数和权重（两位小数），与 matplotlib 静态图相同
    cells = sorted(x for x in texts if re.fullmatch(r"-?\d\.\d\d", x))
    expected = sorted(f"{v:.2f}" for v in [*t.scores.flatten().tolist(),
                                            *t.weights.flatten().tolist()])
    assert cells == expected


def test_saturation_starts_at_the_pages_d_k_with_its_numbers(figures):
    r = cases.saturation(64)
    first, second = readout("s2-softmax-saturation", figures)
    assert first == (f"dₖ = 64　这一次抽样的最大权重：不缩放 {r.max_weight:.2f}，"
                     f"除以 √dₖ 后 {r.scaled_max_weight:.2f}")
    assert second == (f"1000 次抽样的最大权重中位数：不缩放 {r.median_max_weight:.2f}，"
                      f"除以 √dₖ 后 {r.scaled_median_max_weight:.2f}")


def test_every_saturation_step_is_computed_by_minigpt(figures):
    spec = figures["s2-softmax-saturation"].spec
    shown = spec["usermeta"]["valuetext"]["dk"]
    bars = spec["vconcat"][0]["data"]["values"]
    assert [int(d) for d in shown] == list(interactive.SATURATION_DKS)
    for step, d_k in enumerate(interactive.SATURATION_DKS):
        r = cases.saturation(d_k)
        for variant, w in (("不缩放", r.weights), ("除以 √dₖ", r.scaled_weights)):
            got = [b["weight"] for b in bars if b["step"] == step and b["variant"] == variant]
            assert got == pytest.approx(w.tolist(), abs=1e-12), (d_k, variant)


def test_mask_toggle_starts_masked_with_zero_future_weights(figures):
    t = cases.toy()
    lines = readout("s3-causal-mask", figures)
    assert lines == ["因果遮蔽：开（每行之和为 1）"] + [
        f"{name} 这一行：" + "　".join(f"{w} {v:.4f}" for w, v in zip(t.labels, row))
        for name, row in zip(t.labels, t.masked_weights.tolist())]
    assert f"{t.masked_weights[1, 2].item():.4f}" == "0.0000"


def test_head_selector_starts_on_head_0(figures):
    labels, w = cases.heads()
    assert readout("s4-heads", figures) == [ "头 0 中 sat 这一行：" + "，".join(
        f"{name} {v:.2f}" for name, v in zip(labels, w[0, 2].tolist()))]


def test_path_length_starts_at_the_longest_sequence(figures):
    fp = cases.path_length()
    assert fp.rnn[-1] == 0.0  # 长度 160：float32 下范数下溢
    assert readout("ap-path-length", figures) == [(f"序列长度 {fp.lengths[-1]}：位置 0 的梯度范数 RNN 0（float32 下求范数时"
                         f"平方下溢），注意力 {fp.attention[-1]:.3e}")]




@pytest.mark.slow
def test_trained_head_explorer_starts_on_an_induction_head_in_the_copy(figures):
    tokens, weights, start, length = cases.trained_heads()
    last = len(tokens) - 1
    assert readout("s7-trained-heads", figures) == cases.trained_head_lines(1, 0, last)
    # 默认那一行（层 1 头 0 的最后一个位置）最大的权重就落在“上次出现处的下一个位置”上
    assert int(weights[1][0, 0, last].argmax()) == last - length + 1


@pytest.mark.slow
def test_trained_head_explorer_holds_every_row_of_every_head(figures):
    tokens, weights, _, _ = cases.trained_heads()
    bars = figures["s7-trained-heads"].spec["vconcat"][0]["data"]["values"]
    assert len(bars) == len(weights) * weights[0].shape[1] * len(tokens) ** 2
    for b in bars[:: 97]:
        expected = weights[b["layer"]][0, b["head"], b["pos"], b["key"]].item()
        assert b["weight"] == pytest.approx(expected, abs=5e-5)


def test_bad_input_gets_a_chinese_error():
    t = cases.toy()
    fig = plots.attention_heatmap(t.weights, t.labels, t.labels)
    plt.close(fig)
    with pytest.raises(ValueError, match=r"scores 的最后两维应该是 \[2, 2\]"):
        interactive.score_weight_explorer(t.scores, 4, t.weights, t.labels[:2], fig, "x")
    with pytest.raises(TypeError, match="static 应该是 matplotlib 的 Figure"):
        interactive.mask_toggle(t.weights, t.masked_weights, t.labels, "fig.png", "x")
    with pytest.raises(ValueError, match="start 应该是 d_k_values"):
        interactive.saturation_explorer(fig, "x", d_k_values=(4, 16), start=64)
    with pytest.raises(ValueError, match="weights_per_head 应该是"):
        interactive.head_selector(t.weights, t.labels, fig, "x")
    with pytest.raises(ValueError, match=r"weights\[0\] 应该是"):
        interactive.trained_head_explorer([t.weights], t.labels, fig, "x")
    with pytest.raises(ValueError, match="layer 应在 0..0"):
        interactive.trained_head_explorer([t.weights[None]], t.labels, fig, "x", layer=1)
