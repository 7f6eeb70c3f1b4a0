"""原文第 1–2 节与附录里打印出的每一个数，按它打印的精度复现。

比较方式：
- 按固定小数位 / 科学计数法 / 百分比打印的数（如 1.9269、0.116176、1.714e-19、42.973%），
  用同样的格式化字符串比较，必须一字不差；
- 以 Python 全精度打印的 float32 值（如 X[0].tolist()）和 %.10f 打印的梯度，只能复现到 float32 的几个 ulp：
  不同 CPU 上 randn 的向量化路径和矩阵乘法的求和顺序不同，最后几位会变（实测 X[1][0] 差 9e-7）。
  全精度的 float32 值按绝对误差 2e-6 比较，%.10f 的梯度和权重按相对误差 1e-6 比较。
"""

import math

import pytest
import torch

from minigpt.attention import (
    apply_mask, attention_scores, causal_mask, scale_scores, scaled_dot_product_attention,
    softmax_weights,
)
from minigpt.data import VOCAB, encode, make_toy_example
from minigpt.experiments import (
    attention_input_gradients, first_half_share, rnn_input_gradients, rnn_length_sweep,
)


def fmt(t, spec):
    return [[format(v, spec) for v in row] for row in t.tolist()]


def assert_float32_close(got, printed):
    assert len(got) == len(printed)
    for g, p in zip(got, printed):
        assert math.isclose(g, p, rel_tol=1e-6, abs_tol=2e-6), (g, p)


@pytest.fixture(scope="module")
def toy():
    return make_toy_example()


@pytest.fixture(scope="module")
def steps(toy):
    scores = attention_scores(toy.Q, toy.K)
    scaled = scale_scores(scores, toy.Q.shape[-1])
    weights = softmax_weights(scaled)
    output, _ = scaled_dot_product_attention(toy.Q, toy.K, toy.V)
    return scores, scaled, weights, output


# ---------------------------------------------------------------- 第 1 节


def test_section1_vocab_ids_and_shapes(toy):
    assert len(VOCAB) == 10
    assert encode(["the", "cat", "sat"]) == toy.ids == [0, 2, 4]
    assert list(toy.X.shape) == [3, 4]
    assert toy.Q.shape == toy.K.shape == toy.V.shape == torch.Size([3, 4])


def test_section1_X_matrix(toy):
    assert fmt(toy.X, ".4f") == [
        ["1.9269", "1.4873", "0.9007", "-2.1055"],
        ["-0.7521", "1.6487", "-0.3925", "-1.4036"],
        ["1.6423", "-0.1596", "-0.4974", "0.4396"],
    ]


def test_section1_X_rows_full_precision(toy):
    assert_float32_close(toy.X[0].tolist(), [1.9269150495529175, 1.4872841835021973, 0.9007171988487244, -2.1055214405059814])
    assert_float32_close(toy.X[1].tolist(), [-0.7521361708641052, 1.6487228870391846, -0.3924786448478699, -1.4036067724227905])
    assert_float32_close(toy.X[2].tolist(), [1.6423169374465942, -0.15959732234477997, -0.4973974823951721, 0.4395892322063446])


# ---------------------------------------------------------------- 第 2 节


def test_section2_scores(steps):
    assert fmt(steps[0], ".4f") == [
        ["-0.9139", "-0.6422", "0.4003"],
        ["-0.4184", "-0.0361", "0.2776"],
        ["-0.8690", "0.0373", "-0.1415"],
    ]


def test_section2_scaling(toy, steps):
    scores, scaled = steps[0], steps[1]
    assert f"{math.sqrt(toy.Q.shape[-1]):.2f}" == "2.00"
    assert_float32_close(scores[0].tolist(), [-0.9139026403427124, -0.6421593427658081, 0.4002934694290161])
    assert_float32_close(scaled[0].tolist(), [-0.4569513201713562, -0.32107967138290405, 0.20014673471450806])


def test_section2_weights(steps):
    weights = steps[2]
    assert fmt(weights, ".4f") == [
        ["0.2454", "0.2811", "0.4735"],
        ["0.2757", "0.3338", "0.3905"],
        ["0.2493", "0.3921", "0.3586"],
    ]
    assert [round(s, 6) for s in weights.sum(dim=-1).tolist()] == [1.0, 1.0, 1.0]


def test_section2_output_token0(toy, steps):
    output = steps[3]
    assert list(output.shape) == [3, 4]
    assert_float32_close(output[0].tolist(), [-0.07093439996242523, 0.7985435128211975, 0.7109794020652771, 0.05999898165464401])


