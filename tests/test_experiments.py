"""书中的数值实验：第 2 节 √d_k 的经验验证，附录的 RNN 与注意力（正文数字见 test_source_numbers.py），第 6 节拿掉 LayerNorm 后的激活大小与只走残差路径的梯度。"""

import math

import pytest
import torch

from minigpt.attention import causal_mask, to_nn_mha_mask
from minigpt.experiments import (
    ActivationScale, AttentionGradients, DotProductStat, FirstPositionVsLength, RNNGradients, SoftmaxSaturation,
    activation_scale, attention_input_gradients, cumulative_mass, dot_product_stats, first_half_share, init_score_std,
    first_position_gradient_vs_length, lstm_input_gradients, residual_path_gradient,
    rnn_input_gradients, rnn_length_sweep, softmax_saturation,
)
from minigpt.layers import FeedForward, MultiHeadAttention, TransformerBlock
from minigpt.leak import LeakRun


@pytest.fixture(scope="module")
def rnn():
    return rnn_input_gradients()


@pytest.fixture(scope="module")
def attn():
    return attention_input_gradients()


def test_attention_reaches_position_zero_but_rnn_does_not(rnn, attn):
    assert attn.grad_norms[0].item() > 1e-6
    assert rnn.grad_norms[0].item() < 1e-15


def test_result_shapes(rnn, attn):
    assert rnn.grad_norms.shape == (80,) and rnn.outputs.shape == (1, 80, 8) and rnn.h_last.shape == (1, 1, 8)
    assert rnn.x.grad is not None and rnn.grad_norms.grad_fn is None
    assert attn.grad_norms.shape == (80,) and attn.weights.shape == (2, 80, 80)
    assert attn.last_token_weights.shape == (80,)
    assert attn.last_token_weights.sum().item() == pytest.approx(1.0, abs=1e-5)


def test_attention_weights_are_causal(attn):
    assert torch.equal(attn.weights.triu(1), torch.zeros_like(attn.weights))


def test_mask_conversion_equals_source_triu_mask():
    assert torch.equal(to_nn_mha_mask(causal_mask(80)),
                       torch.triu(torch.ones(80, 80, dtype=torch.bool), diagonal=1))


def test_rnn_sweep_first_position_gradient_decreases_with_length():
    sweep = rnn_length_sweep()
    assert list(sweep) == [10, 20, 40, 80]
    firsts = [sweep[n][0].item() for n in sweep]
    assert all(a > b for a, b in zip(firsts, firsts[1:]))
    assert all(sweep[n].shape == (n,) for n in sweep)


def test_sweep_reseeds_each_run(rnn):
    assert torch.equal(rnn_length_sweep(lengths=(80,))[80], rnn.grad_norms)


def test_cumulative_mass_and_first_half_share():
    g = torch.tensor([1.0, 1.0, 2.0, 4.0])
    torch.testing.assert_close(cumulative_mass(g), torch.tensor([0.125, 0.25, 0.5, 1.0]))
    assert first_half_share(g) == pytest.approx(0.25)


def test_rnn_gradient_mass_sits_at_the_end(rnn, attn):
    assert first_half_share(rnn.grad_norms) < 1e-6
    assert 0.3 < first_half_share(attn.grad_norms) < 0.5


def test_first_position_vs_length():
    r = first_position_gradient_vs_length()
    assert r.lengths == (10, 20, 40, 80, 160)
    assert all(a > b for a, b in zip(r.rnn, r.rnn[1:]))
    assert r.rnn[-1] == 0.0  # float32 下溢
    assert min(r.attention) > 1e-6


def test_last_output_norm_shrinks_with_length_with_ups_and_downs():
    """附录末尾：‖o_T‖ 从长度 10 降到 160，“中途有起伏”——不是一路单调往下走。"""
    o = first_position_gradient_vs_length().attention_last_output_norm
    assert o[-1] < o[0]
    assert any(b > a for a, b in zip(o, o[1:])), o


def test_float64_option_keeps_the_same_recipe():
    r32 = rnn_input_gradients(seq_len=20)
    r64 = rnn_input_gradients(seq_len=20, dtype=torch.float64)
    assert r64.grad_norms.dtype == torch.float64
    torch.testing.assert_close(r64.grad_norms.float(), r32.grad_norms, rtol=1e-4, atol=1e-12)


# ---------------------------------------------------------------- 第 6 节：只走残差路径的梯度


