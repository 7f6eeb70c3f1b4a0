"""把第 7 节训练好的模型交到读者手里（见第 7 节「在浏览器里试一试」）。

构建时，这里把种子 0 那次训练的最终参数和几个训练途中的快照导出成一份数据：
每个参数张量按 `state_dict` 的顺序排好，float32 原样保存（不取整），
再由网页上的 JavaScript（``book/_ext/book_live_model.js``）重算一遍前向：
token 嵌入 + 位置嵌入 → 两个 Post-LN 的 `TransformerBlock` → 输出层 → softmax。
浏览器里算出的注意力权重与 logits，和 PyTorch 的相差不超过 1e-5
（tests/test_live_model_browser.py）。

数据怎么存：float32 的小端字节按“字节位”拆成四段
（先是所有数的第 0 个字节，再是第 1 个……），再用 base64 写成文本。
符号和指数所在的那一段几乎不变，gzip 压得动；还原后与原参数逐位相同。
网站上，这份数据由 ``book/_ext/book_live_model.py`` 存成页面旁边的一个脚本文件，
只在这一页用 ``<script>`` 加载
（file:// 下浏览器不许 fetch 本地文件，脚本标签却可以）。
"""

from __future__ import annotations

import base64
import html
import json

import numpy as np
import torch
from matplotlib.figure import Figure

from .heads import TinyGPT, TrainedModel
from .interactive import _savefig

# 网页滑块上的快照：损失陡降之前、之中、之后各一个，再加训练结束时的模型。
# 页面的训练（seeds.train_seed）每 25 步留一个副本，其中就有它们；
# tests/test_live_model.py 检查它们确实落在陡降的前、中、后。
SNAPSHOT_STEPS = (300, 350, 400)
LIVE_NAME = "s7-live-model"
# 网页列出的预测个数：book/_ext/book_live_model.js 的 TOP
# （tests/test_live_model.py 核对两者相同）
TOP_PREDICTIONS = 5
# 网页上的数与 PyTorch 最多相差多少
# （tests/test_live_model_browser.py 在浏览器里逐个核对）
BROWSER_TOLERANCE = 1e-5


# 第 7 节 训练出来的头「在浏览器里试一试」
def pack_weights(model: TinyGPT) -> str:
    """模型的全部参数 → 一段 base64 文本
    （float32，按字节位拆成四段，见本模块说明）。"""
    state = model.state_dict().values()
    flat = torch.cat([t.detach().reshape(-1).float() for t in state])
    raw = flat.numpy().astype("<f4").tobytes()
    # [4, n]：第 k 行是每个数的第 k 个字节
    planes = np.frombuffer(raw, np.uint8).reshape(-1, 4).T
    return base64.b64encode(planes.tobytes()).decode("ascii")


def unpack_weights(text: str, model: TinyGPT) -> dict[str, torch.Tensor]:
    """`pack_weights` 的逆操作：按 model 的 state_dict 的名字和形状还原出参数。"""
    planes = np.frombuffer(base64.b64decode(text), np.uint8)
    if planes.size % 4:
        raise ValueError(f"数据的字节数应是 4 的倍数，收到 {planes.size}")
    raw = planes.reshape(4, -1).T.copy()       # [n, 4]：每行一个数的四个字节
    flat = torch.from_numpy(raw.view("<f4").reshape(-1).copy())
    shapes = {k: v.shape for k, v in model.state_dict().items()}
    need = sum(s.numel() for s in shapes.values())
    if flat.numel() != need:
        raise ValueError(
            f"数据里有 {flat.numel()} 个数，这个模型的参数一共 {need} 个")
    out, i = {}, 0
    for name, shape in shapes.items():
        out[name] = flat[i:i + shape.numel()].reshape(shape)
        i += shape.numel()
    return out


