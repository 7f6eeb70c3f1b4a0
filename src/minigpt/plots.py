"""书中所有配图（见各节配图；字体与约定见本模块说明）。

约定：
- 每个函数新建一张图（pyplot 管理）并返回 `Figure`；不调用 plt.show，也不替你关闭。
  在 notebook 里写 `fig = plots.xxx(...)`，单元格结束时图会显示一次；
  不要让调用本身成为单元格的最后一个表达式，否则会显示两次。
- 导入本模块不改动 matplotlib 的任何全局设置。画图之前先调用一次
  `minigpt.notebook.setup_notebook()`（书页的第一个隐藏单元就这样做）
  或 `setup_chinese_font()`：它显式加载 Noto Sans CJK 字体
  （不依赖 matplotlib 的字体缓存），并设置 `axes.unicode_minus=False`
  与固定的 `svg.hashsalt`，保证中文不缺字、输出可复现。
- 热力图：行 = Query（正在看的 token），列 = Key（被看的 token），格子里标两位小数。
"""

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib import font_manager
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from .experiments import (
    DotProductStat, FirstPositionVsLength, SoftmaxSaturation, cumulative_mass,
    first_half_share,
)
from .leak import LeakRun

# 画图函数接受的数据：张量、numpy 数组或嵌套列表
ArrayLike = torch.Tensor | np.ndarray | Sequence

FONT_FAMILY = "Noto Sans CJK SC"
FONT_CANDIDATES = (
    # Debian / Ubuntu: fonts-noto-cjk
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/google-noto-cjk/NotoSansCJK-Regular.ttc",
)
HEATMAP_CMAP = "viridis"  # 两端都不是纯白 / 纯黑，在浅色和深色页面上都看得清
RNN_COLOR, ATTN_COLOR = "#1f77b4", "#ff7f0e"


def setup_chinese_font() -> str:
    """显式加载 Noto Sans CJK 并设为首选无衬线字体，返回字体文件路径（见本模块说明）。

    可用环境变量 MINIGPT_CJK_FONT 指定字体文件。找不到时抛出 RuntimeError，
    而不是让 matplotlib 退回 DejaVu 并发出 “Glyph missing” 警告。
    """
    candidates = [os.environ.get("MINIGPT_CJK_FONT"), *FONT_CANDIDATES]
    path = next((p for p in candidates if p and Path(p).is_file()), None)
    if path is None:
        raise RuntimeError(
            "找不到中文字体 Noto Sans CJK（查找过："
            + "、".join(FONT_CANDIDATES)
            + "）。"
            "请先安装：apt-get install fonts-noto-cjk"
            "（或用环境变量 MINIGPT_CJK_FONT 指向字体文件）"
        )
    if not any(f.fname == path and f.name == FONT_FAMILY
               for f in font_manager.fontManager.ttflist):
        font_manager.fontManager.addfont(path)
    matplotlib.rcParams.update({
        "font.family": "sans-serif",
        "font.sans-serif": [FONT_FAMILY, "DejaVu Sans"],
        "axes.unicode_minus": False,
        "svg.hashsalt": "minigpt",
    })
    return path



# ---------------------------------------------------------------- 小工具


def _np(t: ArrayLike) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        t = t.detach().cpu().double().numpy()
    return np.asarray(t, dtype=float)


def _new(nrows=1, ncols=1, figsize=(6.5, 4.0), **kw):
    return plt.subplots(nrows, ncols, figsize=figsize, layout="constrained", **kw)


def _cell_text(value: float) -> str:
    if math.isinf(value):
        return "-∞" if value < 0 else "∞"
    return f"{value:.2f}"


def _draw_heatmap(ax, values: np.ndarray, row_labels, col_labels, vmin, vmax,
                  cmap=HEATMAP_CMAP):
    """在 ax 上画一张带数字的热力图，返回 imshow 的结果（给 colorbar 用）。"""
    cmap = (matplotlib.colormaps[cmap].with_extremes(bad="#bdbdbd")
            if isinstance(cmap, str) else cmap)
    shown = np.ma.masked_invalid(values)
    im = ax.imshow(shown, cmap=cmap, vmin=vmin, vmax=vmax)
    for (i, j), v in np.ndenumerate(values):
        r, g, b, _ = cmap(im.norm(v)) if math.isfinite(v) else (0.74, 0.74, 0.74, 1)
        color = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
        ax.text(j, i, _cell_text(v), ha="center", va="center",
                color=color, fontsize=9)
    ax.set_xticks(range(values.shape[1]), labels=list(col_labels))
    ax.set_yticks(range(values.shape[0]), labels=list(row_labels))
    ax.set_xlabel("Key（被看的 token）")
    ax.set_ylabel("Query（正在看的 token）")
    return im


# ------------------------------------------------------------ 第 2、3、4 节：热力图


