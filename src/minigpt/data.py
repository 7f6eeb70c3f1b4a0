"""玩具词表与第 1 节的输入矩阵 X（见第 1 节 注意力在做什么）。

这里的一切都是确定的：固定种子、固定的创建顺序，
所以书页每次构建打印出的 X、Q、K、V 都和正文中的数字一致。
"""

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn as nn

# 玩具词表：10 个词，顺序决定 id（见第 1 节 注意力在做什么）
VOCAB: dict[str, int] = {
    "the": 0, "a": 1, "cat": 2, "dog": 3, "sat": 4,
    "ran": 5, "on": 6, "mat": 7, "[PAD]": 8, "[UNK]": 9,
}
ID2WORD: dict[int, str] = {i: w for w, i in VOCAB.items()}
UNK_ID: int = VOCAB["[UNK]"]


# 第 1 节 注意力在做什么展示 encode 和 make_toy_example 的源码。
def encode(words: str | Sequence[str]) -> list[int]:
    """把词序列变成 token id 列表；词表外的词记作 [UNK]。

    words 可以是一个字符串（按空白切分），也可以是词的列表。
    """
    if isinstance(words, str):
        words = words.split()
    return [VOCAB.get(w, UNK_ID) for w in words]


def decode(ids: Sequence[int] | torch.Tensor) -> list[str]:
    """把 token id 列表（或一维张量）还原成词（见第 1 节 注意力在做什么）。"""
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    out = []
    for i in ids:
        if i not in ID2WORD:
            raise ValueError(f"token id 应在 0..{len(VOCAB) - 1} 之间，收到 {i}")
        out.append(ID2WORD[i])
    return out


@dataclass(frozen=True, eq=False, kw_only=True)
class ToyExample:
    """第 1、2 节手算 Attention 用到的全部对象（见第 1 节 注意力在做什么）。

    embedding、W_Q、W_K、W_V 是模块（可以看它们的 .weight）；
    X、Q、K、V 是在 torch.no_grad() 下算出的普通张量，不带 grad_fn。
    """

    words: tuple[str, ...]
    ids: list[int]
    embedding: nn.Embedding
    X: torch.Tensor  # [seq, d_model]
    W_Q: nn.Linear
    W_K: nn.Linear
    W_V: nn.Linear
    Q: torch.Tensor  # [seq, d_k]
    K: torch.Tensor  # [seq, d_k]
    V: torch.Tensor  # [seq, d_k]


def make_toy_example(words: str | Sequence[str] = ("the", "cat", "sat"),
                     d_model: int = 4, d_k: int = 4, seed: int = 42) -> ToyExample:
    """按正文的顺序造出 X、Q、K、V；第 2、3 节沿用同一组对象。

    顺序是：设种子 → nn.Embedding → 三个 nn.Linear（W_Q、W_K、W_V）。
    顺序一变，随机数就被别的参数取走，数字就和正文对不上了。
    """
    words = tuple(words.split() if isinstance(words, str) else words)
    ids = encode(words)
    torch.manual_seed(seed)
    embedding = nn.Embedding(len(VOCAB), d_model)
    W_Q = nn.Linear(d_model, d_k, bias=False)
    W_K = nn.Linear(d_model, d_k, bias=False)
    W_V = nn.Linear(d_model, d_k, bias=False)
    with torch.no_grad():
        X = embedding(torch.tensor(ids))  # [seq, d_model]
        Q, K, V = W_Q(X), W_K(X), W_V(X)  # 各 [seq, d_k]
    return ToyExample(words=words, ids=ids, embedding=embedding, X=X,
                      W_Q=W_Q, W_K=W_K, W_V=W_V, Q=Q, K=K, V=V)
