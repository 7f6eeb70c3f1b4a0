"""量一个训练好的头：它看哪里、模型猜得多好（见第 7 节 训练出来的头）。

头的“角色”用读者能复核的数来定义（`previous_token_score`、`induction_score`），
不靠看图起名；这里的函数只读权重和输出，不改模型。改动模型再看后果的实验在
`minigpt.interventions`。
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .attention import causal_mask
from .tasks import GRAMMAR_SENTENCES, RepeatBatch, sentence_ids
from .tinygpt import TinyGPT


# 第 7 节 训练出来的头「两个角色，两个分数」
def previous_token_score(weights: torch.Tensor) -> torch.Tensor:
    """前一个 token 分数：每个头里，位置 i 分给位置 i-1 的权重的平均（i 从 1 起）。

    weights: [batch, heads, seq, seq] → [heads]。1 表示这个头只看前一个 token。
    """
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, -1))


# 第 7 节 训练出来的头「两个角色，两个分数」
def induction_score(weights: torch.Tensor, data: RepeatBatch) -> torch.Tensor:
    """归纳分数：在第二遍 A 里，位置 t 分给“第一遍 A 里同一位置（t - L）的下一个位置”
    （t - L + 1，L 是 A 的长度）的权重，对所有这样的 t 和整批序列求平均。

    weights: [batch, heads, seq, seq] → [heads]。
    1 表示这个头总是看向第一遍里接在“我”后面的那个位置。
    """
    batch, _, seq, _ = weights.shape
    pos = torch.arange(seq).expand(batch, seq)
    in_copy = pos >= data.starts[:, None]                        # [batch, seq]
    target = (pos - data.lengths[:, None] + 1).clamp(min=0)      # [batch, seq]
    # 每行 t 取第 target[t] 列：[batch, heads, seq]
    picked = weights.gather(-1, target[:, None, :, None].expand(
        batch, weights.shape[1], seq, 1)).squeeze(-1)
    mask = in_copy[:, None, :].to(weights.dtype)
    return (picked * mask).sum(dim=(0, 2)) / mask.sum(dim=(0, 2))


def head_scores(model: TinyGPT, data: RepeatBatch) -> list[dict[str, list[float]]]:
    """每一层每个头的两个分数（见第 7 节 训练出来的头），按层排列：
    [{"previous": [...], "induction": [...]}, ...]。

    和训练时一样，模型读每条序列的前 seq - 1 个 token。
    """
    return [{"previous": previous_token_score(w).tolist(),
             "induction": induction_score(w, data).tolist()}
            for w in model.attention_weights(data.ids[:, :-1])]


def repeat_losses(model: TinyGPT, data: RepeatBatch) -> tuple[float, float]:
    """训练后的损失，分两处算：(第二遍 A 里能抄的位置, 其余位置)
    （见第 7 节 训练出来的头）。

    “能抄的位置”是要猜的 token 落在第二遍 A 里、且不是第二遍的第一个 token。
    """
    with torch.no_grad():
        logits = model(data.ids[:, :-1])
        loss = F.cross_entropy(logits.transpose(1, 2), data.ids[:, 1:],
                               reduction="none")                 # [batch, seq-1]
    target_pos = torch.arange(1, data.ids.shape[1]).expand_as(loss)
    copy = target_pos > data.starts[:, None]
    return loss[copy].mean().item(), loss[~copy].mean().item()


# 第 7 节 训练出来的头「第二遍里，一个位置一个位置地看」
def second_pass_losses(model: TinyGPT, data: RepeatBatch) -> list[float]:
    """第二遍里第 k 个 token（k 从 0 数）的平均损失，k = 0..最短的 A 长度 - 1。
    k = 0 时上一次出现处后面的 token 还没法抄（第二遍才刚开始）。"""
    with torch.no_grad():
        logits = model(data.ids[:, :-1])
        loss = F.cross_entropy(logits.transpose(1, 2), data.ids[:, 1:],
                               reduction="none")                 # [batch, seq-1]
    rows = torch.arange(data.ids.shape[0])
    # 要猜的 token 在位置 start + k，是第 start + k - 1 行的答案
    return [loss[rows, data.starts - 1 + k].mean().item()
            for k in range(int(data.lengths.min()))]


def previous_token_by_row(weights: torch.Tensor) -> torch.Tensor:
    """每个头、每一行 i（从 1 起）分给 i-1 的平均权重：[batch, heads, seq, seq] →
    [heads, seq-1]（见第 7 节「第二遍里，一个位置一个位置地看」）。"""
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=0)


def offset_weight(weights: torch.Tensor, offset: int) -> float:
    """权重表里位置 i 分给位置 i + offset 的平均权重（offset = 1：下一个位置；
    0：自己；-1：前一个位置）。weights: [..., seq, seq]
    （见第 7 节 训练出来的头「偷看，看得见」）。

    三种 offset 都只对行 1..seq-2 求平均：这些行前一个、自己、下一个都有，
    第 0 行（只能看自己，遮蔽时权重必为 1）和最后一行不算。
    """
    seq = weights.shape[-1]
    if not -1 <= offset <= 1 or seq < 3:
        raise ValueError(f"offset 应是 -1、0、1 之一，seq 至少为 3；"
                         f"收到 offset={offset}、seq={seq}")
    rows = torch.arange(1, seq - 1)
    return weights[..., rows, rows + offset].mean().item()


def induction_targets(ids: torch.Tensor) -> torch.Tensor:
    """[batch, t, j] 布尔：j ≤ t 且位置 j 前面的 token 与位置 t 的相同，
    即“我的 token 早先出现过，它后面的那个位置”（见第 7 节）。ids: [batch, seq]。"""
    batch, seq = ids.shape
    # j 前面的 token（位置 0 前面没有，记作 -1）
    prev_tok = torch.cat([torch.full((batch, 1), -1), ids[:, :-1]], dim=1)
    causal = torch.ones(seq, seq, dtype=torch.bool).tril()                 # j ≤ t
    return (prev_tok[:, None, :] == ids[:, :, None]) & causal


# 第 7 节 训练出来的头「两个角色，两个分数」「想一想」
def earlier_occurrence_score(weights: torch.Tensor, ids: torch.Tensor,
                             rows: torch.Tensor) -> tuple[torch.Tensor, int]:
    """位置 t 分给所有“前一个 token 与我相同”的位置 j（1 ≤ j ≤ t）的权重之和，
    即所有“我的 token 早先出现过，它后面那个位置”的权重之和。

    只数 rows 选中、且至少有一个这样的 j 的行。与 `induction_score` 不同，它不假定
    上一次出现在 t - L：A 内部有重复、或序列不重复时碰巧重复，都算进来。
    weights: [batch, heads, seq, seq]；ids: [batch, seq]（模型读的那些 token）；
    rows: [batch, seq] 布尔。返回 (每个头的平均 [heads], 数到的行数)。
    """
    match = induction_targets(ids)                               # [batch, t, j]
    use = match.any(-1) & rows                                   # [batch, t]
    # [batch, heads, t]
    mass = (weights * match[:, None].to(weights.dtype)).sum(-1)
    n = int(use.sum())
    if n == 0:
        raise ValueError("rows 选中的行里，没有一行的 token 早先出现过")
    return (mass * use[:, None]).sum(dim=(0, 2)) / n, n


def copy_rows(data: RepeatBatch) -> torch.Tensor:
    """[batch, seq - 1] 布尔：模型读的位置里，落在第二遍 A 里的那些（见第 7 节）。"""
    pos = torch.arange(data.ids.shape[1] - 1).expand(data.ids.shape[0], -1)
    return pos >= data.starts[:, None]


# 第 7 节 训练出来的头「只有一层呢」
def first_pass_weight(weights: torch.Tensor, data: RepeatBatch) -> torch.Tensor:
    """第二遍 A 里的位置 t 分给整个第一遍 A（位置 start - L .. start - 1）的权重之和，
    对所有这样的 t 求平均。weights: [batch, heads, seq, seq] → [heads]。"""
    seq = weights.shape[-1]
    pos = torch.arange(seq)
    first = ((pos >= (data.starts - data.lengths)[:, None])
             & (pos < data.starts[:, None]))           # [batch, seq]：第一遍 A
    # [batch, heads, seq]
    mass = (weights * first[:, None, None, :].to(weights.dtype)).sum(-1)
    rows = copy_rows(data)[:, :seq]
    return (mass * rows[:, None]).sum(dim=(0, 2)) / rows.sum()


# 第 7 节 训练出来的头「门槛 0.5 旁边的基线」
def uniform_weights(batch: int, seq: int) -> torch.Tensor:
    """把权重平均摊给自己和左边所有位置的“头”：
    [batch, 1, seq, seq]，第 i 行每格 1/(i+1)。"""
    w = causal_mask(seq).double()
    return (w / w.sum(-1, keepdim=True)).expand(batch, 1, seq, seq)


def uniform_first_pass_score(data: RepeatBatch) -> float:
    """一个头若把第二遍里每一行的权重平均摊在整个第一遍 A 上，它的归纳分数是多少：
    每行 1/L，对第二遍的所有行求平均（见第 7 节「只有一层呢」）。"""
    rows = copy_rows(data)                                          # [batch, seq - 1]
    per_row = (1 / data.lengths.double())[:, None].expand_as(rows)
    return per_row[rows].mean().item()


# 第 7 节 训练出来的头「玩具语法」
def determiner_head(model: TinyGPT, sentences: tuple[str, ...] = GRAMMAR_SENTENCES,
                    least: float = 0.9) -> int | None:
    """在每句话的 on 这一行（位置 3）都把至少 least 给第一个冠词的头（从 0 数）；
    没有、或不止一个时是 None。"""
    # 每句 [heads, 5, 5]
    weights = [model.attention_weights(sentence_ids(s)[:, :-1])[0][0]
               for s in sentences]
    found = [h for h in range(weights[0].shape[0])
             if all(w[h, 3, 0] >= least for w in weights)]
    return found[0] if len(found) == 1 else None


# 第 7 节 训练出来的头「玩具语法」
def grammar_probs(model: TinyGPT, sentences: list[str]) -> list[tuple[float, float]]:
    """每句 “D₁ N₁ V on D₂ N₂” 的 (P(D₂ = D₁), P(N₂ = N₁))：模型读前 5 个词，
    在 on 的位置（3）猜 D₂，在 D₂ 的位置（4）猜 N₂。"""
    out = []
    for s in sentences:
        ids = sentence_ids(s)
        with torch.no_grad():
            p = model(ids[:, :-1]).softmax(-1)[0]                  # [5, vocab]
        out.append((p[3, ids[0, 0]].item(), p[4, ids[0, 1]].item()))
    return out
