"""第 4–6 节：多头注意力、FFN、Transformer Block，与 PyTorch 自带实现逐数对比。"""

import re

import numpy as np
import pytest
import torch
import torch.nn as nn

from minigpt.attention import causal_mask, to_nn_mha_mask
from minigpt.layers import (
    FeedForward, MultiHeadAttention, NaiveMultiHeadAttention, TransformerBlock,
    feedforward_num_params,
)

TOL = {torch.float32: dict(atol=1e-6, rtol=1e-5), torch.float64: dict(atol=1e-12, rtol=0)}


def _copy_into_torch_mha(mha: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.W_Q.weight, mha.W_K.weight, mha.W_V.weight]))
        ref.in_proj_bias.copy_(torch.cat([mha.W_Q.bias, mha.W_K.bias, mha.W_V.bias]))
        ref.out_proj.weight.copy_(mha.W_O.weight)
        ref.out_proj.bias.copy_(mha.W_O.bias)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("masked", [False, True])
def test_mha_matches_torch_multihead_attention(dtype, masked):
    torch.manual_seed(0)
    d_model, h, seq = 8, 2, 5
    mha = MultiHeadAttention(d_model, h).to(dtype)
    ref = nn.MultiheadAttention(d_model, h, batch_first=True).to(dtype)
    _copy_into_torch_mha(mha, ref)
    x = torch.randn(3, seq, d_model, dtype=dtype)
    mask = causal_mask(seq) if masked else None
    attn_mask = None if mask is None else to_nn_mha_mask(mask)
    out, w = mha(x, mask, return_weights=True)
    ref_out, ref_w_avg = ref(x, x, x, attn_mask=attn_mask, need_weights=True)
    _, ref_w = ref(x, x, x, attn_mask=attn_mask, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, **TOL[dtype])
    torch.testing.assert_close(w, ref_w, **TOL[dtype])
    torch.testing.assert_close(w.mean(dim=1), ref_w_avg, **TOL[dtype])


def _copy_into_encoder_layer(block: TransformerBlock, ref: nn.TransformerEncoderLayer) -> None:
    _copy_into_torch_mha(block.attn, ref.self_attn)
    ref.linear1.load_state_dict(block.ffn.up.state_dict())
    ref.linear2.load_state_dict(block.ffn.down.state_dict())
    ref.norm1.load_state_dict(block.ln_attn.state_dict())
    ref.norm2.load_state_dict(block.ln_ffn.state_dict())


