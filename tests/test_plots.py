"""配图：每个函数返回 Figure、坐标轴个数对、绘制时没有任何警告（包括 Glyph missing）、中文字体生效。"""

import io
import re
import warnings

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.font_manager import FontProperties, findfont

from minigpt import plots
from minigpt.attention import causal_mask, scaled_dot_product_attention
from minigpt.data import make_toy_example
from minigpt.experiments import FirstPositionVsLength, dot_product_stats, softmax_saturation
from minigpt.leak import LeakRun

LABELS = ["the", "cat", "sat"]


@pytest.fixture(scope="module", autouse=True)
def font_path():
    """画图之前装好中文字体（书页里由 setup_notebook 完成）。"""
    return plots.setup_chinese_font()


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _weights(masked=False):
    t = make_toy_example()
    return scaled_dot_product_attention(t.Q, t.K, t.V, causal_mask(3) if masked else None)[1]


def _grads(n=20, decay=0.5):
    return torch.tensor([decay ** (n - 1 - i) for i in range(n)])


CASES = {
    "attention_heatmap": (lambda: plots.attention_heatmap(_weights(), LABELS, LABELS, title="权重"), 2),
    "masked_vs_unmasked": (lambda: plots.masked_vs_unmasked(_weights(), _weights(True), LABELS), 3),
    "mask_matrix": (lambda: plots.mask_matrix(causal_mask(3), LABELS), 1),
    "leak_training": (lambda: plots.leak_training(
        LeakRun(masked=False, seq_len=8, losses=[2.3, 1.0, 0.4], next_weight=[0.12, 0.8, 0.98],
                chance_loss=2.30, eval_loss_masked=4.6, eval_loss_by_position=[0.0] * 7 + [2.3]),
        LeakRun(masked=True, seq_len=8, losses=[2.3, 2.3, 2.3], next_weight=[0.0, 0.0, 0.0],
                chance_loss=2.30, eval_loss_masked=2.3, eval_loss_by_position=[2.3] * 8)), 2),
    "head_weights": (lambda: plots.head_weights(torch.stack([_weights(), _weights(True)]), LABELS), 3),
    "variance_vs_dk": (lambda: plots.variance_vs_dk(dot_product_stats(n_samples=500)), 1),
    "softmax_saturation_plot": (lambda: plots.softmax_saturation_plot(softmax_saturation(n_trials=50)), 2),
    "gradient_curve": (lambda: plots.gradient_curve(_grads(), "RNN 的输入梯度"), 1),
    "gradient_curve_log": (lambda: plots.gradient_curve(_grads(), "对数轴", logy=True), 1),
    "length_sweep": (lambda: plots.length_sweep({n: _grads(n) for n in (10, 20)}), 1),
    "rnn_vs_attention": (lambda: plots.rnn_vs_attention(_grads(), _grads(decay=0.9)), 1),
    "last_token_weights": (lambda: plots.last_token_weights(torch.softmax(torch.randn(20), 0)), 1),
    "cumulative_mass_plot": (lambda: plots.cumulative_mass_plot(_grads(), _grads(decay=0.9)), 1),
    "first_position_vs_length": (lambda: plots.first_position_vs_length(
        FirstPositionVsLength(lengths=(10, 20, 40), rnn=(1e-4, 1e-9, 0.0),
                              attention=(1e-3, 5e-4, 2e-4))), 1),
    "transformer_block_diagram": (plots.transformer_block_diagram, 1),
    "encoder_decoder_diagram": (plots.encoder_decoder_diagram, 1),
    "multihead_diagram": (plots.multihead_diagram, 1),
}


@pytest.mark.parametrize("name", CASES)
def test_plot_returns_figure_without_warnings(name):
    make, n_axes = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = make()
        fig.canvas.draw()  # 真正排版文字：缺字警告只在绘制时出现
        fig.savefig(io.BytesIO(), format="svg")
    assert isinstance(fig, Figure)
    assert len(fig.axes) == n_axes


def _outside_math(text: str) -> str:
    """去掉 mathtext 公式（$...$）之后剩下的文字。"""
    return re.sub(r"\$[^$]*\$", "", text)


