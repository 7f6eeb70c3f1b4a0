"""第 7 节的两个训练任务（见第 7 节 训练出来的头「任务：把见过的再说一遍」
「玩具语法」）。

- **重复序列**：一段随机前缀，接一段随机序列 A（长度 4–10 随机），再把
  A 原样重复一遍。第二遍里的 token 能从第一遍抄出来，但得先找到“上一次出现在哪里”。
- **玩具语法**：用第 1 节词表里的词造句 “D₁ N₁ V on D₂ N₂”，三条规则见
  `grammar_batch`。
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .data import VOCAB

# 重复序列任务的默认设置（第 7 节正文用的就是这些）
REPEAT_VOCAB = 16      # 16 个抽象 token，编号 0..15


REPEAT_SEQ_LEN = 24    # 每条序列 24 个 token


REPEAT_MIN, REPEAT_MAX = 4, 10   # A 的长度在 4..10 之间随机


def _check_lengths(min_len: int, max_len: int, seq_len: int) -> None:
    if not 1 <= min_len <= max_len or 2 * max_len > seq_len:
        raise ValueError(
            f"A 的长度范围 {min_len}..{max_len} 应满足 1 ≤ min_len ≤ max_len，"
            f"且两遍 A 放得进 seq_len = {seq_len}（2 × max_len ≤ seq_len）")


@dataclass(frozen=True)
class RepeatBatch:
    """一批重复序列：第 b 条里，A 从 starts[b] - lengths[b] 开始，
    第二遍从 starts[b] 开始，一直到序列末尾。"""

    ids: torch.Tensor       # [batch, seq]
    starts: torch.Tensor    # [batch]：第二遍 A 的第一个位置
    lengths: torch.Tensor   # [batch]：A 的长度


# 第 7 节 训练出来的头「任务：把见过的再说一遍」
def repeat_batch(batch: int, generator: torch.Generator,
                 vocab_size: int = REPEAT_VOCAB, seq_len: int = REPEAT_SEQ_LEN,
                 min_len: int = REPEAT_MIN, max_len: int = REPEAT_MAX,
                 repeat: bool = True) -> RepeatBatch:
    """随机前缀 + A + A：每个 token 在 0..vocab_size-1 里均匀抽取，A 的长度在
    min_len..max_len 里均匀抽取，第二遍 A 正好占到序列末尾。

    repeat=False 时长度和位置照抽，第二遍却换成新的随机 token：
    用来看“不重复时哪个头失灵”。
    """
    _check_lengths(min_len, max_len, seq_len)
    ids = torch.randint(vocab_size, (batch, seq_len), generator=generator)
    lengths = torch.randint(min_len, max_len + 1, (batch,), generator=generator)
    starts = seq_len - lengths                        # 第二遍的起点
    if repeat:
        pos = torch.arange(seq_len).expand(batch, seq_len)
        second = pos >= starts[:, None]
        src = torch.where(second, pos - lengths[:, None], pos)  # 第二遍抄第一遍
        ids = ids.gather(1, src)
    return RepeatBatch(ids, starts, lengths)


GRAMMAR_WORDS = ("the", "a", "cat", "dog", "mat", "sat", "ran", "on")


VERB_OF = {"cat": "sat", "dog": "ran"}   # 规则 1：谓语由主语决定


# 第 7 节 训练出来的头「玩具语法」
def grammar_batch(batch: int, generator: torch.Generator) -> torch.Tensor:
    """玩具语法的一批句子 “D₁ N₁ V on D₂ N₂”，token id 用第 1 节的词表 VOCAB。

    D₁ 在 the、a 里、N₁ 在 cat、dog 里均匀抽取；三条规则：
    1. V 由主语决定：cat → sat，dog → ran；
    2. D₂ 与 D₁ 相同；
    3. N₂ 在 cat、dog、mat 里，但不等于 N₁（两个里均匀抽一个）。
    返回 [batch, 6]。
    """
    dets = torch.tensor([VOCAB["the"], VOCAB["a"]])
    subjects = torch.tensor([VOCAB["cat"], VOCAB["dog"]])
    verbs = torch.tensor([VOCAB[VERB_OF["cat"]], VOCAB[VERB_OF["dog"]]])
    d = torch.randint(2, (batch,), generator=generator)
    n = torch.randint(2, (batch,), generator=generator)
    # N₂：除 N₁ 外的两个名词之一
    others = torch.tensor([[VOCAB["dog"], VOCAB["mat"]],
                           [VOCAB["cat"], VOCAB["mat"]]])
    pick = torch.randint(2, (batch,), generator=generator)
    return torch.stack([dets[d], subjects[n], verbs[n],
                        torch.full((batch,), VOCAB["on"]), dets[d],
                        others[n, pick]], dim=1)


def sentence_ids(sentence: str) -> torch.Tensor:
    """一句话 → [1, seq] 的 token id
    （词必须在第 1 节的词表里；见第 7 节「玩具语法」）。"""
    words = sentence.split()
    unknown = [w for w in words if w not in VOCAB]
    if unknown:
        raise ValueError(
            f"这些词不在第 1 节的词表里：{unknown}；词表是 {list(VOCAB)}")
    return torch.tensor([[VOCAB[w] for w in words]])


# 第 7 节看的四句
GRAMMAR_SENTENCES = ("the cat sat on the mat", "the dog ran on the cat",
                     "a cat sat on a dog", "a dog ran on a mat")
