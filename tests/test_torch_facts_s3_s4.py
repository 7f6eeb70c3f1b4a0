"""第 3、4 节里每一句关于 PyTorch 的话，对照 torch 本身检查。

第 3 节提示框“把本书的遮蔽矩阵交给 PyTorch 之前”：

本书 `causal_mask` 返回 int64，1 = 可以看；PyTorch 的两个接口对它各有各的反应：
原样传入就报错，`.bool()` 之后一个同向一个反向，`.float()` 之后被当成加到分数上的偏置；
整行被遮住时，softmax 和 nn.MultiheadAttention 给 NaN，F.scaled_dot_product_attention 给 0。

第 4 节：nn.MultiheadAttention 只支持平均分，每个头 embed_dim // num_heads 维，不能整除就报错。
默认设置下它把 Q、K、V 的投影并成一个 in_proj_weight，给了别的 kdim、vdim 才分开存。
"""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from minigpt.attention import (
    causal_mask, scaled_dot_product_attention, softmax_weights, to_nn_mha_mask, to_sdpa_mask,
)

SEQ, DIM = 4, 8


@pytest.fixture
def qkv():
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(SEQ, DIM, generator=g) for _ in range(3))


@pytest.fixture
def mha():
    torch.manual_seed(0)
    return nn.MultiheadAttention(embed_dim=DIM, num_heads=1)


def test_causal_mask_is_int64_with_ones_on_and_below_the_diagonal():
    mask = causal_mask(SEQ)
    assert mask.dtype == torch.int64
    assert torch.equal(mask, torch.tril(torch.ones(SEQ, SEQ, dtype=torch.int64)))


def test_int64_mask_passed_as_is_raises_in_nn_multihead_attention(mha, qkv):
    x, _, _ = qkv
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        mha(x, x, x, attn_mask=causal_mask(SEQ))


def test_int64_mask_passed_as_is_raises_in_sdpa(qkv):
    q, k, v = qkv
    with pytest.raises(RuntimeError, match="attn_mask dtype"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(SEQ))


def test_bool_mask_means_may_attend_in_sdpa(qkv):
    """`.bool()` 之后 F.scaled_dot_product_attention 的 True = 可以参与：和本书同向，结果和本书相同。"""
    q, k, v = qkv
    mask = causal_mask(SEQ)
    ours, _ = scaled_dot_product_attention(q, k, v, mask)
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.bool())
    assert torch.allclose(theirs, ours, atol=1e-6)
    assert torch.equal(to_sdpa_mask(mask), mask.bool())


def test_bool_mask_means_masked_out_in_nn_multihead_attention(mha, qkv):
    """`.bool()` 之后 nn.MultiheadAttention 的 True = 不许看：方向反了，不报错。

    每个位置只剩未来可看：对角线及其左下方的权重全是 0，最后一行整行被遮，得到 NaN。
    """
    x, _, _ = qkv
    with torch.no_grad():
        _, w = mha(x, x, x, attn_mask=causal_mask(SEQ).bool())
    assert torch.equal(w[:-1].tril(), torch.zeros(SEQ - 1, SEQ))
    assert (w[:-1].triu(1).sum(dim=-1) - 1).abs().max() < 1e-6
    assert w[-1].isnan().all()
    # 本书的转换函数给出的才是对的方向：未来位置权重为 0
    with torch.no_grad():
        _, w = mha(x, x, x, attn_mask=to_nn_mha_mask(causal_mask(SEQ)))
    assert torch.equal(w.triu(1), torch.zeros(SEQ, SEQ))
    assert torch.equal(to_nn_mha_mask(causal_mask(SEQ)), causal_mask(SEQ) == 0)