def test_outside_math_keeps_only_plain_text():
    assert _outside_math(r"理论值 $d_k$，d_k") == "理论值 ，d_k"
    assert _outside_math(r"$\sqrt{d_k}$") == ""


@pytest.mark.parametrize("name", [*CASES, "qkv_dataflow_diagram"])
def test_figure_text_writes_d_k_as_math(name):
    """正文把 d_k 写成公式 $d_k$：图里的标题、图例、坐标轴、方框文字也一样，不出现带下划线的 “d_k”。"""
    make = plots.qkv_dataflow_diagram if name == "qkv_dataflow_diagram" else CASES[name][0]
    fig = make()
    raw = [t.get_text() for t in fig.findobj(Text) if "d_k" in _outside_math(t.get_text())]
    assert not raw, f"{name} 的图里有没写成公式的 d_k：{raw}"


def test_heatmap_annotates_every_cell_with_two_decimals():
    fig = plots.attention_heatmap(_weights(), LABELS, LABELS)
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"0.25", "0.28", "0.47", "0.39", "0.36"} <= texts
    assert len(fig.axes[0].texts) == 9
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == LABELS


def test_heatmap_draws_on_given_axes():
    fig, ax = plt.subplots()
    assert plots.attention_heatmap(_weights(), LABELS, LABELS, ax=ax) is fig


def test_heatmap_marks_masked_scores_as_minus_infinity():
    s = torch.tensor([[0.2, float("-inf")], [0.3, 0.5]])
    fig = plots.attention_heatmap(s, ["a", "b"], ["a", "b"], vmin=None, vmax=None)
    assert "-∞" in {t.get_text() for t in fig.axes[0].texts}


def test_block_diagram_uses_the_book_terms():
    fig = plots.transformer_block_diagram()
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    for label in ("Add & Norm", "前馈网络", "多头注意力", "因果遮蔽", "× N", "残差"):
        assert label in texts
    assert texts.count("Add & Norm") == 2
    # 两条残差各自加回本子层的输入：第一条是 x，第二条是第一个 Add & Norm 的输出 x′
    residuals = [t.get_text() for t in fig.axes[0].texts if t.get_text().startswith("残差")]
    assert residuals == ["残差\n(+ x)", "残差\n(+ x′)"]


def test_encoder_decoder_diagram_has_cross_attention_only_in_the_decoder():
    fig = plots.encoder_decoder_diagram()
    texts = [t.get_text() for t in fig.axes[0].texts]
    joined = " ".join(texts)
    for label in ("编码器", "解码器", "交叉注意力", "因果遮蔽", "不遮蔽", "编码器输出", "× N", "softmax"):
        assert label in joined, label
    assert joined.count("Add & Norm") == 5   # 编码器每层 2 个，解码器每层 3 个
    assert sum("交叉注意力" in t for t in texts) == 1


def test_leak_plot_draws_the_unmasked_floor_ln10_over_seq_len():
    make, _ = CASES["leak_training"]
    fig = make()
    lines = {line.get_label(): line.get_ydata()[0] for line in fig.axes[0].get_lines()}
    assert lines["瞎猜：ln 10"] == pytest.approx(2.30)
    assert lines["不遮蔽的下限：ln 10 / 8"] == pytest.approx(2.30 / 8)


def test_multihead_diagram_shows_heads_concat_and_output_projection():
    fig = plots.multihead_diagram()
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    for label in ("头 0", "头 1", "头 $h-1$", "缩放点积注意力", "拼接", "W_O", "W_{0}^{Q,K,V}", "W_{h-1}^{Q,K,V}",
                  r"[n,\ d_k]", r"h\,d_k", "输出"):
        assert label in texts, label
    assert texts.count("缩放点积注意力") == 3
    # d_k、d_model 只出现在 mathtext（$...$）里，不以带下划线的原始写法出现
    outside_math = re.sub(r"\$[^$]*\$", "", texts)
    assert "d_k" not in outside_math and "d_model" not in outside_math, outside_math
    assert "attention" not in texts.lower()