def _layernorm_backward(u: torch.Tensor, grad_out: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """γ = 1 时 LayerNorm 的反向公式（逐 token）：(v − mean(v) − x̂·mean(v·x̂)) / σ。"""
    mu = u.mean(-1, keepdim=True)
    sigma = torch.sqrt(u.var(-1, unbiased=False, keepdim=True) + eps)
    xhat = (u - mu) / sigma
    v = grad_out
    return (v - v.mean(-1, keepdim=True) - xhat * (v * xhat).mean(-1, keepdim=True)) / sigma


def test_activation_scale_stays_at_one_with_layernorm_and_grows_without_it():
    """第 6 节的说法：同一摞 32 个 Block（种子 42），带着 LayerNorm 每层之后的 RMS 都是 1（差在 ε 的量级），
    去掉 LayerNorm 只留残差相加，RMS 总体一路变大，32 层之后超过输入的 5 倍。"""
    r = activation_scale(num_layers=32, seed=42)
    assert isinstance(r, ActivationScale) and r.num_layers == 32
    assert len(r.rms_with_ln) == len(r.rms_without_ln) == 33
    assert r.rms_with_ln[0] == r.rms_without_ln[0]           # 同一个输入
    assert all(abs(v - 1) < 1e-4 for v in r.rms_with_ln[1:])
    assert r.rms_without_ln[0] < r.rms_without_ln[8] < r.rms_without_ln[16] < r.rms_without_ln[32]
    assert r.rms_without_ln[32] > 5 * r.rms_without_ln[0]


def test_activation_scale_uses_the_same_blocks_and_only_drops_the_layernorms():
    """独立的参照：同样的创建顺序，手写两种前向。"""
    torch.manual_seed(7)
    x = torch.randn(1, 4, 8)
    blocks = [TransformerBlock(8, 2) for _ in range(3)]
    mask = causal_mask(4)
    a = b = x
    with torch.no_grad():
        for blk in blocks:
            a = blk.ln_ffn(a + blk.ffn(blk.ln_attn(a + blk.attn(a, mask))))
            b = b + blk.attn(b, mask)
            b = b + blk.ffn(b)
    r = activation_scale(num_layers=3, seq_len=4, seed=7)
    assert r.rms_with_ln[-1] == pytest.approx(a.pow(2).mean().sqrt().item(), rel=1e-6)
    assert r.rms_without_ln[-1] == pytest.approx(b.pow(2).mean().sqrt().item(), rel=1e-6)


def test_residual_path_gradient_pre_ln_passes_the_gradient_unchanged():
    for n in (1, 3, 64):
        assert residual_path_gradient(n, norm_first=True) == 1.0


def test_residual_path_gradient_post_ln_equals_two_layernorm_backwards():
    # 独立的参照：同样的创建顺序，前向时记下两个 LayerNorm 的输入，反向用 LayerNorm 的闭式导数
    torch.manual_seed(42)
    x = torch.randn(1, 5, 8)
    attn, ffn = MultiHeadAttention(8, 2), FeedForward(8)
    ln_attn, ln_ffn = torch.nn.LayerNorm(8), torch.nn.LayerNorm(8)
    g = torch.randn(1, 5, 8)
    with torch.no_grad():
        u1 = x + attn(x, causal_mask(5))
        h1 = ln_attn(u1)
        u2 = h1 + ffn(h1)
    grad_x = _layernorm_backward(u1, _layernorm_backward(u2, g))
    expected = (grad_x.norm() / g.norm()).item()
    assert residual_path_gradient(1, norm_first=False) == pytest.approx(expected, rel=1e-5)


def test_residual_path_gradient_post_ln_shrinks_with_depth():
    shallow, deep = (residual_path_gradient(n, norm_first=False) for n in (1, 64))
    assert deep < 0.1 < shallow < 1.0


def test_lstm_input_gradients_match_a_plain_lstm_run():
    torch.manual_seed(42)
    model = torch.nn.LSTM(4, 8, batch_first=True)
    x = torch.randn(1, 80, 4, requires_grad=True)
    out, _ = model(x)
    out[:, -1, :].pow(2).mean().backward()
    expected = x.grad.norm(dim=-1)[0]
    got = lstm_input_gradients(80, seed=42)
    assert torch.equal(got, expected)
    assert got[0] < 1e-12 * got[-1]  # 没训练过的 LSTM 也一样：开头的梯度小了十几个数量级


# ---------------------------------------------------------------- 第 2 节：为什么是 √d_k


def test_dot_product_variance_grows_like_dk_and_scaling_restores_one():
    stats = dot_product_stats(d_k_values=(4, 16, 64, 256), n_samples=10000, seed=0)
    assert [s.d_k for s in stats] == [4, 16, 64, 256]
    for s in stats:
        assert abs(s.var_unscaled / s.d_k - 1) < 0.05
        assert abs(s.var_scaled - 1) < 0.05


def test_at_d_k_64_two_keys_often_score_8_or_more_apart_for_the_same_query():
    """第 2 节：d_k = 64、分量服从 N(0, 1) 时，同一个 Query 给两个 Key 的分数相差 8 以上“并不稀奇”。

    差 q·k1 − q·k2 的方差是 2·d_k = 128（标准差约 11.3），|差| ≥ 8 的概率约为 0.48。
    """
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(20000, 64, generator=gen, dtype=torch.float64)
    k1 = torch.randn(20000, 64, generator=gen, dtype=torch.float64)
    k2 = torch.randn(20000, 64, generator=gen, dtype=torch.float64)
    gap = ((q * k1).sum(-1) - (q * k2).sum(-1)).abs()
    share = (gap >= 8).double().mean().item()
    assert 0.4 < share < 0.56, share


def test_nn_linear_default_weights_are_uniform_within_one_over_sqrt_fan_in():
    """第 2 节：nn.Linear 默认把权重均匀地取在 ±1/√d_model 之间，方差 1/(3·d_model)。"""
    torch.manual_seed(0)
    for d in (4, 64, 256):
        w = torch.nn.Linear(d, 256, bias=False).weight.detach().double()
        bound = 1 / math.sqrt(d)
        assert w.abs().max().item() <= bound and w.abs().max().item() > 0.99 * bound
        assert abs(w.var().item() * 3 * d - 1) < 0.05


def test_default_init_gives_scaled_scores_with_std_near_one_third_for_every_d_k():
    """第 2 节：Q、K 分量方差约 1/3（标准差约 0.577），缩放后分数的标准差约 1/3，与 d_k 无关。"""
    torch.manual_seed(5)
    before = torch.rand(1)
    torch.manual_seed(5)
    res = init_score_std((4, 16, 64, 256), n_seeds=100)
    assert torch.equal(torch.rand(1), before)  # 不动全局随机状态
    assert [r.d_k for r in res] == [4, 16, 64, 256]
    for r in res:
        assert abs(r.std_q - math.sqrt(1 / 3)) < 0.03, r
        assert 0.28 < r.std_scaled < 0.42, r


def test_dot_product_stats_leaves_global_rng_alone():
    torch.manual_seed(1)
    expected = torch.rand(1)
    torch.manual_seed(1)
    dot_product_stats(n_samples=100)
    assert torch.equal(torch.rand(1), expected)


def test_softmax_saturation_unscaled_is_near_one_hot():
    r = softmax_saturation(d_k=64, n_keys=8, seed=0)
    assert r.weights.shape == r.scaled_weights.shape == (8,)
    assert torch.allclose(r.scaled_scores, r.scores / 8)
    assert r.median_max_weight > 0.9 and r.scaled_median_max_weight < 0.5
    assert r.median_grad_norm < 0.3 * r.scaled_median_grad_norm
    assert r.max_weight > 0.9 and r.scaled_max_weight < 0.5  # 示例就是典型的一次
    assert r.max_weight == pytest.approx(r.weights.max().item())


def test_sensitivity_is_the_norm_of_all_partial_derivatives_of_softmax():
    """第 2 节式 (s2-sensitivity)：灵敏度 = sqrt(Σ_j Σ_l (∂a_j/∂z_l)²)，由 autograd 逐个求偏导来核对。"""
    r = softmax_saturation(d_k=64, n_keys=8, seed=0, n_trials=50)
    for scores, expected in ((r.scores, r.grad_norm), (r.scaled_scores, r.scaled_grad_norm)):
        jac = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), scores)  # [n, n]
        assert jac.norm().item() == pytest.approx(expected, rel=1e-9)
    one_hot = torch.tensor([50.0, 0.0, 0.0])  # 权重几乎是 one-hot：每个偏导都接近 0
    assert torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), one_hot).norm() < 1e-15