def attention_heatmap(weights: ArrayLike, row_labels: Sequence[str],
                      col_labels: Sequence[str], title: str | None = None,
                      ax: Axes | None = None, vmin: float | None = 0.0,
                      vmax: float | None = 1.0) -> Figure:
    """注意力权重热力图，每格标两位小数（见第 2 节 缩放点积注意力）。

    weights: [seq_q, seq_k]。画分数而不是权重时可传 vmin=None, vmax=None 自动取范围；
    -inf（被遮住的分数）显示为灰色并标 “-∞”。
    传入 ax 时画在 ax 上并返回它所在的 Figure。
    """
    values = _np(weights)
    fig, ax = _new(figsize=(4.8, 4.0)) if ax is None else (ax.figure, ax)
    im = _draw_heatmap(ax, values, row_labels, col_labels, vmin, vmax)
    fig.colorbar(im, ax=ax, shrink=0.8)
    if title:
        ax.set_title(title)
    return fig


def masked_vs_unmasked(before: ArrayLike, after: ArrayLike,
                       labels: Sequence[str],
                       titles: tuple[str, str] = ("不遮蔽：整行都分到权重",
                                                  "因果遮蔽：右上角归零")) -> Figure:
    """遮蔽前后的注意力权重并排对比（见第 3 节 因果遮蔽；
    第 7 节用它对比两个训练好的模型，另给两张图的标题 titles）。"""
    fig, axes = _new(1, 2, figsize=(7.0, 3.6))
    for ax, w, title in zip(axes, (before, after), titles):
        im = _draw_heatmap(ax, _np(w), labels, labels, 0.0, 1.0)
        ax.set_title(title)
    axes[1].set_ylabel("")
    fig.colorbar(im, ax=axes, shrink=0.8)
    return fig


def mask_matrix(mask: ArrayLike, labels: Sequence[str]) -> Figure:
    """画因果遮蔽矩阵：行 Query、列 Key，1 的格子绿色，0 的灰色
    （见第 3 节 因果遮蔽）。
    """
    values = (_np(mask) != 0).astype(float)
    fig, ax = _new(figsize=(3.8, 3.4))
    ax.imshow(values, cmap=ListedColormap(["#9e9e9e", "#2a9d8f"]), vmin=0, vmax=1)
    for (i, j), v in np.ndenumerate(values):
        ax.text(j, i, "1" if v else "0", ha="center", va="center",
                color="white", fontsize=12)
    ax.set_xticks(range(len(labels)), labels=list(labels))
    ax.set_yticks(range(len(labels)), labels=list(labels))
    ax.set_xlabel("Key（被看的 token）")
    ax.set_ylabel("Query（正在看的 token）")
    ax.set_title("因果遮蔽矩阵（下三角）")
    return fig


def leak_training(unmasked: LeakRun, masked: LeakRun) -> Figure:
    """不遮蔽 / 因果遮蔽两次训练的损失与“分给下一个位置的权重”
    （见第 3 节 因果遮蔽「训练会把偷看放大」）。

    左图另画两条水平线：瞎猜的损失 ln 10，以及不遮蔽时的下限 ln 10 / seq_len
    （最后一个位置的答案不在输入里，无处可抄）。

    unmasked, masked: `leak.train_next_token` 返回的 LeakRun。
    """
    fig, (ax_loss, ax_w) = _new(1, 2, figsize=(8.0, 3.4))
    for run, label, color in ((unmasked, "不遮蔽", RNN_COLOR),
                              (masked, "因果遮蔽", ATTN_COLOR)):
        steps = np.arange(1, len(run.losses) + 1)
        ax_loss.plot(steps, run.losses, color=color, label=label)
        ax_w.plot(steps, run.next_weight, color=color, label=label)
    ax_loss.axhline(masked.chance_loss, color="gray", linestyle="--",
                    label="瞎猜：ln 10")
    # 不遮蔽也抄不到最后一个位置的答案：平均损失的下限是 ln 10 / seq_len
    ax_loss.axhline(unmasked.chance_loss / unmasked.seq_len, color=RNN_COLOR,
                    linestyle=":", label=f"不遮蔽的下限：ln 10 / {unmasked.seq_len}")
    ax_loss.set_title("训练损失")
    ax_w.set_title("每个位置分给下一个位置的平均权重")
    ax_w.set_ylim(-0.03, 1.03)
    for ax in (ax_loss, ax_w):
        ax.set_xlabel("训练步数")
        ax.grid(True, alpha=0.3)
        ax.legend()
    return fig


def head_weights(weights_per_head: ArrayLike, labels: Sequence[str]) -> Figure:
    """每个头一张注意力热力图，共用一个颜色条（见第 4 节 多头注意力）。

    weights_per_head: [heads, seq, seq]（也接受 [1, heads, seq, seq]）。
    """
    values = _np(weights_per_head)
    if values.ndim == 4:
        values = values[0]
    heads = values.shape[0]
    fig, axes = _new(
        1, heads, figsize=(min(3.4 * heads + 0.8, 10.0), 3.6), squeeze=False
    )
    for h, ax in enumerate(axes[0]):
        im = _draw_heatmap(ax, values[h], labels, labels, 0.0, 1.0)
        ax.set_title(f"头 {h}")
        if h:
            ax.set_ylabel("")
    fig.colorbar(im, ax=axes[0], shrink=0.8)
    return fig


