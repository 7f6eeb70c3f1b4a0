"""书中的数值实验：第 2 节 √d_k 的经验验证，附录的 RNN 与注意力（正文数字见 test_source_numbers.py），第 6 节只走残差路径的梯度。"""

import pytest
import torch

from minigpt.attention import causal_mask, to_nn_mha_mask
from minigpt.experiments import (
    AttentionGradients, DotProductStat, FirstPositionVsLength, RNNGradients, SoftmaxSaturation,
    attention_input_gradients, cumulative_mass, dot_product_stats, first_half_share,
    first_position_gradient_vs_length, lstm_input_gradients, residual_path_gradient,
    rnn_input_gradients, rnn_length_sweep, softmax_saturation,
)
from minigpt.layers import FeedForward, MultiHeadAttention


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


def test_float64_option_keeps_the_same_recipe():
    r32 = rnn_input_gradients(seq_len=20)
    r64 = rnn_input_gradients(seq_len=20, dtype=torch.float64)
    assert r64.grad_norms.dtype == torch.float64
    torch.testing.assert_close(r64.grad_norms.float(), r32.grad_norms, rtol=1e-4, atol=1e-12)


    AttentionGradients, DotProductStat, FirstPositionVsLength, RNNGradients, SoftmaxSaturation,
    attention_input_gradients, cumulative_mass, dot_product_stats, first_half_share,
    first_position_gradient_vs_length, lstm_input_gradients, residual_path_gradient,
    rnn_input_gradients, rnn_length_sweep, softmax_saturation,