@pytest.mark.parametrize("masked", [False, True])
def test_transformer_block_matches_torch_encoder_layer(masked):
    torch.manual_seed(0)
    d_model, h, d_ff, seq = 8, 2, 16, 5
    block = TransformerBlock(d_model, h, d_ff)
    with torch.no_grad():  # LayerNorm 的参数也换成随机值，确保真的被复制
        for norm in (block.ln_attn, block.ln_ffn):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    ref = nn.TransformerEncoderLayer(d_model, h, d_ff, dropout=0.0, activation="relu",
                                     batch_first=True, norm_first=False)
    _copy_into_encoder_layer(block, ref)
    x = torch.randn(2, seq, d_model)
    mask = causal_mask(seq) if masked else None
    src_mask = None if mask is None else to_nn_mha_mask(mask)  # bool，True = 不许看
    # 1) 训练模式 + dropout 0 + float64：走普通的数学路径，逐位比较
    block64, ref64 = block.double(), ref.double().train()
    torch.testing.assert_close(block64(x.double(), mask), ref64(x.double(), src_mask=src_mask),
                               atol=1e-12, rtol=0)
    # 2) eval + no_grad + float32：PyTorch 可能走快速路径，容差放宽到 float32 量级
    block32, ref32 = block.float().eval(), ref.float().eval()
    with torch.no_grad():
        torch.testing.assert_close(block32(x, mask), ref32(x, src_mask=src_mask), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("masked", [False, True])
def test_naive_two_heads_equal_fused_projection(masked):
    torch.manual_seed(0)
    fused = MultiHeadAttention(d_model=8, num_heads=2)
    naive = NaiveMultiHeadAttention.from_fused(fused)
    assert len(naive.heads) == 2 and naive.heads[0].W_Q.weight.shape == (4, 8)
    x = torch.randn(2, 5, 8)
    mask = causal_mask(5) if masked else None
    out_f, w_f = fused(x, mask, return_weights=True)
    out_n, w_n = naive(x, mask, return_weights=True)
    torch.testing.assert_close(out_n, out_f, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(w_n, w_f, atol=1e-6, rtol=1e-5)
    # 一个 nn.Linear(8, 8) 的参数 = 两个 nn.Linear(8, 4)
    assert sum(p.numel() for p in fused.parameters()) == sum(p.numel() for p in naive.parameters())


def test_naive_without_copy_differs_from_fused():
    torch.manual_seed(0)
    fused = MultiHeadAttention(8, 2)
    x = torch.randn(1, 5, 8)
    assert not torch.allclose(NaiveMultiHeadAttention(8, 2)(x), fused(x))


def test_mha_attributes_created_in_order_with_bias():
    mha = MultiHeadAttention(8, 2)
    assert [n for n, _ in mha.named_children()] == ["W_Q", "W_K", "W_V", "W_O"]
    assert (mha.d_model, mha.num_heads, mha.d_k) == (8, 2, 4)
    assert all(m.bias is not None and m.weight.shape == (8, 8) for m in mha.children())


def test_split_and_merge_heads_are_inverse_and_slice_features():
    mha = MultiHeadAttention(8, 2)
    t = torch.arange(2 * 3 * 8.0).view(2, 3, 8)
    s = mha.split_heads(t)
    assert s.shape == (2, 2, 3, 4)
    assert torch.equal(s[:, 1], t[..., 4:])  # 头 1 看后 4 个分量
    assert torch.equal(mha.merge_heads(s), t)


def test_mha_accepts_4d_mask_and_returns_per_head_weights():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(1, 5, 8)
    a = mha(x, causal_mask(5))
    out, w = mha(x, causal_mask(5)[None, None], return_weights=True)
    assert torch.equal(a, out) and out.shape == (1, 5, 8) and w.shape == (1, 2, 5, 5)
    assert torch.equal(w[0, 0].triu(1), torch.zeros(5, 5))


def _changed_future(x, t):
    y = x.clone()
    y[:, t + 1:] = torch.randn_like(y[:, t + 1:])
    return y


@pytest.mark.parametrize("module_cls", [MultiHeadAttention, TransformerBlock])
@pytest.mark.parametrize("masked", [True, False])
def test_causality_future_tokens_do_not_change_past_outputs(module_cls, masked):
    torch.manual_seed(0)
    model = module_cls(8, 2)
    x = torch.randn(2, 6, 8)
    t = 2
    mask = causal_mask(6) if masked else None
    a, b = model(x, mask), model(_changed_future(x, t), mask)
    assert torch.allclose(a[:, : t + 1], b[:, : t + 1], atol=1e-6) is masked
    assert not torch.allclose(a[:, t + 1:], b[:, t + 1:])


def test_ffn_treats_positions_independently():
    torch.manual_seed(0)
    ffn = FeedForward(4, 16)
    x = torch.randn(2, 5, 4)
    out = ffn(x)
    torch.testing.assert_close(out[:, 1:2], ffn(x[:, 1:2]))
    y = x.clone()
    y[:, [0, 2, 3, 4]] += 1.0
    torch.testing.assert_close(ffn(y)[:, 1], out[:, 1])


def test_ffn_param_count_equals_formula_and_default_is_4x():
    ffn = FeedForward(512, 2048)
    assert sum(p.numel() for p in ffn.parameters()) == feedforward_num_params(512, 2048) == 2_099_712
    small = FeedForward(8)
    assert small.up.out_features == 32 and small.down.in_features == 32
    assert sum(p.numel() for p in small.parameters()) == 2 * 8 * 32 + 32 + 8


def test_block_children_order_and_shape_preserved():
    block = TransformerBlock(8, 2)
    assert [n for n, _ in block.named_children()] == ["attn", "ln_attn", "ffn", "ln_ffn"]
    x = torch.randn(2, 5, 8)
    assert block(x, causal_mask(5)).shape == x.shape


def test_block_is_post_ln():
    torch.manual_seed(0)
    block = TransformerBlock(8, 2)
    x = torch.randn(1, 4, 8)
    h = block.ln_attn(x + block.attn(x))
    torch.testing.assert_close(block(x), block.ln_ffn(h + block.ffn(h)))


def test_heads_must_divide_d_model():
    with pytest.raises(ValueError, match=r"d_model = 10，num_heads = 3"):
        MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match=r"d_model = 10，num_heads = 4"):
        NaiveMultiHeadAttention(10, 4)
    with pytest.raises(ValueError, match=r"d_model = 8，num_heads = 3"):
        TransformerBlock(8, 3)


@pytest.mark.parametrize("make,bad", [
    (lambda: MultiHeadAttention(8, -1), "num_heads 应是正整数，收到 -1"),
    (lambda: MultiHeadAttention(8, 0), "num_heads 应是正整数，收到 0"),
    (lambda: NaiveMultiHeadAttention(4, 2.0), "num_heads 应是正整数，收到 2.0（float）"),
    (lambda: MultiHeadAttention(0, 1), "d_model 应是正整数，收到 0"),
    (lambda: FeedForward(4, -1), "d_ff 应是正整数，收到 -1"),
    (lambda: FeedForward(4, 0), "d_ff 应是正整数，收到 0"),
    (lambda: FeedForward("4"), "d_model 应是正整数，收到 '4'（str）"),
    (lambda: TransformerBlock(8, 2, d_ff=True), "d_ff 应是正整数，收到 True（bool）"),
    (lambda: feedforward_num_params(512, -2048), "d_ff 应是正整数，收到 -2048"),
])
def test_sizes_that_are_not_positive_integers_are_refused_in_chinese(make, bad):
    with pytest.raises(ValueError, match=re.escape(bad)):
        make()


def test_numpy_integer_sizes_are_accepted():
    assert FeedForward(np.int64(4), np.int64(16)).up.out_features == 16
    assert feedforward_num_params(np.int64(512), 2048) == feedforward_num_params(512, 2048)


def test_input_must_be_3d():
    with pytest.raises(ValueError, match=r"\[batch, seq_len, d_model\].*2 维.*\(5, 8\)"):
        MultiHeadAttention(8, 2)(torch.randn(5, 8))


def test_input_last_dim_must_be_d_model():
    with pytest.raises(ValueError, match=r"d_model = 8，收到 6"):
        MultiHeadAttention(8, 2)(torch.randn(1, 5, 6))


def test_mask_must_fit_scores():
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=re.escape("(4, 4)") + ".*" + re.escape("(1, 2, 5, 5)")):
        mha(torch.randn(1, 5, 8), causal_mask(4))