def _box(ax, xy, w, h, text, color, fontsize=10, *, dashed=False, linespacing=1.7):
    """结构图、数据流图里的一个圆角方框：左下角 xy，宽 w、高 h，text 居中；
    dashed 画虚线边框。"""
    x, y = xy
    ax.add_patch(FancyBboxPatch(
        (x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.12",
        facecolor=color, edgecolor="#333333", linewidth=1.2,
        linestyle="--" if dashed else "-",
    ))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center",
            fontsize=fontsize, color="black", linespacing=linespacing)


def multihead_diagram() -> Figure:
    """多头注意力示意图：X 进入 h 个头，每个头用自己的 W_i^Q、W_i^K、W_i^V
    做一次缩放点积注意力，h 个 [n, d_k] 的输出拼接后再乘 W_O（见第 4 节 多头注意力）。
    """
    fig, ax = plt.subplots(figsize=(9.0, 4.6), layout="constrained")
    ax.set_xlim(0, 19.4)
    ax.set_ylim(0, 9.2)
    ax.axis("off")
    match, data, out_c = "#fcd9b6", "#eeeeee", "#cde4f7"
    n_dm = r"$[n,\ d_{\mathrm{model}}]$"
    _box(ax, (0.2, 3.9), 2.2, 1.6, "$X$\n" + n_dm, data, 11)
    heads = {"0": 7.6, "1": 5.3, "h-1": 1.9}  # 每个头一行：中心的 y；头从 0 数起
    for i, yc in heads.items():
        ax.add_patch(FancyBboxPatch(
            (2.9, yc - 0.95), 8.4, 1.9, boxstyle="round,pad=0.02,rounding_size=0.2",
            facecolor="none", edgecolor="#9e9e9e", linewidth=1, linestyle="--",
        ))
        ax.text(3.55, yc, f"头 {i}" if i != "h-1" else "头 $h-1$", ha="center",
                va="center", fontsize=10)
        proj = rf"$\times\ W_{{{i}}}^{{Q,K,V}}$"  # 三个投影矩阵合写，免得标签宽过方框
        _box(ax, (4.3, yc - 0.65), 2.9, 1.3, proj, match, 10)
        _box(ax, (7.8, yc - 0.65), 3.2, 1.3, "缩放点积注意力", match, 10)
        _arrow(ax, (2.4, 4.7), (2.9, yc))
        _arrow(ax, (7.2, yc), (7.8, yc))
        _arrow(ax, (11.3, yc), (12.3, yc))
        ax.text(11.8, yc + 0.12, r"$[n,\ d_k]$", ha="center", va="bottom",
                fontsize=9)
    ax.text(7.1, 3.65, r"$\vdots$", ha="center", va="center", fontsize=16)
    _box(ax, (12.3, 0.9), 2.0, 7.7, "拼接\n" + r"$[n,\ h\,d_k]$", data, 10)
    _box(ax, (15.0, 3.95), 1.5, 1.5, r"$\times\ W_O$", out_c, 11)
    _arrow(ax, (14.3, 4.7), (15.0, 4.7))
    _box(ax, (17.1, 3.8), 2.2, 1.8, "输出\n" + n_dm, data, 10)
    _arrow(ax, (16.5, 4.7), (17.1, 4.7))
    ax.text(7.1, 0.35, r"每个头的投影：$d_{\mathrm{model}} \to d_k$；"
            r"本书取 $h\,d_k = d_{\mathrm{model}}$", ha="center", va="center",
            fontsize=9, color="#1f4e79")
    return fig


# ------------------------------------------------------------ 第 2 节：为什么是 √d_k


def variance_vs_dk(stats: Sequence[DotProductStat]) -> Figure:
    """图 2.1：不缩放时点积的方差与 d_k 成正比，缩放后与 d_k 无关
    （见第 2 节 缩放点积注意力「除数从方差里来」）。

    stats: `experiments.dot_product_stats` 的结果。
    """
    d = np.array([s.d_k for s in stats], dtype=float)
    fig, ax = _new()
    ax.plot(d, d, color="gray", linewidth=5, alpha=0.35, label=r"理论值 $d_k$")
    ax.plot(d, np.ones_like(d), color="gray", linewidth=5, alpha=0.35, linestyle=":",
            label="理论值 1")
    ax.plot(d, [s.var_unscaled for s in stats], "o-", color=RNN_COLOR,
            label=r"$\mathrm{Var}(q \cdot k)$：不缩放")
    ax.plot(d, [s.var_scaled for s in stats], "s-", color=ATTN_COLOR,
            label=r"$\mathrm{Var}(q \cdot k / \sqrt{d_k})$：缩放后")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(d, labels=[str(int(x)) for x in d])
    ax.set_xlabel(r"$d_k$（Query、Key 的宽度）")
    ax.set_ylabel("点积的方差（对数轴）")
    ax.set_title(r"不缩放：方差与 $d_k$ 成正比；缩放后：与 $d_k$ 无关，停在 1")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


