"""六张交互图各自的数：测试直接调用 minigpt，按页面的做法（同样的种子与参数）重新算一遍。

单元测试（tests/test_interactive.py）和浏览器测试（tests/test_interactive_browser.py）都用它；
它只算数，不含任何期望的数字。
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from minigpt import attention, experiments
from minigpt.data import make_toy_example
from minigpt.layers import MultiHeadAttention

SATURATION = {"n_keys": 8, "seed": 0, "n_trials": 1000}   # 第 2 节页面的参数
PATH_LENGTHS = (10, 20, 40, 80, 160)                      # 附录页面的参数


@dataclass(frozen=True)
class Toy:
    labels: list[str]
    d_k: int
    scores: torch.Tensor
    weights: torch.Tensor
    masked_weights: torch.Tensor


@lru_cache(maxsize=None)
def toy() -> Toy:
    """第 2、3 节：种子 42 的 “the cat sat”。"""
    ex = make_toy_example(("the", "cat", "sat"), d_model=4, d_k=4, seed=42)
    d_k = ex.Q.shape[-1]
    scores = attention.attention_scores(ex.Q, ex.K)
    scaled = attention.scale_scores(scores, d_k)
    masked = attention.apply_mask(scaled, attention.causal_mask(len(ex.words)))
    return Toy(list(ex.words), d_k, scores, attention.softmax_weights(scaled),
               attention.softmax_weights(masked))


@lru_cache(maxsize=None)
def saturation(d_k: int) -> experiments.SoftmaxSaturation:
    return experiments.softmax_saturation(d_k=d_k, **SATURATION)


@lru_cache(maxsize=None)
def heads() -> tuple[list[str], torch.Tensor]:
    """第 4 节：种子 42 先生成 x、再建 mha；输入是种子 42 的 8 维 “the cat sat”。"""
    torch.manual_seed(42)
    torch.randn(1, 5, 8)
    mha = MultiHeadAttention(d_model=8, num_heads=2)
    ex8 = make_toy_example(d_model=8, d_k=8)
    with torch.no_grad():
        _, w = mha(ex8.X.unsqueeze(0), return_weights=True)
    return list(ex8.words), w[0]


@lru_cache(maxsize=None)
def path_length() -> experiments.FirstPositionVsLength:
    return experiments.first_position_gradient_vs_length(lengths=PATH_LENGTHS, seed=42)


def trained_heads() -> tuple[list[str], list[torch.Tensor], int, int]:
    """第 7 节：种子 0 训练的两层模型在示例序列（数据种子 0）上的权重（见 tests/support/heads_cases.py）。"""
    from support import heads_cases

    return heads_cases.example_weights()


def trained_head_lines(layer: int, head: int, pos: int) -> list[str]:
    """第 7 节交互图在 (层, 头, 位置) 上的读数（层、头从 0 数）：直接由 minigpt 算出的权重写成。"""
    tokens, weights, start, length = trained_heads()
    w = weights[layer][0, head, pos]
    top = int(w.argmax())
    lines = [f"层 {layer} · 头 {head}，位置 {pos}（{tokens[pos]}）这一行："
             f"最大的权重 {w[top]:.2f} 在位置 {top}（{tokens[top]}）"]
    extra = [f"前一个位置 {pos - 1}：{w[pos - 1]:.2f}"] if pos else []
    if pos >= start:
        extra.append(f"上次出现处的下一个位置 {pos - length + 1}：{w[pos - length + 1]:.2f}")
    return lines + (["；".join(extra)] if extra else [])
