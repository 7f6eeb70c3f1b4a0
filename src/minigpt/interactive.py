"""网页上的交互图（见第 2 节、第 3 节、第 4 节和附录里带控件的图）。

每个函数接收页面上已经算好的张量（或用页面的种子调用 minigpt 现算），
把所有要显示的数先在 Python 里算好、格式化好，写进一份 Vega-Lite 图表说明；
浏览器里的 JavaScript 只负责按控件的状态挑出其中一组显示，不做任何模型计算。

返回的 `InteractiveFigure` 是一个“多格式”输出，myst-nb 按构建器挑选：
- 网站（HTML）取 ``text/html``：图表说明 + 一个空的绘图区 + 同一张静态图
  （没有 JavaScript 或脚本没加载时就显示它；交互图画好后把它藏起来）；
- PDF（LaTeX）取 ``application/pdf``：和原来一样的 matplotlib 静态图；
- 其他前端（例如下载的 .ipynb）可取 ``image/png`` 或 ``text/plain``。
网页只带数据和说明，不带库代码：Vega 的 JavaScript 由站点扩展
``book/_ext/book_interactive.py`` 在构建时从 vl-convert-python 生成，放在本站的
``_static/interactive/`` 里，只挂到有交互图的页面上。
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import unicodedata

import matplotlib
import numpy as np
import torch
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from .experiments import softmax_saturation

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"  # 只是版本标记，不会被下载
HIGHLIGHT = "#ff2d78"      # 选中格子的描边：在 viridis 的紫、绿、黄上都显眼
RNN_COLOR, ATTN_COLOR = "#1f77b4", "#ff7f0e"   # 与 minigpt.plots 一致
CELL = 56                  # 热力图每格的边长（像素）
SATURATION_DKS = (4, 8, 16, 32, 64, 128, 256)


class InteractiveFigure:
    """一张交互图：网页用 Vega-Lite，PDF 用同一张 matplotlib 静态图
    （见第 2、3、4 节和附录里带控件的图）。

    name 是 ``data-figure`` 的值（测试靠它找到图）；spec 是 Vega-Lite 图表说明，
    其中 ``description`` 是交互图给读屏软件的说明；static 是页面原来的 matplotlib 图，
    alt 是它的替代文字（与页面上 ``{glue:figure}`` 的 ``:alt:`` 相同）。
    """

    def __init__(self, name: str, spec: dict, static: Figure, alt: str):
        if not isinstance(static, Figure):
            raise TypeError(
                "static 应该是 matplotlib 的 Figure，"
                f"收到的是 {type(static).__name__}"
            )
        if not name or not name.replace("-", "").isalnum():
            raise ValueError(f"name 只能由字母、数字和连字符组成，收到的是 {name!r}")
        self.name, self.alt = name, alt
        if not spec.get("description"):
            raise ValueError("spec 里要有 description：交互图给读屏软件的文字说明")
        self.spec = {"$schema": SCHEMA, **spec}
        self.static = static
        self._pdf = _savefig(static, "pdf")
        self._png = _savefig(static, "png", dpi=110)
        self._svg = _savefig(static, "svg")

    def to_html(self) -> str:
        """网页上的那一段 HTML：图表说明（JSON）、绘图区、静态图
        （见第 2、3、4 节和附录里带控件的图）。"""
        spec = json.dumps(self.spec, ensure_ascii=False, separators=(",", ":"))
        spec = spec.replace("</", "<\\/")  # 不让字符串里的 "</script>" 提前结束脚本
        svg = base64.b64encode(self._svg).decode("ascii")
        return (
            f'<div class="interactive-figure" data-figure="{html.escape(self.name)}">'
            f'<script type="application/json" class="interactive-figure-spec">{spec}'
            "</script>"
            '<div class="interactive-figure-chart"></div>'
            f'<img class="interactive-figure-static" alt="{html.escape(self.alt)}" '
            f'src="data:image/svg+xml;base64,{svg}">'
            "</div>"
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {
            "text/html": self.to_html(),
            "application/pdf": base64.b64encode(self._pdf).decode("ascii"),
            "image/png": base64.b64encode(self._png).decode("ascii"),
            "text/plain": f"<交互图 {self.name}：{self.alt}>",
        }


def _savefig(fig: Figure, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    # 元数据里不写日期和版本号，输出才可复现
    meta = {"svg": {"Date": None}, "pdf": {"CreationDate": None},
            "png": {"Software": None}}[fmt]
    fig.savefig(buf, format=fmt, metadata=meta, **kw)
    return buf.getvalue()


# ---------------------------------------------------------------- 小工具


def _values(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        t = t.detach().cpu().double().numpy()
    return np.asarray(t, dtype=float)


def _ink(value: float, vmin: float, vmax: float) -> str:
    """格子里文字的颜色：与 minigpt.plots 的热力图同一规则（亮底黑字、暗底白字）。"""
    r, g, b, _ = matplotlib.colormaps["viridis"](Normalize(vmin, vmax)(value))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _check_square(name: str, values: np.ndarray, labels) -> None:
    n = len(labels)
    if values.shape[-2:] != (n, n):
        raise ValueError(
            f"{name} 的最后两维应该是 [{n}, {n}]（与 labels 的长度一致），"
            f"收到的形状是 {list(values.shape)}"
        )


def _heatmap_cells(values: np.ndarray, labels, vmin: float, vmax: float,
                   **extra) -> list[dict]:
    return [
        {"query": labels[i], "key": labels[j], "value": float(v),
         "text": f"{v:.2f}", "ink": _ink(v, vmin, vmax),
         "desc": f"Query {labels[i]}，Key {labels[j]}：{v:.2f}", **extra}
        for (i, j), v in np.ndenumerate(values)
    ]


def _heatmap(labels, vmin: float, vmax: float, title: str | None,
             select=None) -> dict:
    """一张热力图（格子 + 两位小数），行 = Query，列 = Key，与静态图同一约定。"""
    sort = list(labels)
    # 选中的格子描一圈边（没有选择的图不描边）
    stroke = ({"stroke": {"value": HIGHLIGHT},
               "strokeOpacity": {"condition": {"param": select, "empty": False,
                                               "value": 1}, "value": 0}}
              if select else {})
    return {
        "width": CELL * len(labels), "height": CELL * len(labels),
        "encoding": {
            "x": {"field": "key", "type": "nominal", "sort": sort,
                  "title": "Key（被看的 token）", "axis": {"labelAngle": 0}},
            "y": {"field": "query", "type": "nominal", "sort": sort,
                  "title": "Query（正在看的 token）"},
        },
        "layer": [
            {"mark": {"type": "rect", "strokeWidth": 4},
             "encoding": {
                 "color": {"field": "value", "type": "quantitative",
                           "scale": {"scheme": "viridis", "domain": [vmin, vmax],
                                     "nice": False},
                           "legend": {"title": title, "gradientLength": 120}},
                 **stroke,
                 "description": {"field": "desc"},
                 "tooltip": {"field": "desc"},
             }},
            {"mark": {"type": "text", "fontSize": 13},
             "encoding": {"text": {"field": "text"},
                          "color": {"condition": {"test": "datum.ink == 'black'",
                                                  "value": "black"},
                                    "value": "white"},
                          "description": {"field": "desc"},
                          "tooltip": {"field": "desc"}}},
        ],
    }


def _text_width(line: str, size: float = 13) -> int:
    """一行读数大约多宽（像素）：汉字和全角标点一个字号宽，其余约 0.6 个字号。"""
    wide = sum(unicodedata.east_asian_width(ch) in "WF" for ch in line)
    return math.ceil(size * wide + 0.6 * size * (len(line) - wide))


def _readout(rows: list[dict], filter_) -> dict:
    """图下方的一行（或几行）读数：文字在 Python 里写好，这里只按控件挑一条。"""
    return {
        "data": {"values": rows},
        "transform": [{"filter": filter_}],
        "width": max(_text_width(line)
                     for r in rows for line in r["text"].split("\n")),
        "height": 16 * max(r["text"].count("\n") + 1 for r in rows),
        "mark": {"type": "text", "align": "left", "baseline": "top", "x": 0, "y": 0,
                 "fontSize": 13, "lineBreak": "\n", "lineHeight": 16},
        "encoding": {"text": {"field": "text"}, "description": {"field": "text"}},
        "name": "readout",
    }


def _config() -> dict:
    # 背景透明：浅色、深色主题下都透出页面底色；坐标轴等的文字颜色由站点 CSS 跟随主题
    return {"background": None, "view": {"stroke": None},
            "font": ("Noto Sans CJK SC, Noto Sans SC, PingFang SC, Microsoft YaHei, "
                     "sans-serif"),
            "axis": {"labelFontSize": 12, "titleFontSize": 12},
            "legend": {"labelFontSize": 11, "titleFontSize": 12},
            "header": {"labelFontSize": 13, "titleFontSize": 13}}


def _step_bind(param: str, label: str, shown: list[str],
               value: int) -> tuple[dict, dict]:
    """滑块：按档位（0, 1, 2 …）移动。

    每档的显示文字放在 usermeta 里，由页面脚本换掉滑块旁的档位数字。
    """
    return ({"name": param, "value": value,
             "bind": {"input": "range", "min": 0, "max": len(shown) - 1, "step": 1,
                      "name": label}},
            {param: shown})


# ------------------------------------------------------------ 第 2 节：分数与权重


def score_weight_explorer(scores, d_k: int, weights, labels, static: Figure,
                          alt: str, name: str = "s2-score-weight",
                          query: int = 0, key: int = 2) -> InteractiveFigure:
    """分数与权重两张热力图；鼠标悬停或用两个下拉框选中一个格子，
    下方读出该 Query、Key 的点积 q·k、缩放后的分数和 softmax 权重
    （见第 2 节 缩放点积注意力「第三步」）。

    scores: [seq, seq] 未缩放的分数 QKᵀ；weights: [seq, seq] softmax 权重。
    读数的格式与正文一致（四位小数）。默认选中第 query 行第 key 列。
    """
    s, w = _values(scores), _values(weights)
    labels = list(labels)
    _check_square("scores", s, labels)
    _check_square("weights", w, labels)
    scale = math.sqrt(d_k)
    smin, smax = float(s.min()), float(s.max())
    cells = (_heatmap_cells(s, labels, smin, smax, panel="分数 q·k")
             + _heatmap_cells(w, labels, 0.0, 1.0, panel="注意力权重"))
    rows = [
        {"query": labels[i], "key": labels[j],
         "text": (f"Query {labels[i]}，Key {labels[j]}：q·k = {s[i, j]:.4f}；"
                  f"除以 √{d_k} 后 = {s[i, j] / scale:.4f}；"
                  f"softmax 权重 = {w[i, j]:.4f}")}
        for i in range(len(labels)) for j in range(len(labels))
    ]
    chart = _heatmap(labels, 0, 1, None, select="cell")
    # 两张热力图颜色范围不同：分数用它自己的最小、最大值，权重用 [0, 1]
    color = chart["layer"][0]["encoding"]["color"]
    color["scale"] = {"scheme": "viridis", "nice": False}
    color["legend"] = None
    chart["layer"][0]["params"] = [{
        "name": "cell",
        "select": {"type": "point", "fields": ["key", "query"], "on": "pointerover",
                   "clear": False, "nearest": False},
        "value": [{"query": labels[query], "key": labels[key]}],
        "bind": {"key": {"input": "select", "options": labels, "name": "Key（列）"},
                 "query": {"input": "select", "options": labels,
                           "name": "Query（行）"}},
    }]
    spec = {
        "description": ("两张热力图：左边是分数 q·k，右边是注意力权重，"
                        "行是 Query，列是 Key。"
                        "用“Query（行）”“Key（列）”两个下拉框或鼠标选一个格子，"
                        "图下方读出这一对的点积、缩放后的分数和 softmax 权重。"),
        "config": _config(),
        "vconcat": [
            {"data": {"values": cells},
             "facet": {"column": {"field": "panel", "type": "nominal",
                                  "sort": ["分数 q·k", "注意力权重"], "title": None}},
             "spec": chart,
             "resolve": {"scale": {"color": "independent"}}},
            _readout(rows, {"param": "cell", "empty": False}),
        ],
    }
    return InteractiveFigure(name, spec, static, alt)


def saturation_explorer(static: Figure, alt: str, d_k_values=SATURATION_DKS,
                        n_keys: int = 8, seed: int = 0, n_trials: int = 1000,
                        start: int = 64,
                        name: str = "s2-softmax-saturation") -> InteractiveFigure:
    """滑块选 d_k，看同一个 Query 的 softmax 权重：不缩放时变成 one-hot，
    除以 √d_k 后保持分散；读数给出最大权重
    （见第 2 节 缩放点积注意力「缩放」）。

    每个 d_k 都调用 `experiments.softmax_saturation`（参数与正文相同），
    柱子是那一次“典型”抽样，读数另给 n_trials 次抽样的中位数。默认停在 d_k = start。
    """
    d_k_values = tuple(int(d) for d in d_k_values)
    if start not in d_k_values:
        raise ValueError(
            f"start 应该是 d_k_values {d_k_values} 之一，收到的是 {start}")
    bars, rows = [], []
    for step, d_k in enumerate(d_k_values):
        r = softmax_saturation(d_k=d_k, n_keys=n_keys, seed=seed, n_trials=n_trials)
        panels = (("不缩放", r.weights, r.max_weight, r.grad_norm),
                  ("除以 √dₖ", r.scaled_weights, r.scaled_max_weight,
                   r.scaled_grad_norm))
        for variant, w, top, grad in panels:
            # 每栏的标题与静态图相同：最大权重和灵敏度（softmax 雅可比的范数）
            title = f"{variant}：最大权重 {top:.2f}，灵敏度 {grad:.3f}"
            bars += [{"step": step, "variant": variant, "key": k, "weight": float(v),
                      "title": title, "desc": f"{variant}，Key {k}：权重 {v:.4f}"}
                     for k, v in enumerate(_values(w))]
        rows.append({"step": step, "text": (
            f"dₖ = {d_k}　这一次抽样的最大权重：不缩放 {r.max_weight:.2f}，"
            f"除以 √dₖ 后 {r.scaled_max_weight:.2f}\n"
            f"{n_trials} 次抽样的最大权重中位数：不缩放 {r.median_max_weight:.2f}，"
            f"除以 √dₖ 后 {r.scaled_median_max_weight:.2f}")})
    param, shown = _step_bind("dk", "dₖ（拖动滑块或按方向键）",
                              [str(d) for d in d_k_values], d_k_values.index(start))
    spec = {
        "description": (f"两幅柱状图：同一个 Query 对 {n_keys} 个 Key 的 "
                        "softmax 权重，"
                        "左边不缩放，右边除以 √dₖ。滑块选 dₖ；"
                        "图下方读出两边的最大权重。"),
        "config": _config(),
        "params": [param],
        "usermeta": {"valuetext": shown},
        "vconcat": [
            {"data": {"values": bars},
             "transform": [{"filter": "datum.step == dk"}],
             "facet": {"column": {"field": "variant", "type": "nominal",
                                  "sort": ["不缩放", "除以 √dₖ"], "title": None,
                                  "header": {"labels": False}}},
             "spec": {
                 "width": 230, "height": 170,
                 "layer": [{
                 "mark": {"type": "bar"},
                 "encoding": {
                     "x": {"field": "key", "type": "ordinal", "title": "Key 编号",
                           "axis": {"labelAngle": 0}},
                     "y": {"field": "weight", "type": "quantitative",
                           "scale": {"domain": [0, 1]}, "title": "softmax 权重"},
                     "color": {"field": "variant", "type": "nominal",
                               "scale": {"domain": ["不缩放", "除以 √dₖ"],
                                         "range": [RNN_COLOR, ATTN_COLOR]},
                               "legend": None},
                     "tooltip": [{"field": "key", "title": "Key"},
                                 {"field": "weight", "title": "权重",
                                  "format": ".4f"}],
                     "description": {"field": "desc"},   # 给读屏软件的中文说明
                 }}, {
                     "name": "paneltitle",
                     "transform": [{"filter": "datum.key == 0"}],
                     "mark": {"type": "text", "x": 115, "y": -10, "fontSize": 12},
                     "encoding": {"text": {"field": "title"},
                                  "description": {"field": "title"}},
                 }]}},
            _readout(rows, "datum.step == dk"),
        ],
    }
    return InteractiveFigure(name, spec, static, alt)


# ------------------------------------------------------------ 第 3 节：因果遮蔽


def mask_toggle(before, after, labels, static: Figure, alt: str,
                name: str = "s3-causal-mask") -> InteractiveFigure:
    """开关因果遮蔽：同一组缩放分数在遮蔽前后的注意力权重（见第 3 节 因果遮蔽）。

    before / after: [seq, seq]，分别是不遮蔽与遮蔽后的 softmax 权重。
    默认打开遮蔽；读数逐行列出权重（四位小数，与正文一致）。
    """
    b, a = _values(before), _values(after)
    labels = list(labels)
    _check_square("before", b, labels)
    _check_square("after", a, labels)
    cells, rows = [], []
    for masked, w in ((False, b), (True, a)):
        cells += _heatmap_cells(w, labels, 0.0, 1.0, masked=masked)
        state = "开" if masked else "关"
        lines = [f"因果遮蔽：{state}（每行之和为 1）"]
        lines += [f"{labels[i]} 这一行：" + "　".join(
            f"{labels[j]} {w[i, j]:.4f}" for j in range(len(labels)))
            for i in range(len(labels))]
        rows.append({"masked": masked, "text": "\n".join(lines)})
    chart = _heatmap(labels, 0.0, 1.0, "注意力权重", select=None)
    spec = {
        "description": ("注意力权重热力图，行是 Query，列是 Key。"
                        "“因果遮蔽”复选框打开时，对角线以上的权重变成 0，"
                        "每行重新归一化；图下方逐行读出权重。"),
        "config": _config(),
        "params": [{"name": "masked", "value": True,
                    "bind": {"input": "checkbox", "name": "因果遮蔽"}}],
        "vconcat": [
            {"data": {"values": cells},
             "transform": [{"filter": "datum.masked == masked"}], **chart},
            _readout(rows, "datum.masked == masked"),
        ],
        # 颜色条紧挨着热力图，而不是放到整张图（含读数）的最右边
        "resolve": {"legend": {"color": "independent"}},
    }
    return InteractiveFigure(name, spec, static, alt)


# ------------------------------------------------------------ 第 4 节：每个头


def head_selector(weights_per_head, labels, static: Figure, alt: str,
                  row: int = -1, name: str = "s4-heads") -> InteractiveFigure:
    """选一个头，看它在同一句话上的注意力权重（见第 4 节 多头注意力）。

    weights_per_head: [heads, seq, seq]（也接受 [1, heads, seq, seq]）。
    读数给出所选头里第 row 行（默认最后一个 token）的权重，两位小数，与正文一致。
    """
    w = _values(weights_per_head)
    if w.ndim == 4 and w.shape[0] == 1:
        w = w[0]
    labels = list(labels)
    if w.ndim != 3:
        raise ValueError(
            "weights_per_head 应该是 [heads, seq, seq]，"
            f"收到的形状是 {list(w.shape)}")
    _check_square("weights_per_head", w, labels)
    heads = w.shape[0]
    i = range(len(labels))[row]
    cells, rows = [], []
    for h in range(heads):
        cells += _heatmap_cells(w[h], labels, 0.0, 1.0, head=h)
        row_text = "，".join(f"{labels[j]} {w[h, i, j]:.2f}"
                            for j in range(len(labels)))
        rows.append({"head": h,
                     "text": f"头 {h} 中 {labels[i]} 这一行：{row_text}"})
    chart = _heatmap(labels, 0.0, 1.0, "注意力权重")
    spec = {
        "description": ("注意力权重热力图，行是 Query，列是 Key。"
                        f"用单选按钮在 {heads} 个头之间切换；"
                        f"图下方读出所选头里 {labels[i]} 这一行的权重。"),
        "config": _config(),
        "params": [{"name": "head", "value": 0,  # 头从 0 数起，与张量下标一致
                    "bind": {"input": "radio", "options": list(range(heads)),
                             "labels": [f"头 {h}" for h in range(heads)],
                             "name": "选择头："}}],
        "vconcat": [
            {"data": {"values": cells},
             "transform": [{"filter": "datum.head == head"}], **chart},
            _readout(rows, "datum.head == head"),
        ],
        # 颜色条紧挨着热力图，而不是放到整张图（含读数）的最右边
        "resolve": {"legend": {"color": "independent"}},
    }
    return InteractiveFigure(name, spec, static, alt)


# ------------------------------------------------------------ 附录：路径长度


def path_length_slider(result, static: Figure, alt: str, start: int | None = None,
                       name: str = "ap-path-length") -> InteractiveFigure:
    """滑块选序列长度，看位置 0 收到的梯度：RNN 与注意力，纵轴对数
    （见附录 梯度能否传回远处，补充实验）。

    result: `experiments.first_position_gradient_vs_length` 的结果
    （页面算好的那一份）。
    梯度范数为 0（float32 下溢）的点画不上对数轴，读数里如实写出。默认停在最长的长度。
    """
    lengths = [int(n) for n in result.lengths]
    if start is None:
        start = lengths[-1]
    if start not in lengths:
        raise ValueError(f"start 应该是 result.lengths {tuple(lengths)} 之一，"
                         f"收到的是 {start}")
    points, rows = [], []
    for step, (n, r, a) in enumerate(zip(lengths, result.rnn, result.attention)):
        for model, g in (("RNN", r), ("注意力", a)):
            shown_g = f"{g:.3e}" if g > 0 else "0（float32 下溢）"
            points.append({"step": step, "seq_len": n, "model": model,
                           "grad": float(g), "shown": shown_g,
                           "desc": f"{model}，序列长度 {n}：梯度范数 {shown_g}"})
        rnn = f"{r:.3e}" if r > 0 else "0（float32 下求范数时平方下溢）"
        rows.append({"step": step, "text":
                     f"序列长度 {n}：位置 0 的梯度范数 RNN {rnn}，注意力 {a:.3e}"})
    param, shown = _step_bind("len", "序列长度（拖动滑块或按方向键）",
                              [str(n) for n in lengths], lengths.index(start))
    positive = [p for p in points if p["grad"] > 0]
    # 与静态图相同：范数为 0 的 RNN 点画在图的底边（比最小正值再小四个数量级），
    # 并标注原因
    floor = min(p["grad"] for p in positive) / 1e4
    underflow = [{"seq_len": n, "grad": floor,
                  "desc": f"RNN，序列长度 {n}：范数下溢为 0，画在底边"}
                 for n, r in zip(lengths, result.rnn) if r == 0]
    x = {"field": "seq_len", "type": "quantitative", "title": "序列长度",
         "scale": {"type": "log", "base": 2, "domain": [lengths[0], lengths[-1]]},
         "axis": {"values": lengths, "format": "d"}}
    y = {"field": "grad", "type": "quantitative",
         "title": "位置 0 的梯度范数（对数轴）",
         "scale": {"type": "log"}, "axis": {"format": ".0e"}}
    color = {"field": "model", "type": "nominal", "title": None,
             "scale": {"domain": ["RNN", "注意力"],
                       "range": [RNN_COLOR, ATTN_COLOR]},
             "legend": {"orient": "bottom-left"}}   # 图里左下角是空的
    spec = {
        "description": ("折线图，横轴是序列长度，纵轴是位置 0 的梯度范数（对数轴），"
                        "一条是 RNN，一条是注意力。滑块选一个序列长度，"
                        "图下方读出两种模型在这个长度下的梯度范数。"),
        "config": _config(),
        "params": [param],
        "usermeta": {"valuetext": shown},
        "vconcat": [
            {"width": 480, "height": 260,
             "data": {"values": positive},
             "encoding": {"x": x, "y": y, "color": color,
                          "description": {"field": "desc"}},   # 给读屏软件的中文说明
             "layer": [
                 {"mark": {"type": "line", "point": True}},
                 {"transform": [{"filter": "datum.step == len"}],
                  "mark": {"type": "point", "size": 160, "filled": True},
                  "encoding": {"tooltip": [{"field": "model", "title": "模型"},
                                           {"field": "shown", "title": "梯度范数"}]}},
                 {"data": {"values": [{"seq_len": n, "step": k,
                                       "desc": f"选中的序列长度 {n}"}
                                      for k, n in enumerate(lengths)]},
                  "transform": [{"filter": "datum.step == len"}],
                  "mark": {"type": "rule", "strokeDash": [4, 4], "color": "gray"},
                  "encoding": {"y": None, "color": None}},
                 *([{"data": {"values": underflow},
                     "mark": {"type": "point", "shape": "triangle-down",
                              "filled": True, "size": 90, "color": RNN_COLOR},
                     "encoding": {"color": None}},
                    {"data": {"values": underflow}, "name": "underflowlabel",
                     "mark": {"type": "text", "align": "right", "dx": -8, "dy": -12,
                              "fontSize": 12, "color": RNN_COLOR},
                     "encoding": {"color": None,
                                  "text": {"value": "RNN：范数在 float32 下溢为 0"}}}]
                   if underflow else []),
             ]},
            _readout(rows, "datum.step == len"),
        ],
    }
    return InteractiveFigure(name, spec, static, alt)


# ------------------------------------------------------------ 第 7 节：训练出来的头

KIND_PREV, KIND_OTHER = "前一个位置", "其他位置"
KIND_INDUCTION = "上次出现处的下一个位置"


def trained_head_explorer(weights, tokens, static: Figure, alt: str,
                          copy_start: int | None = None,
                          copy_length: int | None = None,
                          layer: int = 1, head: int = 0, position: int | None = None,
                          name: str = "s7-trained-heads") -> InteractiveFigure:
    """选层、选头、选一个位置，看训练好的模型在这个位置的一行注意力权重
    （见第 7 节 训练出来的头）。

    weights: 按层排列，每项 [heads, seq, seq]（也接受 [1, heads, seq, seq]），
    即 `tinygpt.TinyGPT.attention_weights` 对一条序列的结果；
    tokens: 这条序列的 token（字符串）。
    copy_start、copy_length: 第二遍 A 的起点和 A 的长度（给出时，
    第二遍里的位置额外标出“上次出现处的下一个位置” t − L + 1）。
    默认停在层 layer 头 head 的最后一个位置（层、头都从 0 数，同张量下标）。
    """
    values = [_values(w) for w in weights]
    values = [v[0] if v.ndim == 4 and v.shape[0] == 1 else v for v in values]
    tokens = [str(t) for t in tokens]
    seq = len(tokens)
    for l, v in enumerate(values):
        if v.ndim != 3:
            raise ValueError(f"weights[{l}] 应该是 [heads, seq, seq]，"
                             f"收到的形状是 {list(v.shape)}")
        _check_square(f"weights[{l}]", v, tokens)
    layers, heads = len(values), values[0].shape[0]
    position = seq - 1 if position is None else range(seq)[position]
    if not (0 <= layer < layers and 0 <= head < heads):
        raise ValueError(f"layer 应在 0..{layers - 1}、head 应在 0..{heads - 1} "
                         f"之间，收到 layer = {layer}、head = {head}")

    def induction_target(t: int) -> int | None:
        if copy_start is None or copy_length is None or t < copy_start:
            return None
        return t - copy_length + 1

    bars, rows = [], []
    for l in range(layers):
        for h in range(heads):
            for t in range(seq):
                w = values[l][h, t]
                ind = induction_target(t)
                for j in range(seq):
                    kind = (KIND_PREV if j == t - 1 else
                            KIND_INDUCTION if j == ind else KIND_OTHER)
                    bars.append({"layer": l, "head": h, "pos": t, "key": j,
                                 "weight": round(float(w[j]), 4), "kind": kind,
                                 "desc": f"位置 {j}（{tokens[j]}）：权重 {w[j]:.2f}"})
                top = int(np.argmax(w))
                text = (f"层 {l} · 头 {h}，位置 {t}（{tokens[t]}）这一行："
                        f"最大的权重 {w[top]:.2f} 在位置 {top}（{tokens[top]}）")
                extra = []
                if t >= 1:
                    extra.append(f"前一个位置 {t - 1}：{w[t - 1]:.2f}")
                if ind is not None:
                    extra.append(f"上次出现处的下一个位置 {ind}：{w[ind]:.2f}")
                if extra:
                    text += "\n" + "；".join(extra)
                rows.append({"layer": l, "head": h, "pos": t, "text": text})
    shown = [f"{t}（{tokens[t]}）" for t in range(seq)]
    pos_param, valuetext = _step_bind("pos", "位置（拖动滑块或按方向键）", shown,
                                      position)
    which = "datum.layer == layer && datum.head == head && datum.pos == pos"
    spec = {
        "description": (f"柱状图：训练好的模型里，所选的层、头在所选位置的"
                        f"一行注意力权重，横轴是被看的位置 0..{seq - 1}。"
                        "用单选按钮选层和头，用滑块选位置；"
                        "图下方读出权重最大的位置和两个角色分数所看的位置。"),
        "config": _config(),
        "params": [
            {"name": "layer", "value": layer,
             "bind": {"input": "radio", "options": list(range(layers)),
                      "labels": [f"层 {l}" for l in range(layers)],
                      "name": "选择层："}},
            {"name": "head", "value": head,
             "bind": {"input": "radio", "options": list(range(heads)),
                      "labels": [f"头 {h}" for h in range(heads)],
                      "name": "选择头："}},
            pos_param,
        ],
        "usermeta": {"valuetext": valuetext},
        "vconcat": [
            {"width": max(480, 22 * seq), "height": 200,
             "data": {"values": bars},
             "transform": [{"filter": which}],
             "mark": {"type": "bar"},
             "encoding": {
                 "x": {"field": "key", "type": "ordinal",
                       "title": "被看的位置（Key）", "axis": {"labelAngle": 0}},
                 "y": {"field": "weight", "type": "quantitative",
                       "scale": {"domain": [0, 1]}, "title": "注意力权重"},
                 "color": {"field": "kind", "type": "nominal", "title": None,
                           "scale": {
                               "domain": [KIND_PREV, KIND_INDUCTION, KIND_OTHER],
                               "range": [RNN_COLOR, HIGHLIGHT, "#9e9e9e"]},
                           "legend": {"orient": "top"}},
                 "tooltip": {"field": "desc"},
                 "description": {"field": "desc"},   # 给读屏软件的中文说明
             }},
            _readout(rows, which),
        ],
    }
    return InteractiveFigure(name, spec, static, alt)