def softmax_saturation_plot(result: SoftmaxSaturation) -> Figure:
    """同一组分数缩放前后的 softmax 权重对比
    （见第 2 节 缩放点积注意力「缩放」）。

    result: `experiments.softmax_saturation` 的结果。
    """
    fig, axes = _new(1, 2, figsize=(7.0, 3.4), sharey=True)
    keys = np.arange(result.n_keys)
    panels = (
        (result.weights, result.max_weight, result.grad_norm, "不缩放", RNN_COLOR),
        (result.scaled_weights, result.scaled_max_weight, result.scaled_grad_norm,
         r"除以 $\sqrt{d_k}$", ATTN_COLOR),
    )
    for ax, (w, top, grad, name, color) in zip(axes, panels):
        ax.bar(keys, _np(w), color=color)
        ax.set_title(f"{name}：最大权重 {top:.2f}，灵敏度 {grad:.3f}", fontsize=10)
        ax.set_xticks(keys)
        ax.set_xlabel("Key 编号")
        ax.set_ylim(0, 1)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("softmax 权重")
    fig.suptitle(f"$d_k = {result.d_k}$：不缩放时 softmax 几乎只选一个 Key")
    return fig


# ---------------------------------------------------------------- 附录：梯度实验


def gradient_curve(grad_norms: ArrayLike, title: str, logy: bool = False) -> Figure:
    """每个输入位置的梯度范数曲线
    （见附录 梯度能否传回远处「画成曲线」）。
    """
    g = _np(grad_norms)
    pos = np.arange(len(g))
    fig, ax = _new()
    ax.plot(pos, g, linewidth=2, color=RNN_COLOR)
    ax.scatter(pos, g, s=10, color=RNN_COLOR)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("序列位置")
    ax.set_ylabel("输入梯度范数" + ("（对数轴）" if logy else ""))
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    return fig


def length_sweep(results: Mapping[int, ArrayLike]) -> Figure:
    """不同序列长度下 RNN 的梯度，横轴为相对位置，纵轴对数
    （见附录 梯度能否传回远处「换几种长度」）。

    results: {长度: 梯度范数}，即 `experiments.rnn_length_sweep` 的结果。
    """
    fig, ax = _new()
    for n, g in results.items():
        ax.plot(np.linspace(0, 1, n), _np(g), label=f"seq_len={n}")
    ax.set_yscale("log")
    ax.set_xlabel("相对位置（0 = 开头，1 = 结尾）")
    ax.set_ylabel("输入梯度范数（对数轴）")
    ax.set_title("四种长度下 RNN 的输入梯度（对数纵轴）")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


def rnn_vs_attention(rnn_grads: ArrayLike, attn_grads: ArrayLike) -> Figure:
    """RNN 与注意力从最后一个位置反传的梯度对比，纵轴对数
    （见附录 梯度能否传回远处）。
    """
    fig, ax = _new()
    for g, name, color in ((rnn_grads, "RNN", RNN_COLOR),
                           (attn_grads, "注意力", ATTN_COLOR)):
        g = _np(g)
        ax.plot(np.arange(len(g)), g, label=name, color=color)
    ax.set_yscale("log")
    ax.set_xlabel("序列位置")
    ax.set_ylabel("输入梯度范数（对数轴）")
    ax.set_title("RNN 与注意力：各输入位置收到的梯度")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


def last_token_weights(weights: ArrayLike) -> Figure:
    """最后一个 token 对每个位置的注意力权重
    （见附录 梯度能否传回远处「末行的 80 个权重」）。
    """
    w = _np(weights)
    pos = np.arange(len(w))
    fig, ax = _new()
    ax.plot(pos, w, linewidth=2, color=ATTN_COLOR)
    ax.scatter(pos, w, s=10, color=ATTN_COLOR)
    ax.axhline(1 / len(w), color="gray", linestyle="--", label=f"平均分配 1/{len(w)}")
    ax.set_xlabel("Key 位置")
    ax.set_ylabel("注意力权重")
    ax.set_title("末尾的 Query 分给各位置的权重")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


