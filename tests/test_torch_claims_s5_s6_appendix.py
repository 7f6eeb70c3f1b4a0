"""第 5、6 节和附录正文里关于 PyTorch 的说法，对着 torch 本身核对。"""

import torch
import torch.nn as nn


def test_linear_weight_is_stored_as_out_by_in():
    """第 5 节：nn.Linear.weight 按 [输出, 输入] 存放，即 W_1（d_model × d_ff）的转置。"""
    fc1 = nn.Linear(4, 16)
    assert fc1.weight.shape == (16, 4)
    x = torch.randn(2, 4)
    torch.testing.assert_close(fc1(x), x @ fc1.weight.T + fc1.bias)


def test_layernorm_defaults_gamma_one_beta_zero_eps_1e5_and_biased_variance():
    """第 6 节：γ、β 初始化为全 1、全 0，eps 默认 1e-5，方差除以 d 而不是 d − 1。"""
    ln = nn.LayerNorm(4)
    assert torch.equal(ln.weight, torch.ones(4)) and torch.equal(ln.bias, torch.zeros(4))
    assert ln.eps == 1e-5
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    by_d = (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + 1e-5)
    with torch.no_grad():
        torch.testing.assert_close(ln(x), by_d)
        assert not torch.allclose(ln(x), (x - x.mean()) / torch.sqrt(x.var(unbiased=True) + 1e-5))


def test_rnn_h_last_has_one_state_per_layer_and_equals_last_output_for_one_layer():
    """附录：h_last 最前面一维是层数（多层时每层一个）；单层时 h_last[0] 就是 outputs 的最后一行。"""
    x = torch.randn(1, 6, 4)
    for layers in (1, 3):
        outputs, h_last = nn.RNN(4, 8, num_layers=layers, batch_first=True)(x)
        assert h_last.shape == (layers, 1, 8)
        torch.testing.assert_close(h_last[-1], outputs[:, -1])


def test_rnn_batch_first_orders_input_and_outputs_but_not_h_last():
    """附录：batch_first=True 只把输入和 outputs 排成 [batch, seq, …]；h_last 仍是 [层数, batch, hidden]。"""
    batch, seq, layers = 2, 6, 3
    x = torch.randn(batch, seq, 4)
    outputs, h_last = nn.RNN(4, 8, num_layers=layers, batch_first=True)(x)
    assert outputs.shape == (batch, seq, 8)
    assert h_last.shape == (layers, batch, 8)
    _, h_seq_first = nn.RNN(4, 8, num_layers=layers)(x.transpose(0, 1))
    assert h_seq_first.shape == h_last.shape  # batch_first 不改变 h_last 的维度顺序


def test_mha_bool_mask_true_means_blocked():
    """附录：nn.MultiheadAttention 的布尔 attn_mask 里 True 表示“不许看”，那里的权重是 0。"""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(1, 5, 8)
    blocked = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    _, w = mha(x, x, x, attn_mask=blocked, need_weights=True)
    assert torch.all(w[0][blocked] == 0) and torch.all(w[0][~blocked] > 0)
