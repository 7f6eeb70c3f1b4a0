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


def test_a_score_can_require_two_conditions_while_the_output_stays_linear_in_the_values():
    """第 5 节：bank 分给 river 的分数是 Query 与 Key 的点积，可以学成只在“发问的像 bank”和“被问的像 river”
    同时成立时才大（点积对两边各是线性的，乘起来就是“且”）；可权重一旦定下，输出对 Value 是线性的。"""
    from minigpt.attention import scaled_dot_product_attention, weighted_sum

    bank, river, other = torch.eye(4)[:3]        # 三种 token 的输入向量，各占一个方向
    e = torch.eye(4)[3]
    W_Q = 4.0 * torch.outer(bank, e)             # Query = 4·(x·bank)·e
    W_K = 4.0 * torch.outer(river, e)            # Key   = 4·(x·river)·e
    X = torch.stack([bank, river, other, river + other])
    Q, K = X @ W_Q, X @ W_K
    scores = Q @ K.T
    assert scores[0, 1] == scores[0, 3] == 16      # 发问的是 bank、被问的带着 river：两个条件都成立
    assert scores[0, 2] == 0 and scores[0, 0] == 0  # 被问的不像 river
    assert (scores[1:] == 0).all()                 # 发问的不是 bank：对谁都不加分
    _, w = scaled_dot_product_attention(Q, K, X)
    assert w[0, 1] > 0.45 and w[0, 3] > 0.45 and w[0, 2] < 0.01
    # 权重定下之后，输出对 Value 线性：a·V1 + b·V2 的输出等于两份输出按 a、b 相加
    V1, V2 = torch.randn(4, 3), torch.randn(4, 3)
    torch.testing.assert_close(weighted_sum(w, 2.0 * V1 - 3.0 * V2),
                               2.0 * weighted_sum(w, V1) - 3.0 * weighted_sum(w, V2))


def test_rnn_starts_from_a_zero_hidden_state():
    """附录：不给初始状态时，nn.RNN 读位置 0 之前的隐藏状态是全 0 向量。"""
    rnn = nn.RNN(4, 8, batch_first=True)
    x = torch.randn(1, 5, 4)
    with torch.no_grad():
        torch.testing.assert_close(rnn(x)[0], rnn(x, torch.zeros(1, 1, 8))[0])