def test_transformer_encoder_layer_src_mask_true_means_masked_out(qkv):
    """nn.TransformerEncoderLayer 的 src_mask 和 nn.MultiheadAttention 同一约定：True = 不许看。"""
    x, _, _ = qkv
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(DIM, nhead=1, dim_feedforward=16, dropout=0.0).eval()
    mask = to_nn_mha_mask(causal_mask(SEQ))
    changed = x.clone()
    changed[-1] += 5.0  # 只改最后一个 token
    with torch.no_grad():
        a, b = layer(x, src_mask=mask), layer(changed, src_mask=mask)
    # 前面的位置看不到最后一个 token：它们的输出不变
    assert torch.allclose(a[:-1], b[:-1], atol=1e-6)
    assert not torch.allclose(a[-1], b[-1])


@pytest.mark.parametrize("interface", ["nn.MultiheadAttention", "F.scaled_dot_product_attention"])
def test_float_mask_is_added_to_the_scores_and_hides_nothing(interface, mha, qkv):
    """`.float()` 之后 0/1 被当成加到分数上的偏置：可看的位置加 1，未来位置的权重不是 0，不报错。"""
    q, k, v = qkv
    mask = causal_mask(SEQ)
    if interface == "nn.MultiheadAttention":
        with torch.no_grad():
            _, w = mha(q, q, q, attn_mask=mask.float())
            _, w_bias = mha(q, q, q, attn_mask=torch.zeros(SEQ, SEQ) + mask)
        assert torch.allclose(w, w_bias)
        assert (w.triu(1)[0, 1:] > 0).all()
    else:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.float())
        scores = q @ k.T / DIM ** 0.5 + mask
        assert torch.allclose(out, torch.softmax(scores, dim=-1) @ v, atol=1e-6)
        assert not torch.allclose(out, scaled_dot_product_attention(q, k, v, mask)[0], atol=1e-3)


def _row0_dead():
    """本书约定的 mask：第 0 行一个都不许看，其余是因果遮蔽。"""
    mask = causal_mask(SEQ)
    mask[0] = 0
    return mask


def test_fully_masked_row_gives_nan_in_softmax():
    scores = torch.zeros(SEQ, SEQ).masked_fill(_row0_dead() == 0, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    assert w[0].isnan().all() and not w[1:].isnan().any()


def test_fully_masked_row_gives_nan_in_nn_multihead_attention_with_weights(mha, qkv):
    """默认 need_weights=True：那一行的输出和权重都是 NaN。"""
    x, _, _ = qkv
    with torch.no_grad():
        out, w = mha(x, x, x, attn_mask=to_nn_mha_mask(_row0_dead()))
    assert out[0].isnan().all() and w[0].isnan().all()
    assert not out[1:].isnan().any()


def test_fully_masked_row_gives_zero_in_nn_multihead_attention_without_weights(mha, qkv):
    """need_weights=False 时 nn.MultiheadAttention 走 F.scaled_dot_product_attention：那一行是 0。

    0 是注意力部分的输出；nn.MultiheadAttention 最后还要过 out_proj，这一行于是等于 out_proj 的偏置
    （默认初始化为 0）。
    """
    x, _, _ = qkv
    with torch.no_grad():
        out, w = mha(x, x, x, attn_mask=to_nn_mha_mask(_row0_dead()), need_weights=False)
    assert w is None
    assert torch.equal(out[0], mha.out_proj.bias)
    assert torch.equal(mha.out_proj.bias, torch.zeros(DIM))


def test_fully_masked_row_gives_zero_in_sdpa(qkv):
    q, k, v = qkv
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=to_sdpa_mask(_row0_dead()))
    assert torch.equal(out[0], torch.zeros(DIM))
    assert not out[1:].isnan().any()


def test_fully_masked_row_raises_a_chinese_error_in_minigpt():
    scores = torch.zeros(SEQ, SEQ).masked_fill(_row0_dead() == 0, float("-inf"))
    with pytest.raises(ValueError, match="第 0 行"):
        softmax_weights(scores)


def test_causal_mask_never_masks_a_whole_row():
    for n in (1, 2, 7):
        assert (causal_mask(n).sum(dim=-1) >= 1).all()


# ---------------------------------------------------------------- 第 4 节