def cumulative_mass_plot(rnn_grads: ArrayLike, attn_grads: ArrayLike) -> Figure:
    """梯度累计占比：从位置 0 起依次累加每个位置分到的份额
    （见附录 梯度能否传回远处「梯度落在前半段还是后半段」）。
    """
    fig, ax = _new()
    for g, name, color in ((rnn_grads, "RNN", RNN_COLOR),
                           (attn_grads, "注意力", ATTN_COLOR)):
        mass = _np(cumulative_mass(torch.as_tensor(_np(g))))
        share = first_half_share(torch.as_tensor(_np(g)))
        # 占比用 .2g：RNN 的 4.6e-09 不会被写成 0.0%
        ax.plot(np.arange(len(mass)), mass,
                label=f"{name}（前半段占比 {share:.2g}）", color=color)
    n = len(_np(rnn_grads))
    ax.axvline(n // 2 - 0.5, color="gray", linestyle=":", label="前半段 | 后半段")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("序列位置")
    ax.set_ylabel("累计梯度占比")
    ax.set_title("从位置 0 起累加的梯度份额")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    return fig


def first_position_vs_length(result: FirstPositionVsLength) -> Figure:
    """位置 0 的梯度随序列长度的变化，纵轴对数
    （见附录 梯度能否传回远处，补充实验）。

    result: `experiments.first_position_gradient_vs_length` 的结果。
    float32 下梯度本身仍可表示，但求范数时各分量的平方下溢，范数算成 0；
    这样的点画在图的底边，并标注 “范数在 float32 下溢为 0”。
    """
    lengths = np.array(result.lengths, dtype=float)
    rnn, attn = (np.array(result.rnn, dtype=float),
                 np.array(result.attention, dtype=float))
    positive = np.concatenate([rnn[rnn > 0], attn[attn > 0]])
    floor = positive.min() / 1e4
    fig, ax = _new()
    ax.plot(lengths, attn, "s-", color=ATTN_COLOR, label="注意力")
    ok = rnn > 0
    ax.plot(lengths[ok], rnn[ok], "o-", color=RNN_COLOR, label="RNN")
    for x in lengths[~ok]:
        ax.plot([x], [floor], "v", color=RNN_COLOR, markersize=9)
        ax.annotate("RNN：范数在 float32 下溢为 0", (x, floor),
                    textcoords="offset points", xytext=(-8, 10),
                    ha="right", color=RNN_COLOR, fontsize=9)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    if (~ok).any():
        ax.set_ylim(bottom=floor / 3)
    ax.set_xticks(lengths, labels=[str(int(x)) for x in lengths])
    ax.set_xlabel("序列长度")
    ax.set_ylabel("位置 0 的梯度范数（对数轴）")
    ax.set_title("序列变长时，最早位置还能收到多少梯度")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


# ---------------------------------------------------------------- 第 6 节：结构图


def _arrow(ax, start, end):
    ax.add_patch(FancyArrowPatch(
        start, end, arrowstyle="-|>", mutation_scale=14,
        color="#333333", linewidth=1.4, shrinkA=0, shrinkB=0,
    ))


def _residual(ax, y_from, y_to, label, x_right=8.5):
    """从主线的 y_from 处分出，绕到右边，再从右侧进入 y_to 处的 Add & Norm。"""
    ax.plot([5.0, x_right, x_right], [y_from, y_from, y_to],
            color="#c0392b", linewidth=1.6)
    ax.plot([5.0], [y_from], "o", color="#c0392b", markersize=5)
    _arrow_colored = FancyArrowPatch(
        (x_right, y_to), (7.4, y_to), arrowstyle="-|>", mutation_scale=14,
        color="#c0392b", linewidth=1.6, shrinkA=0, shrinkB=0,
    )
    ax.add_patch(_arrow_colored)
    ax.text(x_right + 0.15, (y_from + y_to) / 2, label,
            ha="left", va="center", fontsize=9, color="#c0392b")


def transformer_block_diagram() -> Figure:
    """Post-LN Transformer Block 结构图：自下而上，两条残差连接
    （见第 6 节 Transformer Block）。
    """
    fig, ax = plt.subplots(figsize=(6.0, 7.0), layout="constrained")
    ax.set_xlim(0, 10.5)
    ax.set_ylim(0, 12)
    ax.axis("off")
    ax.add_patch(FancyBboxPatch(
        (1.9, 1.45), 7.9, 8.35,
        boxstyle="round,pad=0.05,rounding_size=0.3",
        facecolor="#f4f4f4", edgecolor="#9e9e9e", linewidth=1, linestyle="--",
    ))
    ax.text(5.0, 0.55, "输入 x：[batch, seq_len, d_model]",
            ha="center", va="center", fontsize=11)
    _box(ax, (2.6, 2.4), 4.8, 1.2, "多头注意力\n（带因果遮蔽）", "#fcd9b6", 11,
         linespacing=1.2)
    _box(ax, (2.6, 4.5), 4.8, 0.8, "Add & Norm", "#fff3b0", 11,
         linespacing=1.2)
    _box(ax, (2.6, 6.3), 4.8, 1.2, "前馈网络（FFN）\n逐位置", "#cde4f7", 11,
         linespacing=1.2)
    _box(ax, (2.6, 8.4), 4.8, 0.8, "Add & Norm", "#fff3b0", 11,
         linespacing=1.2)
    ax.text(5.0, 11.2, "输出：[batch, seq_len, d_model]",
            ha="center", va="center", fontsize=11)
    _arrow(ax, (5.0, 0.9), (5.0, 2.4))    # x → Attention
    _arrow(ax, (5.0, 3.6), (5.0, 4.5))    # Attention → Add & Norm
    _arrow(ax, (5.0, 5.3), (5.0, 6.3))    # Add & Norm → FFN
    _arrow(ax, (5.0, 7.5), (5.0, 8.4))    # FFN → Add & Norm
    _arrow(ax, (5.0, 9.2), (5.0, 10.85))  # Add & Norm → 输出
    _residual(ax, 1.9, 4.9, "残差\n(+ x)")
    # 第二个子层加回的是第一个 Add & Norm 的输出 x′（式 6.4），不是 Block 的输入 x
    _residual(ax, 5.8, 8.8, "残差\n(+ x′)")
    # 左侧括号：这一整块重复 N 次
    ax.plot([1.55, 1.35, 1.35, 1.55], [1.6, 1.6, 9.65, 9.65],
            color="#333333", linewidth=1.3)
    ax.text(1.05, 5.6, "× N", ha="right", va="center", fontsize=14)
    ax.set_title("Transformer Block（Post-LN）", fontsize=12)
    return fig


def encoder_decoder_diagram() -> Figure:
    """原论文的编码器—解码器结构（自下而上），标出 GPT 只保留的那一侧
    （见第 6 节 Transformer Block）。

    左边一摞是编码器层，右边一摞是解码器层；解码器每层比编码器多一个
    读编码器输出的交叉注意力子层。GPT 去掉编码器，也就去掉了这个子层。
    """
    fig, ax = plt.subplots(figsize=(7.6, 7.4), layout="constrained")
    ax.set_xlim(0, 13)
    ax.set_ylim(0, 13.4)
    ax.axis("off")
    attn, norm, ffn, cross = "#fcd9b6", "#fff3b0", "#cde4f7", "#e6d3f0"
    w = 3.6
    enc_x, dec_x = 1.2, 7.6
    enc_c, dec_c = enc_x + w / 2, dec_x + w / 2
    # 两个 × N 的灰框
    for x0, y0, hh in ((enc_x - 0.35, 2.75, 5.1), (dec_x - 0.35, 2.75, 7.3)):
        ax.add_patch(FancyBboxPatch(
            (x0, y0), w + 0.7, hh, boxstyle="round,pad=0.05,rounding_size=0.25",
            facecolor="#f4f4f4", edgecolor="#9e9e9e", linewidth=1, linestyle="--",
        ))
    ax.text(enc_x - 0.55, 5.3, "× N", ha="right", va="center", fontsize=13)
    ax.text(dec_x + w + 0.55, 6.4, "× N", ha="left", va="center", fontsize=13)
    # 编码器：源序列 → 嵌入 + 位置编码 → [自注意力, Add & Norm, FFN, Add & Norm]
    ax.text(enc_c, 0.45, "源序列（例如待翻译的句子）",
            ha="center", va="center", fontsize=10)
    _box(ax, (enc_x, 1.2), w, 0.9, "嵌入 + 位置编码", "#e0e0e0", 9.5,
         linespacing=1.2)
    enc = [(3.0, 1.0, "多头自注意力\n（不遮蔽）", attn),
           (4.3, 0.6, "Add & Norm", norm),
           (5.2, 1.0, "前馈网络（FFN）", ffn),
           (6.5, 0.6, "Add & Norm", norm)]
    for y, h, text, color in enc:
        _box(ax, (enc_x, y), w, h, text, color, 9.5, linespacing=1.2)
    for y0, y1 in ((2.1, 3.0), (4.0, 4.3), (4.9, 5.2), (6.2, 6.5)):
        _arrow(ax, (enc_c, y0), (enc_c, y1))
    ax.text(enc_c, 8.85, "编码器", ha="center", va="center",
            fontsize=12, fontweight="bold")
    # 解码器：嵌入 + 位置编码 → [遮蔽自注意力, A&N, 交叉注意力, A&N, FFN, A&N]
    #         → 线性层 + softmax
    ax.text(dec_c, 0.45, "已生成的目标序列",
            ha="center", va="center", fontsize=10)
    _box(ax, (dec_x, 1.2), w, 0.9, "嵌入 + 位置编码", "#e0e0e0", 9.5,
         linespacing=1.2)
    dec = [(3.0, 1.0, "多头自注意力\n（带因果遮蔽）", attn, False),
           (4.3, 0.6, "Add & Norm", norm, False),
           (5.2, 1.0, "交叉注意力\n（读编码器输出）", cross, True),
           (6.5, 0.6, "Add & Norm", norm, True),
           (7.4, 1.0, "前馈网络（FFN）", ffn, False),
           (8.7, 0.6, "Add & Norm", norm, False)]
    for y, h, text, color, dashed in dec:
        _box(ax, (dec_x, y), w, h, text, color, 9.5, dashed=dashed,
             linespacing=1.2)
    for y0, y1 in ((2.1, 3.0), (4.0, 4.3), (4.9, 5.2), (6.2, 6.5),
                   (7.1, 7.4), (8.2, 8.7), (9.3, 10.45)):
        _arrow(ax, (dec_c, y0), (dec_c, y1))
    _box(ax, (dec_x, 10.45), w, 0.8, "线性层 + softmax", "#e0e0e0", 9.5,
         linespacing=1.2)
    _arrow(ax, (dec_c, 11.25), (dec_c, 11.9))
    ax.text(dec_c, 12.2, "下一个 token 的概率", ha="center", va="center", fontsize=10)
    ax.text(dec_c, 12.85, "解码器", ha="center", va="center",
            fontsize=12, fontweight="bold")
    # 编码器输出 → 每个解码器层的交叉注意力
    ax.plot([enc_c, enc_c, 6.4, 6.4], [7.1, 8.25, 8.25, 5.7],
            color="#7b4fa0", linewidth=1.6)
    ax.add_patch(FancyArrowPatch(
        (6.4, 5.7), (dec_x, 5.7), arrowstyle="-|>", mutation_scale=14,
        color="#7b4fa0", linewidth=1.6, shrinkA=0, shrinkB=0,
    ))
    ax.text(5.0, 8.4, "编码器输出", ha="center", va="bottom",
            fontsize=9, color="#7b4fa0")
    # 图例：虚线框 = GPT 没有的子层
    ax.text(enc_c, 11.6, "虚线框：GPT（只有解码器）\n没有的子层",
            ha="center", va="center", fontsize=9.5, color="#555555")
    ax.set_title("原论文的编码器—解码器结构", fontsize=12)
    return fig


# ------------------------------------------------------ 第 1 节：Q/K/V 数据流图


def qkv_dataflow_diagram() -> Figure:
    """Q/K/V 数据流图：X 经三个投影变成 Q、K、V，Q 与 K 算注意力分数，
    softmax 得到注意力权重，再用权重对 V 加权求和（见第 1 节 注意力在做什么）。

    上面一路（Q、K）决定“从谁那里取、取多少”，下面一路（V）决定“取到的是什么”。
    """
    fig, ax = plt.subplots(figsize=(9.0, 4.2), layout="constrained")
    ax.set_xlim(0, 18)
    ax.set_ylim(0, 8.4)
    ax.axis("off")
    match, content, data = "#fcd9b6", "#cde4f7", "#eeeeee"
    n_dm = r"$[n,\ d_{\mathrm{model}}]$"
    n_dk = r"$[n,\ d_k]$"
    # 输入与三个投影
    _box(ax, (0.2, 3.4), 2.2, 1.6, "$X$\n" + n_dm, data, 11)
    rows = {"Q": 6.4, "K": 3.4, "V": 0.4}
    names = {"Q": "Query", "K": "Key", "V": "Value"}
    for r, y in rows.items():
        color = content if r == "V" else match
        _box(ax, (3.4, y), 1.9, 1.6, rf"$\times\ W_{r}$", color, 11)
        label = f"${r}$（{names[r]}）\n" + n_dk
        _box(ax, (6.2, y), 2.4, 1.6, label, color, 10)
        _arrow(ax, (2.4, 4.2), (3.4, y + 0.8))
        _arrow(ax, (5.3, y + 0.8), (6.2, y + 0.8))
    # Q、K → 注意力分数 → softmax → 注意力权重
    scores = "缩放后的分数\n" + r"$QK^\top/\sqrt{d_k}$"
    _box(ax, (9.6, 4.9), 2.5, 1.6, scores, match, 10)
    _arrow(ax, (8.6, 7.2), (9.6, 6.0))
    _arrow(ax, (8.6, 4.2), (9.6, 5.4))
    _box(ax, (12.8, 4.9), 2.4, 1.6, "softmax\n（每行和为 1）", match, 10)
    _arrow(ax, (12.1, 5.7), (12.8, 5.7))
    weights = "注意力权重 $A$\n" + r"$[n,\ n]$"
    _box(ax, (12.8, 2.4), 2.4, 1.6, weights, match, 10)
    _arrow(ax, (14.0, 4.9), (14.0, 4.0))
    # 权重与 V → 加权求和 → 输出
    _box(ax, (15.6, 0.4), 2.2, 1.6, "输出 $AV$\n" + n_dk, data, 10)
    _arrow(ax, (15.2, 3.2), (16.7, 2.0))
    _arrow(ax, (8.6, 1.2), (15.6, 1.2))
    ax.text(11.9, 1.45, "$V$ 的各行以 $A$ 为系数相加", ha="center",
            va="bottom", fontsize=9, color="#1f4e79")
    ax.text(9.6, 7.55, "$Q$ 与 $K$：决定从谁那里取、取多少", ha="left",
            va="center", fontsize=9, color="#8a4b08")
    return fig


# ------------------------------------------------------------ 第 7 节：训练出来的头


def training_curves(runs: Mapping[str, Sequence[float]], chance: float,
                    chance_label: str) -> Figure:
    """几次训练的损失曲线，另画一条水平虚线表示瞎猜的损失（见第 7 节 训练出来的头）。

    runs: {图例文字: 每一步的损失}。
    """
    fig, ax = _new(figsize=(6.5, 3.4))
    colors = (ATTN_COLOR, RNN_COLOR, "#2a9d8f")
    for (label, losses), color in zip(runs.items(), colors):
        steps = np.arange(1, len(losses) + 1)
        ax.plot(steps, losses, color=color, label=label, lw=1.2)
    ax.axhline(chance, color="gray", linestyle="--", label=chance_label)
    ax.set_xlabel("训练步数")
    ax.set_ylabel("训练损失")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


def phase_change(curves: Mapping[int, Mapping[str, Sequence[float]]], bold: int,
                 chance: float, threshold: float) -> Figure:
    """相变图（见第 7 节「相变」）：上图是能抄位置的损失和其余位置的损失，
    下图是两个角色的分数，横轴是训练步数。每个种子一条细线，种子 bold 画粗线。

    curves: {种子: `training.phase_curves` 的结果}。
    """
    fig, (top, bottom) = _new(2, 1, figsize=(6.5, 5.6), sharex=True)
    series = ((top, "copy", ATTN_COLOR, "能抄位置"),
              (top, "other", "#7a7a7a", "其余位置"),
              (bottom, "previous", RNN_COLOR, "前一个 token 分数（第一层最高）"),
              (bottom, "induction", "#2a9d8f", "归纳分数（第二层最低）"))
    for ax, key, color, label in series:
        for seed, c in curves.items():
            main = seed == bold
            ax.plot(c["step"], c[key], color=color, lw=2.0 if main else 0.8,
                    alpha=1.0 if main else 0.35,
                    label=f"{label}（种子 {seed}）" if main else None)
    top.axhline(chance, color="gray", linestyle="--", lw=1, label="瞎猜：ln 16")
    bottom.axhline(threshold, color="gray", linestyle=":", lw=1,
                   label=f"门槛 {threshold}")
    top.set_ylabel("损失")
    bottom.set_ylabel("分数")
    bottom.set_xlabel("训练步数")
    top.set_ylim(bottom=0)
    bottom.set_ylim(0, 1)
    for ax, corner in ((top, "center right"), (bottom, "lower right")):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc=corner)
    return fig