def test_section4_recap_of_single_head_weights(steps):
    """第 4 节「什么是头」重提的两位小数权重矩阵。"""
    assert fmt(steps[2], ".2f") == [["0.25", "0.28", "0.47"], ["0.28", "0.33", "0.39"], ["0.25", "0.39", "0.36"]]


def test_section3_illustrative_rows_are_computed():
    """第 3 节的示意分数：the、cat 两行与原文一致；sat 一行原文写 [0.22, 0.27, 0.51]，算出来是 [0.27, 0.29, 0.44]。"""
    scores = torch.tensor([[0.2, 0.3, 0.1], [0.3, 0.5, 0.8], [0.1, 0.2, 0.6]])
    weights = softmax_weights(apply_mask(scores, causal_mask(3)))
    assert fmt(weights, ".2f") == [["1.00", "0.00", "0.00"], ["0.45", "0.55", "0.00"], ["0.27", "0.29", "0.44"]]


# ---------------------------------------------------------------- 附录：RNN


@pytest.fixture(scope="module")
def rnn():
    return rnn_input_gradients(seq_len=80, input_dim=4, hidden_dim=8, seed=42)


def test_appendix_rnn_setup(rnn):
    assert repr(rnn.model) == "RNN(4, 8, batch_first=True)"
    assert tuple(rnn.x.shape) == (1, 80, 4)
    assert tuple(rnn.outputs.shape) == (1, 80, 8)
    assert tuple(rnn.h_last.shape) == (1, 1, 8)


def test_appendix_rnn_loss_and_gradients(rnn):
    g = rnn.grad_norms
    assert f"{rnn.loss:.6f}" == "0.116176"
    printed = {0: 0.0, 1: 0.0, 5: 0.0, 10: 0.0, 20: 0.0, 40: 0.0000000006, 60: 0.0000073567, 79: 0.0611909442}
    for pos, value in printed.items():
        assert math.isclose(g[pos].item(), value, rel_tol=1e-6, abs_tol=0.5e-10), (pos, g[pos].item())
    assert f"{g[0].item():.3e}" == "1.714e-19"
    assert f"{g[40].item():.3e}" == "5.538e-10"
    assert f"{g[-1].item():.3e}" == "6.119e-02"
    assert f"{g[:5].mean().item():.3e}" == "7.288e-19"
    assert f"{g[-5:].mean().item():.3e}" == "2.784e-02"


def test_appendix_rnn_length_sweep():
    sweep = rnn_length_sweep(lengths=(10, 20, 40, 80))
    printed = {
        10: ("3.068e-04", "9.274e-02", "3.023e+02"),
        20: ("6.449e-08", "5.034e-02", "7.806e+05"),
        40: ("2.675e-11", "9.605e-02", "3.591e+09"),
        80: ("1.714e-19", "6.119e-02", "3.570e+17"),
    }
    for n, (first, last, ratio) in printed.items():
        f, l_ = sweep[n][0].item(), sweep[n][-1].item()
        assert (f"{f:.3e}", f"{l_:.3e}", f"{l_ / max(f, 1e-30):.3e}") == (first, last, ratio)


# ---------------------------------------------------------------- 附录：Attention


@pytest.fixture(scope="module")
def attn():
    return attention_input_gradients(seq_len=80, embed_dim=8, num_heads=2, seed=42)


def test_appendix_attention_loss_gradients_and_weights(attn):
    assert f"{attn.loss:.6f}" == "0.004143"
    printed = {
        0: (0.0004031108, 0.0124236997), 1: (0.0002321249, 0.0076827370),
        5: (0.0002215536, 0.0075380132), 10: (0.0002874905, 0.0104033612),
        20: (0.0002641351, 0.0089868102), 40: (0.0005811487, 0.0123464987),
        60: (0.0003281604, 0.0121112242), 79: (0.0049361167, 0.0140305944),
    }
    for pos, (grad, weight) in printed.items():
        assert math.isclose(attn.grad_norms[pos].item(), grad, rel_tol=1e-6, abs_tol=0.5e-10), pos
        assert math.isclose(attn.last_token_weights[pos].item(), weight, rel_tol=1e-6, abs_tol=0.5e-10), pos
    g = attn.grad_norms
    assert f"{g[0].item():.3e}" == "4.031e-04"
    assert f"{g[40].item():.3e}" == "5.811e-04"
    assert f"{g[-1].item():.3e}" == "4.936e-03"
    assert f"{attn.last_token_weights.sum().item():.3f}" == "1.000"


def test_appendix_first_half_shares(rnn, attn):
    assert f"{first_half_share(rnn.grad_norms):.3%}" == "0.000%"
    assert f"{first_half_share(attn.grad_norms):.3%}" == "42.973%"
