"""题目给的数据（见「作业」页）：检查器和批改程序都从这里重新生成，不用学生手里的那一份。"""

from __future__ import annotations

import functools

import torch


# 题目给的数据的名字（exercise_inputs() 的键）：判题函数里叫这些名字的参数是题目数据，其余是答案
GIVEN_NAMES = frozenset({"q", "k", "Q", "K", "d_k", "seq_len", "scores", "hidden_size", "d_ff",
                         "x", "num_heads", "mha", "h", "gamma", "beta", "eps", "block"})


@functools.lru_cache(maxsize=1)
def _inputs() -> dict:
    from ..attention import attention_scores, scale_scores
    from ..data import make_toy_example

    # make_toy_example 要设种子 42：在 fork_rng 里做，学生笔记本里的随机数状态不受检查器影响
    with torch.random.fork_rng(devices=[]):
        toy = make_toy_example()
    Q, K = toy.Q.detach(), toy.K.detach()
    d_k = Q.shape[-1]
    return {"q": Q[1], "k": K[2], "Q": Q, "K": K, "d_k": d_k, "seq_len": Q.shape[0],
            "scores": scale_scores(attention_scores(Q, K), d_k),
            "hidden_size": 512, "d_ff": 2048, **block_exercise_data()}


def block_exercise_data() -> dict:
    """作业 4、5 的数据（见「作业」页）：和作业页上给数据的单元做的是同一件事。

    x：[1, 3, 8]（batch 1、3 个 token、d_model 8），2 个头；mha：种子 4 的多头注意力；
    h、gamma、beta：LayerNorm 的输入和参数（h 的数很小，ε 才看得出作用）；
    block：种子 6 的 Post-LN Block（d_ff = 16），两个 LayerNorm 的 γ、β 换成了随机的数。
    随机数在 fork_rng 里取，不动调用者的随机数状态。
    """
    from ..layers import MultiHeadAttention, TransformerBlock

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(4)
        x = torch.randn(1, 3, 8)                   # [batch, seq, d_model]
        mha = MultiHeadAttention(8, num_heads=2)
        torch.manual_seed(5)
        h = 0.01 * torch.randn(1, 3, 8)            # [batch, seq, d_model]
        gamma = 1 + 0.5 * torch.randn(8)
        beta = 0.5 * torch.randn(8)
        torch.manual_seed(6)
        block = TransformerBlock(8, num_heads=2, d_ff=16)
        with torch.no_grad():
            for norm in (block.ln_attn, block.ln_ffn):
                norm.weight.copy_(1 + 0.3 * torch.randn(8))
                norm.bias.copy_(0.3 * torch.randn(8))
    return {"x": x, "num_heads": 2, "mha": mha.eval(), "h": h, "gamma": gamma, "beta": beta,
            "eps": 1e-5, "block": block.eval()}


def exercise_inputs() -> dict:
    """题目给的数据（见「作业」页），与学生版笔记本里的数据单元算出的相同。

    种子 42，句子 "the cat sat"。每次调用都给一份新的拷贝（改它不影响下一次）。

    笔记本里的检查器和批改（minigpt.grade）都用它，而不用学生笔记本里的 q、K、scores……：
    改了题目数据也骗不过检查，笔记本里的 ✔ 和批改的分数也就是同一个判断。
    """
    import copy

    return {name: value.clone() if isinstance(value, torch.Tensor) else copy.deepcopy(value)
            for name, value in _inputs().items()}
