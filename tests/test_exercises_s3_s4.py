"""第 3、4 节末尾“练习”的起始代码：用书里现有的包原样运行，并且确实演示了题目说的现象。

起始代码从页面源码里取（`## 练习` 之后的每个 ```python 代码块），按页面上的样子运行，
所以页面一改，这里跟着检查新的代码。
"""

from __future__ import annotations

import contextlib
import io
import re
import textwrap

import pytest

from support.book import REPO


def exercise_blocks(doc: str) -> list[str]:
    text = (REPO / "book" / f"{doc}.md").read_text(encoding="utf-8")
    assert "\n## 练习\n" in text, f"{doc} 没有“练习”一节"
    section = text.split("\n## 练习\n", 1)[1]
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```", section, re.S | re.M)
    return [textwrap.dedent(code) for _, code in blocks]


def run(code: str) -> tuple[dict, str]:
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<练习>", "exec"), namespace)
    return namespace, out.getvalue()


def test_each_section_has_one_or_two_exercises_with_starter_code():
    for doc in ("s3_causal_mask", "s4_multi_head"):
        text = (REPO / "book" / f"{doc}.md").read_text(encoding="utf-8")
        section = text.split("\n## 练习\n", 1)[1]
        items = re.findall(r"^\d+\. \*\*", section, re.M)
        assert 1 <= len(items) <= 2, (doc, items)
        assert section.count("提示") >= len(items), f"{doc}：每道练习都要有提示"
        assert len(exercise_blocks(doc)) == len(items)


def test_s3_padding_exercise_runs_and_hides_the_pad_columns():
    ns, out = run(exercise_blocks("s3_causal_mask")[0])
    mask = ns["mask"]
    assert mask.shape == (5, 5) and "tensor" in out
    assert (mask[:, 3:] == 0).all()                      # 谁也看不到 [PAD]
    assert (mask[:, :3] == ns["attention"].causal_mask(5)[:, :3]).all()
    # 左填充时前两行整行被遮，minigpt 报错（练习让读者自己发现这一点）
    import torch
    from minigpt import attention
    from minigpt.data import VOCAB, encode
    ids = torch.tensor(encode("[PAD] [PAD] the cat sat"))
    left = attention.causal_mask(5) * (ids != VOCAB["[PAD]"]).long()
    with pytest.raises(ValueError, match="第 0, 1 行"):
        attention.softmax_weights(attention.apply_mask(torch.zeros(5, 5), left))


@pytest.mark.slow
def test_s3_sequence_length_exercise_runs_and_the_floor_moves_with_seq_len():
    import math
    ns, out = run(exercise_blocks("s3_causal_mask")[1])
    run_16 = ns["run"]
    assert run_16.seq_len == 16 and len(run_16.eval_loss_by_position) == 16
    assert out.count("训练损失") == 2
    assert run_16.losses[-1] > math.log(10) / 16


def test_s4_pruning_exercise_runs_and_pruning_changes_every_position():
    import torch
    ns, out = run(exercise_blocks("s4_multi_head")[0])
    diff = ns["full"] - ns["pruned"]
    assert (diff.norm(dim=-1) > 0).all() and "范数" in out
    # 清零 W_O 的后 4 列，与让头 1 的 Value（权重和偏置）为 0 等价
    from minigpt.attention import causal_mask
    from minigpt.layers import MultiHeadAttention
    torch.manual_seed(42)
    x = torch.randn(1, 5, 8)
    mha = MultiHeadAttention(8, 2)
    with torch.no_grad():
        mha.W_V.weight[4:] = 0
        mha.W_V.bias[4:] = 0
        assert torch.allclose(mha(x, causal_mask(5)), ns["pruned"], atol=1e-6)


def test_s4_uneven_heads_exercise_runs_with_concat_wider_than_d_model():
    ns, out = run(exercise_blocks("s4_multi_head")[1])
    assert tuple(ns["concat"].shape) == (1, 5, 12)
    assert "torch.Size([1, 5, 12]) → torch.Size([1, 5, 8])" in out