def test_nn_multihead_attention_splits_embed_dim_evenly_across_heads():
    for embed_dim, heads in ((8, 2), (768, 12), (512, 8)):
        m = nn.MultiheadAttention(embed_dim, heads)
        assert m.head_dim == embed_dim // heads
        # Q、K、V 三个投影都是 embed_dim → embed_dim，没有单独设每头宽度的参数
        assert tuple(m.in_proj_weight.shape) == (3 * embed_dim, embed_dim)
        assert tuple(m.out_proj.weight.shape) == (embed_dim, embed_dim)


def test_nn_multihead_attention_fuses_qkv_only_when_kdim_and_vdim_equal_embed_dim():
    """第 4 节：默认设置下 Q、K、V 并成一个 in_proj_weight；给了别的 kdim、vdim 才分成三个矩阵。"""
    fused = nn.MultiheadAttention(8, 2)
    assert fused.in_proj_weight is not None and fused.q_proj_weight is None
    apart = nn.MultiheadAttention(8, 2, kdim=4, vdim=6)
    assert apart.in_proj_weight is None
    assert [tuple(w.shape) for w in (apart.q_proj_weight, apart.k_proj_weight, apart.v_proj_weight)] \
        == [(8, 8), (8, 4), (8, 6)]


def test_nn_multihead_attention_rejects_embed_dim_not_divisible_by_heads():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(512, 7)


def test_minus_infinity_gives_an_exact_zero_weight():
    """第 3 节：e^{-inf} 在浮点运算里就是 0，被遮的权重是精确的 0。"""
    assert torch.exp(torch.tensor(float("-inf"))).item() == 0.0
    w = torch.softmax(torch.tensor([0.3, 0.5, float("-inf")]), dim=-1)
    assert w[2].item() == 0.0 and abs(w.sum().item() - 1) < 1e-6


def test_float32_minimum_as_mask_value_also_gives_zero_weight():
    """第 3 节“想一想”2：用 float32 能表示的最小值代替 -inf，算出的权重同样是 0。"""
    tiny = torch.finfo(torch.float32).min
    assert torch.exp(torch.tensor(tiny)).item() == 0.0
    w = torch.softmax(torch.tensor([0.3, 0.5, tiny]), dim=-1)
    assert w[2].item() == 0.0


def test_nn_linear_has_a_bias_by_default_and_stores_the_transpose():
    """第 4 节：nn.Linear 默认 bias=True；weight 的形状是 [out, in]，计算的是 x Wᵀ + b。"""
    torch.manual_seed(0)
    lin = nn.Linear(8, 4)
    assert lin.bias is not None and tuple(lin.weight.shape) == (4, 8)
    x = torch.randn(3, 8)
    assert torch.allclose(lin(x), x @ lin.weight.T + lin.bias)


def test_transpose_moves_no_data_view_refuses_and_reshape_copies():
    """第 4 节 merge_heads：transpose 只改 stride；view 拒绝不连续的张量；reshape 会自己复制。"""
    attn = torch.arange(40.0).view(1, 2, 5, 4)
    moved = attn.transpose(1, 2)
    assert moved.data_ptr() == attn.data_ptr() and not moved.is_contiguous()
    assert moved.stride() == (40, 4, 20, 1)
    with pytest.raises(RuntimeError):
        moved.view(1, 5, 8)
    flat = moved.reshape(1, 5, 8)
    assert flat.data_ptr() != attn.data_ptr()
    assert torch.equal(flat, moved.contiguous().view(1, 5, 8))


def test_one_width_has_two_names_inside_pytorch():
    """第 4 节：造 nn.TransformerEncoderLayer 时宽度叫 d_model，造好之后层上没有这个属性，要从层里的
    nn.MultiheadAttention 按 embed_dim 读回来（nn.MultiheadAttention 的参数就叫 embed_dim，必须给）。"""
    import inspect
    mha = inspect.signature(nn.MultiheadAttention).parameters
    assert "embed_dim" in mha and mha["embed_dim"].default is inspect.Parameter.empty
    assert "d_model" in inspect.signature(nn.TransformerEncoderLayer).parameters
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2)
    assert not hasattr(layer, "d_model") and layer.self_attn.embed_dim == 8