@pytest.mark.parametrize("cls", [DotProductStat, SoftmaxSaturation, RNNGradients,
                                 AttentionGradients, FirstPositionVsLength, LeakRun])
def test_result_dataclasses_take_keyword_arguments_only(cls):
    """结果数据类的字段一多，按位置传参就会悄悄错位：它们只接受关键字参数。"""
    n_fields = len(cls.__dataclass_fields__)
    with pytest.raises(TypeError, match="positional"):
        cls(*range(n_fields))


# ---------------------------------------------------------------- 附录：不同长度用同一条输入的开头


def test_length_sweeps_use_prefixes_of_one_input():
    """附录说：短序列就是最长那条输入的开头，模型参数也相同；所以长度 80 的结果与单独跑一次相同。"""
    longest = rnn_input_gradients(80)
    sweep = rnn_length_sweep(lengths=(10, 80))
    assert torch.equal(sweep[80], longest.grad_norms)
    prefix = rnn_input_gradients(10, inputs=longest.x[:, :10])
    assert torch.equal(prefix.x, longest.x[:, :10])
    assert torch.equal(sweep[10], prefix.grad_norms)
    assert torch.equal(prefix.model.weight_hh_l0, longest.model.weight_hh_l0)
    # 不给 inputs 时长度 10 另抽一条输入，末尾几个位置和长序列的开头不同（所以才要取前缀）
    assert not torch.equal(rnn_input_gradients(10).x, longest.x[:, :10])