def test_multihead_diagram_labels_fit_inside_their_boxes():
    """每个头的投影标签（× W_i^{Q,K,V}）和“缩放点积注意力”都落在自己的方框里，不压到行标签和箭头上。"""
    fig = plots.multihead_diagram()
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [p.get_window_extent(renderer) for p in ax.patches]
    labels = [t for t in ax.texts if "W_{" in t.get_text() or t.get_text() == "缩放点积注意力"]
    assert len(labels) == 6
    for label in labels:
        ext = label.get_window_extent(renderer)
        cx, cy = (ext.x0 + ext.x1) / 2, (ext.y0 + ext.y1) / 2
        inner = min((b for b in boxes if b.x0 <= cx <= b.x1 and b.y0 <= cy <= b.y1),
                    key=lambda b: b.width * b.height)
        assert inner.x0 <= ext.x0 and ext.x1 <= inner.x1, (label.get_text(), ext, inner)
    plt.close(fig)


def test_cjk_font_is_in_use(font_path):
    assert matplotlib.rcParams["font.sans-serif"][0] == plots.FONT_FAMILY == "Noto Sans CJK SC"
    assert findfont(FontProperties(family=["sans-serif"])) == font_path
    assert matplotlib.rcParams["axes.unicode_minus"] is False
    assert matplotlib.rcParams["svg.hashsalt"]


def test_missing_font_raises_clear_error(monkeypatch):
    monkeypatch.setattr(plots, "FONT_CANDIDATES", ("/nonexistent/font.ttc",))
    monkeypatch.delenv("MINIGPT_CJK_FONT", raising=False)
    with pytest.raises(RuntimeError, match="apt-get install fonts-noto-cjk"):
        plots.setup_chinese_font()


def test_svg_output_is_deterministic():
    def svg():
        buf = io.BytesIO()
        plots.masked_vs_unmasked(_weights(), _weights(True), LABELS).savefig(
            buf, format="svg", metadata={"Date": None})
        return buf.getvalue()
    assert svg() == svg()


def test_qkv_dataflow_diagram_draws_every_stage_with_canonical_terms():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plots.qkv_dataflow_diagram()
        fig.canvas.draw()
        fig.savefig(io.BytesIO(), format="svg")
    texts = [t.get_text() for t in fig.axes[0].texts]
    joined = " ".join(texts)
    for label in ("W_Q", "W_K", "W_V", "Query", "Key", "Value", "缩放后的分数", "softmax", "注意力权重", "AV"):
        assert label in joined, label
    # 第 2 节和术语表里“注意力分数”是未缩放的 QKᵀ：图里除以 √d_k 之后的那一格不能叫这个名字
    scaled = [t for t in texts if r"\sqrt{d_k}" in t]
    assert scaled and all("注意力分数" not in t for t in scaled), scaled
    assert "attention" not in joined.lower()  # 图里用中文术语，不混用英文


def test_saturation_plot_calls_the_jacobian_norm_sensitivity_as_the_page_does():
    fig = plots.softmax_saturation_plot(softmax_saturation(n_trials=50))
    titles = [ax.get_title() for ax in fig.axes]
    assert all("灵敏度" in t and "梯度范数" not in t for t in titles), titles


def test_importing_plots_changes_no_matplotlib_setting():
    """导入 minigpt.plots 不装字体、不改 rcParams；这些只在 setup_notebook() 里做。"""
    import subprocess
    import sys

    script = (
        "import matplotlib, matplotlib.pyplot\n"
        "from matplotlib import font_manager\n"
        "before = (dict(matplotlib.rcParams), len(font_manager.fontManager.ttflist))\n"
        "import minigpt.plots\n"
        "after = (dict(matplotlib.rcParams), len(font_manager.fontManager.ttflist))\n"
        "changed = sorted(k for k in before[0] if before[0][k] != after[0][k])\n"
        "print(changed, before[1], after[1])\n"
        "assert not changed and before[1] == after[1]\n"
        "from minigpt.notebook import setup_notebook\n"
        "setup_notebook()\n"
        "assert matplotlib.rcParams['font.sans-serif'][0] == minigpt.plots.FONT_FAMILY\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr

