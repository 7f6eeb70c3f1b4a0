"""原文第 1–2 节与附录里打印出的每一个数（都在 tests/support/golden.py 里），按它打印的精度复现。

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

from support import golden as G


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
    assert len(VOCAB) == G.S1_VOCAB_SIZE
    assert encode(["the", "cat", "sat"]) == toy.ids == G.S1_IDS_THE_CAT_SAT
    assert list(toy.X.shape) == [3, 4]
    assert toy.Q.shape == toy.K.shape == toy.V.shape == torch.Size([3, 4])


def test_section1_X_matrix(toy):
    assert fmt(toy.X, ".4f") == G.S1_X_4F


def test_section1_X_rows_full_precision(toy):
    for row, printed in zip(toy.X.tolist(), G.S1_X_ROWS_FULL, strict=True):
        assert_float32_close(row, printed)


# ---------------------------------------------------------------- 第 2 节


def test_section2_scores(steps):
    assert fmt(steps[0], ".4f") == G.S2_SCORES_4F


def test_section2_scaling(toy, steps):
    scores, scaled = steps[0], steps[1]
    assert toy.Q.shape[-1] == G.S2_D_K
    assert torch.equal(scaled, scores / math.sqrt(G.S2_D_K))  # 缩放就是除以 √d_k，没有别的
    assert_float32_close(scores[0].tolist(), G.S2_SCORES_ROW0_FULL)
    assert_float32_close(scaled[0].tolist(), G.S2_SCALED_ROW0_FULL)


def test_section2_weights(steps):
    weights = steps[2]
    assert fmt(weights, ".4f") == G.S2_WEIGHTS_4F
    assert [round(s, 6) for s in weights.sum(dim=-1).tolist()] == [1.0, 1.0, 1.0]


def test_section2_output_token0(toy, steps):
    output = steps[3]
    assert list(output.shape) == [3, 4]
    assert_float32_close(output[0].tolist(), G.S2_OUTPUT_ROW0_FULL)


def test_section4_recap_of_single_head_weights(steps):
    """第 4 节「什么是头」重提的两位小数权重矩阵。"""
    assert fmt(steps[2], ".2f") == G.S4_RECAP_WEIGHTS_2F


def test_section3_illustrative_rows_are_computed():
    """第 3 节的示意分数：the、cat 两行与原文一致；sat 一行原文写 [0.22, 0.27, 0.51]，算出来是 [0.27, 0.29, 0.44]。"""
    scores = torch.tensor(G.S3_ILLUSTRATIVE_SCORES)
    weights = softmax_weights(apply_mask(scores, causal_mask(3)))
    assert fmt(weights, ".2f") == G.S3_ILLUSTRATIVE_WEIGHTS_2F
    assert fmt(weights, ".2f")[2] != G.S3_SOURCE_WRONG_ROW


# ---------------------------------------------------------------- 附录：RNN


@pytest.fixture(scope="module")
def rnn():
    return rnn_input_gradients(seq_len=80, input_dim=4, hidden_dim=8, seed=42)


def test_appendix_rnn_setup(rnn):
    assert repr(rnn.model) == G.AP_RNN_REPR
    assert tuple(rnn.x.shape) == G.AP_RNN_SHAPES["x"]
    assert tuple(rnn.outputs.shape) == G.AP_RNN_SHAPES["outputs"]
    assert tuple(rnn.h_last.shape) == G.AP_RNN_SHAPES["h_last"]


def test_appendix_rnn_loss_and_gradients(rnn):
    g = rnn.grad_norms
    assert f"{rnn.loss:.6f}" == G.AP_RNN_LOSS_6F
    for pos, value in G.AP_RNN_GRAD_10F.items():
        assert math.isclose(g[pos].item(), value, rel_tol=1e-6, abs_tol=0.5e-10), (pos, g[pos].item())
    assert f"{g[0].item():.3e}" == G.AP_RNN_GRAD_3E["位置 0"]
    assert f"{g[40].item():.3e}" == G.AP_RNN_GRAD_3E["位置 40"]
    assert f"{g[-1].item():.3e}" == G.AP_RNN_GRAD_3E["位置 79"]
    assert f"{g[:5].mean().item():.3e}" == G.AP_RNN_GRAD_3E["前 5 个位置的平均"]
    assert f"{g[-5:].mean().item():.3e}" == G.AP_RNN_GRAD_3E["后 5 个位置的平均"]


def test_appendix_rnn_length_sweep():
    """原文每个长度各抽一次随机输入；书里只抽一次（按最长的 80），短序列取它的开头，
    各长度之间才只差在序列在哪里结束（附录「换几种长度」）。

    torch.randn 按 16 个数一组生成正态数，元素个数不是 16 的倍数时最后一组另抽：长度 20、40、80
    （80、160、320 个数）的输入本来就是最长那条的开头，所以与原文逐字相同；长度 10 只有 40 个数，
    原文那条输入的最后 16 个数和长序列的开头不同，书里的数因此有意与原文不同。
    """
    sweep = rnn_length_sweep(lengths=tuple(G.AP_LENGTH_SWEEP_3E))
    for n, (first, last, ratio) in G.AP_LENGTH_SWEEP_3E.items():
        f, l_ = sweep[n][0].item(), sweep[n][-1].item()
        printed = (f"{f:.3e}", f"{l_:.3e}", f"{l_ / max(f, 1e-30):.3e}")
        if n * 4 % 16 == 0:
            assert printed == (first, last, ratio), n
        else:
            assert printed != (first, last, ratio), n
            assert f"{rnn_input_gradients(n).grad_norms[0].item():.3e}" == first  # 原文的数：另抽的输入


# ---------------------------------------------------------------- 附录：Attention


@pytest.fixture(scope="module")
def attn():
    return attention_input_gradients(seq_len=80, embed_dim=8, num_heads=2, seed=42)


def test_appendix_attention_loss_gradients_and_weights(attn):
    assert f"{attn.loss:.6f}" == G.AP_ATTN_LOSS_6F
    for pos, (grad, weight) in G.AP_ATTN_GRAD_AND_WEIGHT_10F.items():
        assert math.isclose(attn.grad_norms[pos].item(), grad, rel_tol=1e-6, abs_tol=0.5e-10), pos
        assert math.isclose(attn.last_token_weights[pos].item(), weight, rel_tol=1e-6, abs_tol=0.5e-10), pos
    g = attn.grad_norms
    assert f"{g[0].item():.3e}" == G.AP_ATTN_GRAD_3E["位置 0"]
    assert f"{g[40].item():.3e}" == G.AP_ATTN_GRAD_3E["位置 40"]
    assert f"{g[-1].item():.3e}" == G.AP_ATTN_GRAD_3E["位置 79"]
    assert f"{attn.last_token_weights.sum().item():.3f}" == G.AP_ATTN_WEIGHT_SUM_3F


def test_appendix_first_half_shares(rnn, attn):
    assert f"{first_half_share(rnn.grad_norms):.3%}" == G.AP_FIRST_HALF_SHARE["RNN"]
    assert f"{first_half_share(attn.grad_norms):.3%}" == G.AP_FIRST_HALF_SHARE["Attention"]