# 第 7 节 训练出来的头「在浏览器里试一试」
def live_payload(run: TrainedModel, steps: tuple[int, ...] = SNAPSHOT_STEPS) -> dict:
    """网页要的全部数据：模型的形状、参数的名字与形状，
    以及每个快照（steps 里的每一步，再加训练结束时）的参数。run 须在训练时留下
    steps 里的每一步（train_seed 每 25 步留一个，train_repeat 用 keep=）。"""
    missing = [s for s in steps if s not in run.snapshots]
    if missing:
        raise ValueError(
            f"训练时没有留下第 {missing} 步的模型；"
            f"请在 train_repeat(..., keep=...) 里加上它们"
            f"（留下的是 {sorted(run.snapshots)}）")
    model = run.model
    block = model.blocks[0]
    models = [(s, run.snapshots[s]) for s in steps] + [(len(run.losses), model)]
    return {
        "vocab": model.out.out_features, "seq_len": model.seq_len,
        "d_model": model.tok.embedding_dim, "num_heads": block.attn.num_heads,
        "n_layers": len(model.blocks), "d_ff": block.ffn.d_ff,
        "eps": block.ln_attn.eps, "seed": run.seed,
        "params": [[name, list(t.shape)] for name, t in model.state_dict().items()],
        "snapshots": [{"step": s, "weights": pack_weights(m)} for s, m in models],
    }


# 第 7 节 训练出来的头「在浏览器里试一试」
def snapshot_maps(models: dict[int, TinyGPT], ids: torch.Tensor) -> Figure:
    """静态图（PDF 与没有 JavaScript 的网页用）：每列一个快照，
    每行一个头（第一层在上），画同一条序列上的注意力权重 [seq, seq]。
    ids: [1, seq]。"""
    steps = list(models)
    # 每项：每层一个 [1, heads, seq, seq]
    maps = {s: m.attention_weights(ids) for s, m in models.items()}
    layers, heads = len(maps[steps[0]]), maps[steps[0]][0].shape[1]
    fig = Figure(figsize=(1.75 * len(steps) + 0.6, 1.75 * layers * heads + 0.4))
    axes = fig.subplots(layers * heads, len(steps), squeeze=False)
    for c, s in enumerate(steps):
        for l in range(layers):
            for h in range(heads):
                ax = axes[l * heads + h, c]
                ax.imshow(maps[s][l][0, h].numpy(), cmap="viridis", vmin=0, vmax=1)
                ax.set_xticks([])
                ax.set_yticks([])
                if l * heads + h == 0:
                    ax.set_title(f"第 {s} 步", fontsize=10)
                if c == 0:
                    ax.set_ylabel(f"层 {l} 头 {h}", fontsize=9)
    fig.subplots_adjust(left=0.08, right=0.99, top=0.95, bottom=0.01,
                        wspace=0.08, hspace=0.08)
    return fig


class LiveModelFigure:
    """网页上的活模型：数据（`live_payload`）+ 一个空的界面区 + 同一张静态图；
    PDF 取静态图（与 `interactive.InteractiveFigure` 同一种多格式输出）。

    ids 是界面一开始显示的序列 [1, seq]，position 是一开始选中的位置；
    界面本身由 ``book/_ext/book_live_model.js`` 画出。
    """

    def __init__(self, payload: dict, ids: torch.Tensor, static: Figure, alt: str,
                 position: int = -1, name: str = LIVE_NAME):
        if not isinstance(static, Figure):
            raise TypeError("static 应该是 matplotlib 的 Figure，"
                            f"收到的是 {type(static).__name__}")
        self.name, self.alt, self.static = name, alt, static
        start = ids[0].tolist()
        self.payload = {**payload, "start": start,
                        "position": range(len(start))[position]}
        self._pdf = _savefig(static, "pdf")
        self._png = _savefig(static, "png", dpi=110)
        self._svg = _savefig(static, "svg")

    def to_html(self) -> str:
        data = json.dumps(self.payload, separators=(",", ":")).replace("</", "<\\/")
        svg = base64.b64encode(self._svg).decode("ascii")
        return (
            f'<div class="live-model" data-live-model="{html.escape(self.name)}">'
            f'<script type="application/json" class="live-model-data">{data}</script>'
            '<div class="live-model-ui"></div>'
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


# 第 7 节 训练出来的头「在浏览器里试一试」
def live_model_figure(run: TrainedModel, ids: torch.Tensor, alt: str,
                      position: int = -1,
                      steps: tuple[int, ...] = SNAPSHOT_STEPS) -> LiveModelFigure:
    """活模型的交互图：导出 run 在 steps 与训练结束时的参数，
    静态图画 ids 上各快照的权重；网页一开始显示 ids，选中第 position 个位置。"""
    models = {s: run.snapshots[s] for s in steps if s in run.snapshots}
    models[len(run.losses)] = run.model
    payload = live_payload(run, steps)
    return LiveModelFigure(payload, ids, snapshot_maps(models, ids), alt, position)