def test_rnn_first_position_drops_at_least_three_orders_per_doubling():
    """附录说：长度每翻一倍，位置 0 的梯度至少再小 3 个数量级（正文 glue 的是向下取整后的最小降幅）。"""
    import math
    sweep = rnn_length_sweep()
    firsts = [sweep[n][0].item() for n in (10, 20, 40, 80)]
    assert min(math.log10(a / b) for a, b in zip(firsts, firsts[1:])) >= 3


def test_attention_first_position_gradient_falls_faster_than_one_over_n():
    """附录说：注意力位置 0 的梯度按长度的双对数斜率离 −1.5 比离 −1 近；分给位置 0 的权重大致按 1/n
    变小，末尾输出的范数也在变小（0.295 → 0.118），两个斜率之和接近梯度的斜率；160 时只缩小不到两个数量级。"""
    from minigpt.experiments import loglog_slope

    fp = first_position_gradient_vs_length()
    k = loglog_slope(fp.lengths, fp.attention)
    assert abs(k + 1.5) < abs(k + 1.0)
    k_w = loglog_slope(fp.lengths, fp.attention_weight_0)
    assert -1.25 < k_w < -0.85
    o = fp.attention_last_output_norm
    assert o[-1] < o[0] and f"{o[0]:.3f}" == "0.295" and f"{o[-1]:.3f}" == "0.118"
    k_o = loglog_slope(fp.lengths, o)
    assert k_o < 0 and abs((k_w + k_o) - k) < 0.2
    rest = [g / (w * n) for g, w, n in zip(fp.attention, fp.attention_weight_0, o)]
    assert max(rest) / min(rest) < 2           # 剩下的因子在各长度上变化不到 2 倍
    assert 1 < fp.attention[0] / fp.attention[-1] < 100


def test_loglog_slope_recovers_a_power_law():
    from minigpt.experiments import loglog_slope

    xs = [10, 20, 40, 80]
    assert loglog_slope(xs, [3 * x ** -1.5 for x in xs]) == pytest.approx(-1.5)
    assert loglog_slope(xs, [1 / x for x in xs]) == pytest.approx(-1.0)


def test_last_token_weights_alt_text_claims_hold():
    """图 A.4 的替代文字说：大多数点落在平均值（1/80）的一半到一倍半之间，只有两个点超过平均值的两倍。"""
    w = attention_input_gradients().last_token_weights
    ratio = w * len(w)
    assert int((ratio > 2).sum()) == 2
    assert ratio.max().item() < 3
    assert int(((ratio >= 0.5) & (ratio <= 1.5)).sum()) > len(w) // 2


def test_softmax_saturation_draws_the_trial_whose_max_weight_is_the_printed_median():
    """第 2 节的图画的那一次抽样，“不缩放时的最大权重”恰好等于正文打印的中位数（torch.median）。"""
    for n_trials in (1000, 7):
        res = softmax_saturation(d_k=64, n_keys=8, seed=0, n_trials=n_trials)
        assert res.max_weight == res.median_max_weight, n_trials
