"""第 2、3 节：四步计算、因果遮蔽、输入检查（√d_k 的经验验证见 test_experiments.py）。"""

import math
import re

import pytest
import torch
import torch.nn.functional as F

from minigpt.attention import (
    apply_mask, attention_scores, causal_mask, scale_scores, scaled_dot_product_attention,
    softmax_weights, to_nn_mha_mask, to_sdpa_mask, weighted_sum,
)

SHAPES = [(3, 4), (2, 5, 4), (2, 3, 6, 8)]  # [seq, d_k]、[batch, seq, d_k]、[batch, heads, seq, d_k]


def _qkv(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g, dtype=dtype) for _ in range(3)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype,atol", [(torch.float32, 1e-6), (torch.float64, 1e-12)])
@pytest.mark.parametrize("masked", [False, True])
def test_sdpa_matches_torch_functional(shape, dtype, atol, masked):
    q, k, v = _qkv(shape, dtype)
    seq = shape[-2]
    mask = causal_mask(seq) if masked else None
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else to_sdpa_mask(mask))
    assert out.dtype == dtype and out.shape == ref.shape
    torch.testing.assert_close(out, ref, atol=atol, rtol=0)
    # 权重与一份独立写出的 softmax 参考值一致
    logits = q @ k.transpose(-2, -1) / math.sqrt(shape[-1])
    if masked:
        logits = logits + torch.zeros(seq, seq, dtype=dtype).masked_fill(mask == 0, float("-inf"))
    torch.testing.assert_close(weights, torch.softmax(logits, dim=-1), atol=atol, rtol=0)


def test_four_steps_compose_to_the_whole():
    q, k, v = _qkv((4, 8), torch.float64)
    s = scale_scores(attention_scores(q, k), 8)
    w = softmax_weights(apply_mask(s, causal_mask(4)))
    out, weights = scaled_dot_product_attention(q, k, v, causal_mask(4))
    assert torch.equal(weights, w) and torch.equal(out, weighted_sum(w, v))
    assert torch.allclose(w.sum(-1), torch.ones(4, dtype=torch.float64))


def test_scale_divides_by_sqrt_dk():
    s = torch.tensor([[2.0, -4.0]])
    assert torch.equal(scale_scores(s, 16), torch.tensor([[0.5, -1.0]]))


def test_causal_mask_is_lower_triangular_int64():
    m = causal_mask(4)
    assert m.dtype == torch.int64
    assert m.tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]


def test_mask_conversions_for_torch_modules():
    m = causal_mask(3)
    hidden = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)
    for mask in (m, m.bool(), m.float()):
        assert torch.equal(to_nn_mha_mask(mask), hidden)      # True = 不许看
        assert torch.equal(to_sdpa_mask(mask), ~hidden)       # True = 可以看
        assert to_nn_mha_mask(mask).dtype == to_sdpa_mask(mask).dtype == torch.bool


def test_apply_mask_accepts_bool_and_numeric_masks():
    s = torch.arange(9.0).view(3, 3)
    a, b = apply_mask(s, causal_mask(3)), apply_mask(s, causal_mask(3).bool())
    assert torch.equal(a, b)
    assert torch.isneginf(a[0, 1:]).all() and torch.isneginf(a[1, 2])
    assert torch.equal(a.tril(), s.tril())


def test_fully_masked_row_raises_and_names_the_row():
    q, k, v = _qkv((3, 4), torch.float32)
    mask = torch.tensor([[1, 0, 0], [0, 0, 0], [1, 1, 1]])
    with pytest.raises(ValueError, match=r"(?s)第 1 行.*-inf.*NaN"):  # 一句一行
        scaled_dot_product_attention(q, k, v, mask)
    qb, kb, vb = _qkv((2, 2, 3, 4), torch.float32)
    bad = causal_mask(3).expand(2, 2, 3, 3).clone()
    bad[1, 0, 2] = 0
    with pytest.raises(ValueError, match=re.escape("(1, 0, 2)")):
        scaled_dot_product_attention(qb, kb, vb, bad)
    # 对角线被遮住：第 0 行整行看不到任何 key
    with pytest.raises(ValueError, match="第 0 行"):
        scaled_dot_product_attention(q, k, v, torch.tril(torch.ones(3, 3), diagonal=-1))


def test_qk_last_dim_mismatch_names_both_sizes():
    q, k = torch.randn(3, 4), torch.randn(3, 5)
    with pytest.raises(ValueError, match=r"q 的是 4，k 的是 5"):
        scaled_dot_product_attention(q, k, torch.randn(3, 5))


def test_kv_seq_mismatch_names_both_lengths():
    q, k, v = torch.randn(3, 4), torch.randn(3, 4), torch.randn(2, 4)
    with pytest.raises(ValueError, match=r"k\.shape\[-2\] = 3，v\.shape\[-2\] = 2"):
        scaled_dot_product_attention(q, k, v)


def test_mask_not_broadcastable_names_both_shapes():
    q, k, v = _qkv((3, 4), torch.float32)
    with pytest.raises(ValueError, match=re.escape("(2, 2)") + ".*" + re.escape("(3, 3)")):
        scaled_dot_product_attention(q, k, v, causal_mask(2))


def test_mask_that_would_enlarge_scores_is_rejected():
    q, k, v = _qkv((3, 4), torch.float32)
    with pytest.raises(ValueError, match=re.escape("(2, 3, 3)") + ".*" + re.escape("(3, 3)")):
        scaled_dot_product_attention(q, k, v, causal_mask(3).expand(2, 3, 3))


@pytest.mark.parametrize("masked", [True, False])
def test_causal_attention_output_ignores_future_tokens(masked):
    seq, t = 6, 2
    q, k, v = _qkv((1, seq, 4), torch.float64)
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    for x in (q2, k2, v2):
        x[:, t + 1:] += torch.randn(1, seq - t - 1, 4, dtype=torch.float64)
    mask = causal_mask(seq) if masked else None
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    out2, _ = scaled_dot_product_attention(q2, k2, v2, mask)
    same = torch.allclose(out[:, : t + 1], out2[:, : t + 1], atol=1e-12)
    assert same is masked  # 有 mask：前面不变；没有 mask：前面也跟着变