def layer_head_maps(weights: Sequence[ArrayLike], labels: Sequence[str],
                    marks: Sequence[tuple[int, int]] = ()) -> Figure:
    """每层每个头一张注意力热力图（不标数字，序列长时看颜色），排成“层 × 头”的网格
    （见第 7 节 训练出来的头）。

    weights: 按层排列，每项 [heads, seq, seq]（也接受 [1, heads, seq, seq]）；
    marks: 要圈出来的格子 (行, 列)，例如归纳头该看的位置，每张图都圈同样的格子。
    """
    values = [_np(w)[0] if _np(w).ndim == 4 else _np(w) for w in weights]
    layers, heads = len(values), values[0].shape[0]
    fig, axes = _new(layers, heads, figsize=(3.3 * heads + 0.9, 3.2 * layers),
                     squeeze=False)
    for l, row in enumerate(axes):
        for h, ax in enumerate(row):
            im = ax.imshow(values[l][h], cmap=HEATMAP_CMAP, vmin=0.0, vmax=1.0)
            if marks:
                r, c = zip(*marks)
                ax.scatter(c, r, s=22, facecolors="none", edgecolors="#ff2d78",
                           linewidths=1.0)
            ticks = range(len(labels))
            ax.set_xticks(ticks, labels=list(labels), fontsize=6)
            ax.set_yticks(ticks, labels=list(labels), fontsize=6)
            ax.set_title(f"层 {l} · 头 {h}", fontsize=10)
            if l == layers - 1:
                ax.set_xlabel("Key（被看的位置）", fontsize=9)
            if h == 0:
                ax.set_ylabel("Query（正在看的位置）", fontsize=9)
    fig.colorbar(im, ax=axes, shrink=0.6)
    return fig


def sentence_head_maps(weights: Sequence[ArrayLike],
                       sentences: Sequence[Sequence[str]]) -> Figure:
    """几句话、每句每个头一张带数字的注意力热力图：行 = 句子，列 = 头
    （见第 7 节「一张热力图能说明什么」）。

    weights: 每句一项 [heads, seq, seq]（也接受 [1, heads, seq, seq]）。
    """
    values = [_np(w)[0] if _np(w).ndim == 4 else _np(w) for w in weights]
    n, heads = len(values), values[0].shape[0]
    fig, axes = _new(n, heads, figsize=(3.4 * heads + 0.9, 2.9 * n), squeeze=False)
    for s, row in enumerate(axes):
        for h, ax in enumerate(row):
            im = _draw_heatmap(ax, values[s][h], sentences[s], sentences[s], 0.0, 1.0)
            ax.set_title(f"“{' '.join(sentences[s])} …”　头 {h}", fontsize=9)
            ax.tick_params(labelsize=8)
            if h:
                ax.set_ylabel("")
            if s < n - 1:
                ax.set_xlabel("")
    fig.colorbar(im, ax=axes, shrink=0.5)
    return fig
