"""第 7 节「在浏览器里试一试」的 Python 一半（minigpt.live_model）与页面上的说法。

浏览器里的一半（前向计算、键盘、离线、分量）在 tests/test_live_model_browser.py。
"""

from __future__ import annotations

import base64
import json
import sys

import pytest
import torch

from support import heads_cases
from support.book import REPO
from minigpt import heads as H
from minigpt import live_model as LM

sys.path.insert(0, str(REPO / "book" / "_ext"))
import book_live_model  # noqa: E402


def models() -> dict[int, H.TinyGPT]:
    run = heads_cases.run2()
    return {**{s: run.snapshots[s] for s in LM.SNAPSHOT_STEPS}, len(run.losses): run.model}


def test_the_page_says_as_many_predictions_as_the_web_page_lists():
    """正文 glue 的“前几个预测”是 TOP_PREDICTIONS；网页列出的是 book_live_model.js 的 TOP。"""
    import re

    script = (REPO / "book" / "_ext" / "book_live_model.js").read_text(encoding="utf-8")
    assert re.findall(r"const TOP = (\d+);", script) == [str(LM.TOP_PREDICTIONS)]


def test_packed_weights_come_back_bit_for_bit():
    for step, model in models().items():
        back = LM.unpack_weights(LM.pack_weights(model), model)
        state = model.state_dict()
        assert list(back) == list(state)
        for name, t in state.items():
            assert back[name].dtype == torch.float32 and torch.equal(back[name], t), (step, name)


def test_unpacking_data_of_the_wrong_size_says_what_was_expected():
    model = heads_cases.run2().model
    short = base64.b64encode(bytes(4 * 10)).decode()
    with pytest.raises(ValueError, match="数据里有 10 个数，这个模型的参数一共 18864 个"):
        LM.unpack_weights(short, model)
    with pytest.raises(ValueError, match="4 的倍数"):
        LM.unpack_weights(base64.b64encode(bytes(5)).decode(), model)


def test_snapshots_fall_before_during_and_after_the_steepest_loss_drop():
    """页面说“损失陡降（第 a 步到第 b 步）就在这几个快照之间”：它用 50 步一段的平均，
    相邻两段降得最多的是第 fast 段 → 第 fast+1 段（两段合起来是第 50·fast+1 .. 50·fast+100 步）。"""
    blocks = H.block_means(heads_cases.run2().losses, 50)
    drops = [a - b for a, b in zip(blocks, blocks[1:])]
    fast = drops.index(max(drops))
    first, last = 50 * fast + 1, 50 * fast + 100
    steps = LM.SNAPSHOT_STEPS
    assert steps[0] < first, "第一个快照应在陡降之前"
    assert any(first <= s < last for s in steps), "应有一个快照在陡降之中"
    assert steps[-1] >= last, "应有一个快照在陡降之后"


def test_payload_carries_every_snapshot_and_the_final_model():
    run = heads_cases.run2()
    payload = LM.live_payload(run)
    assert [s["step"] for s in payload["snapshots"]] == [*LM.SNAPSHOT_STEPS, len(run.losses)]
    block = run.model.blocks[0]
    assert payload["eps"] == block.ln_attn.eps == block.ln_ffn.eps
    assert (payload["vocab"], payload["seq_len"], payload["n_layers"], payload["num_heads"]) == (16, 23, 2, 2)
    assert payload["params"] == [[k, list(v.shape)] for k, v in run.model.state_dict().items()]


def test_payload_without_the_snapshots_says_how_to_keep_them():
    run = H.train_repeat(n_layers=1, seed=0, steps=3, keep=(2,))
    with pytest.raises(ValueError, match=r"没有留下第 \[300, 350, 400\] 步的模型.*keep="):
        LM.live_payload(run)


def test_the_live_model_only_uses_what_the_forward_pass_of_layers_uses():
    """网页上的前向按 minigpt.layers 写：LayerNorm 都有仿射参数、Linear 都有偏置、FFN 的激活是 ReLU。
    模型换了这些，这里先失败（JavaScript 也就得跟着改）。"""
    import inspect

    from minigpt import layers

    model = heads_cases.run2().model
    for block in model.blocks:
        assert block.ln_attn.elementwise_affine and block.ln_ffn.elementwise_affine
        for lin in (block.attn.W_Q, block.attn.W_K, block.attn.W_V, block.attn.W_O, block.ffn.up, block.ffn.down):
            assert lin.bias is not None
    assert "F.relu(self.up(x))" in inspect.getsource(layers.FeedForward.forward)
    assert "self.ln_attn(x + self.attn(x, mask))" in inspect.getsource(layers.TransformerBlock.forward)
    assert "self.ln_ffn(x + self.ffn(x))" in inspect.getsource(layers.TransformerBlock.forward)


def test_the_page_starts_on_a_position_whose_next_token_can_be_copied():
    """页面说：一开始选中的位置（倒数第二个）落在第二遍 A 里，下一个 token 照第一遍抄就能说对。"""
    ex = heads_cases.example()
    ids = ex.ids[0, :-1]
    pos = len(ids) - 2
    start, length = ex.starts.item(), ex.lengths.item()
    assert pos >= start and ids[pos + 1] == ids[pos + 1 - length]


def test_figure_gives_the_site_its_data_and_the_pdf_a_static_figure():
    from minigpt.plots import setup_chinese_font

    setup_chinese_font()
    ex = heads_cases.example()
    fig = LM.live_model_figure(heads_cases.run2(), ex.ids[:, :-1], alt="说明", position=-2)
    bundle = fig._repr_mimebundle_()
    assert base64.b64decode(bundle["application/pdf"]).startswith(b"%PDF")
    html = bundle["text/html"]
    assert 'data-live-model="s7-live-model"' in html and 'alt="说明"' in html
    data = json.loads(book_live_model.DATA.search(html).group(1))
    assert data["start"] == ex.ids[0, :-1].tolist() and data["position"] == 21
    assert len(fig.static.axes) == 4 * (len(LM.SNAPSHOT_STEPS) + 1)


def test_the_extension_moves_the_data_into_a_script_file_next_to_the_page(tmp_path):
    """构建扩展把内嵌的 JSON 换成页面旁边的脚本文件（JSON 原样挂到 window.bookLiveModels 上）；内容不变时不重写。"""
    from types import SimpleNamespace

    from docutils import nodes

    payload = {"a": [1, 2], "s": "</script>"}
    text = ('<div class="live-model" data-live-model="s7-live-model">'
            '<script type="application/json" class="live-model-data">'
            + json.dumps(payload).replace("</", "<\\/") + "</script></div>")
    doc = nodes.document(None, None)
    doc += nodes.raw("", text, format="html")
    app = SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(
        format="html", get_target_uri=lambda d: f"{d}.html"))
    book_live_model.data_to_files(app, doc, "book/s7_trained_heads")
    out = next(doc.findall(nodes.raw)).astext()
    assert "live-model-data" not in out
    target = tmp_path / "book" / "s7_trained_heads.s7-live-model.js"
    assert f'data-lazy-scripts="{target.name}?v=' in out  # 读者翻到活模型时才加载（book_lazy.js）
    script = target.read_text(encoding="utf-8")
    prefix = 'window.bookLiveModels["s7-live-model"] = '
    body = script.split(prefix, 1)[1].rstrip().rstrip(";")
    assert json.loads(body) == payload
    mtime = target.stat().st_mtime_ns
    doc2 = nodes.document(None, None)
    doc2 += nodes.raw("", text, format="html")
    book_live_model.data_to_files(app, doc2, "book/s7_trained_heads")
    assert target.stat().st_mtime_ns == mtime
