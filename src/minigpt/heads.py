"""训练一个小 GPT，看它的注意力头学到了什么（见第 7 节 训练出来的头）。

模型全用本书自己的零件搭成：token 嵌入 + 位置嵌入 → 几个 `TransformerBlock`
（带因果遮蔽）→ 输出层，按“猜下一个 token”训练。两个任务：

- **重复序列**：一段随机前缀，接一段随机序列 A（长度 4–10 随机），
  再把 A 原样重复一遍。
  第二遍里的 token 能从第一遍抄出来，但得先找到“上一次出现在哪里”。
- **玩具语法**：用第 1 节词表里的词造句 “D₁ N₁ V on D₂ N₂”，
  三条规则见 `grammar_batch`。

头的“角色”用读者能复核的数来定义（`previous_token_score`、`induction_score`），
不靠看图起名。种子固定、单线程训练：同一平台上每次构建得到逐位相同的参数。
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import causal_mask, scaled_dot_product_attention
from .data import VOCAB
from .layers import TransformerBlock

# 重复序列任务的默认设置（第 7 节正文用的就是这些）
REPEAT_VOCAB = 16      # 16 个抽象 token，编号 0..15
REPEAT_SEQ_LEN = 24    # 每条序列 24 个 token
REPEAT_MIN, REPEAT_MAX = 4, 10   # A 的长度在 4..10 之间随机


# 第 7 节 训练出来的头
class TinyGPT(nn.Module):
    """GPT 式的小模型：token 嵌入 + 位置嵌入 → n_layers 个 TransformerBlock → 输出层。

    每个 Block 都带因果遮蔽（第 3 节），位置 i 只读得到 0..i。
    """

    def __init__(self, vocab_size: int, seq_len: int, d_model: int = 32,
                 num_heads: int = 2, n_layers: int = 2, d_ff: int = 64):
        super().__init__()
        self.seq_len = seq_len
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(seq_len, d_model)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, num_heads, d_ff) for _ in range(n_layers))
        self.out = nn.Linear(d_model, vocab_size)
        self.register_buffer("mask", causal_mask(seq_len), persistent=False)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """ids: [batch, seq] → 第 1 层的输入 [batch, seq, d_model]：token 嵌入 + 位置嵌入。"""
        _check_ids(ids, self.seq_len)
        return self.tok(ids) + self.pos(torch.arange(ids.shape[1]))

    def forward(self, ids: torch.Tensor,
                masks: dict[int, torch.Tensor] | None = None) -> torch.Tensor:
        """ids: [batch, seq] → logits [batch, seq, vocab]。
        masks：{第几层（从 1 数）: 遮蔽}，给了的层用它代替因果遮蔽（第 7 节的改道实验）。"""
        x = self.embed(ids)                              # [batch, seq, d_model]
        causal = self.mask[:ids.shape[1], :ids.shape[1]]
        for layer, block in enumerate(self.blocks, start=1):
            x = block(x, (masks or {}).get(layer, causal))  # [batch, seq, d_model]
        return self.out(x)

    def block_inputs(self, ids: torch.Tensor) -> list[torch.Tensor]:
        """每一层读到的输入（残差流）：第 l 项是第 l+1 层的 [batch, seq, d_model]。"""
        causal = self.mask[:ids.shape[1], :ids.shape[1]]
        xs = [self.embed(ids)]
        for block in self.blocks[:-1]:
            xs.append(block(xs[-1], causal))
        return xs

    def attention(self, ids: torch.Tensor) -> list[torch.Tensor]:
        """每一层每个头的注意力权重：
        列表的第 l 项是第 l+1 层的 [batch, heads, seq, seq]。"""
        causal = self.mask[:ids.shape[1], :ids.shape[1]]
        with torch.no_grad():
            return [block.attention_weights(x, causal)
                    for block, x in zip(self.blocks, self.block_inputs(ids))]


def _check_ids(ids: torch.Tensor, seq_len: int) -> None:
    if ids.dim() != 2 or not 1 <= ids.shape[1] <= seq_len:
        raise ValueError(
            f"ids 应是二维 [batch, seq]，seq 在 1..{seq_len} 之间；"
            f"收到形状 {tuple(ids.shape)}")


def _check_lengths(min_len: int, max_len: int, seq_len: int) -> None:
    if not 1 <= min_len <= max_len or 2 * max_len > seq_len:
        raise ValueError(
            f"A 的长度范围 {min_len}..{max_len} 应满足 1 ≤ min_len ≤ max_len，"
            f"且两遍 A 放得进 seq_len = {seq_len}（2 × max_len ≤ seq_len）")


# ---------------------------------------------------------------- 数据


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


# ---------------------------------------------------------------- 角色的分数


# 第 7 节 训练出来的头「两个角色，两个分数」
def previous_token_score(weights: torch.Tensor) -> torch.Tensor:
    """前一个 token 分数：每个头里，位置 i 分给位置 i-1 的权重的平均（i 从 1 起）。

    weights: [batch, heads, seq, seq] → [heads]。1 表示这个头只看前一个 token。
    """
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, -1))


# 第 7 节 训练出来的头「两个角色，两个分数」
def induction_score(weights: torch.Tensor, data: RepeatBatch) -> torch.Tensor:
    """归纳分数：在第二遍 A 里，位置 t 分给“当前 token 上一次出现处的下一个位置”
    （t - L + 1，L 是 A 的长度）的权重，对所有这样的 t 和整批序列求平均。

    weights: [batch, heads, seq, seq] → [heads]。
    1 表示这个头总是看向“上次接在我后面的那个”。
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
            for w in model.attention(data.ids[:, :-1])]


# ---------------------------------------------------------------- 训练


@dataclass(frozen=True, kw_only=True, eq=False)
class TrainedModel:
    """一次训练的结果（见第 7 节 训练出来的头）：模型、每一步的训练损失、
    瞎猜的损失 ln(vocab_size)，
    以及训练用掉的秒数（只供参考，不进正文）。"""

    model: TinyGPT
    losses: list[float]
    chance_loss: float
    seed: int
    seconds: float
    snapshots: dict[int, TinyGPT] = field(default_factory=dict)  # 第 k 步后的模型副本


def _train(model: TinyGPT, sample: Callable[[torch.Generator], torch.Tensor],
           steps: int, lr: float, seed: int,
           keep: tuple[int, ...] = ()) -> TrainedModel:
    """单线程、固定种子地训练 model；
    sample(generator) 给出一批 [batch, seq] 的 token。
    keep 里的每个步数 k：第 k 步之后留一份模型副本
    （复制不碰随机数，训练结果不变）。"""
    bad = [k for k in keep if not 1 <= k <= steps]
    if bad:
        raise ValueError(f"keep 里的步数应在 1..{steps} 之间，收到 {bad}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 小模型：单线程更快；线程数一变，结果的最后几位也会变
    t0 = time.perf_counter()
    try:
        gen = torch.Generator().manual_seed(seed + 1)   # 数据的随机数与初始化分开
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        vocab = model.out.out_features
        losses, snapshots = [], {}
        for step in range(1, steps + 1):
            ids = sample(gen)
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if step in keep:
                snapshots[step] = copy.deepcopy(model).eval()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return TrainedModel(model=model, losses=losses, chance_loss=math.log(vocab),
                        seed=seed, seconds=time.perf_counter() - t0,
                        snapshots=snapshots)


def untrained(n_layers: int = 2, num_heads: int = 2, seed: int = 0,
              vocab_size: int = REPEAT_VOCAB,
              seq_len: int = REPEAT_SEQ_LEN) -> TinyGPT:
    """与 `train_repeat` 同样形状、同样种子、但一步也没训练的模型
    （对照组，见第 7 节 训练出来的头）。"""
    torch.manual_seed(seed)
    model = TinyGPT(vocab_size, seq_len - 1, num_heads=num_heads, n_layers=n_layers)
    return model.eval()


def train_repeat(n_layers: int = 2, num_heads: int = 2, steps: int = 800,
                 seed: int = 0, batch: int = 64, lr: float = 5e-3,
                 keep: tuple[int, ...] = (), repeat: bool = True) -> TrainedModel:
    """在重复序列上训练 TinyGPT（d_model 32、d_ff 64），返回 TrainedModel
    （见第 7 节 训练出来的头）。

    模型读 23 个 token（序列的位置 0..22），位置 i 猜位置 i+1 上的 token。
    keep=(300, 400) 之类：顺便留下第 300、400 步之后的模型（TrainedModel.snapshots）。
    repeat=False：对照组，训练序列的“第二遍”换成新的随机 token，从不重复。
    """
    model = untrained(n_layers, num_heads, seed)
    return _train(model, lambda g: repeat_batch(batch, g, repeat=repeat).ids,
                  steps, lr, seed, keep)


def train_grammar(n_layers: int = 1, num_heads: int = 2, steps: int = 400,
                  seed: int = 0, batch: int = 64, lr: float = 5e-3) -> TrainedModel:
    """在玩具语法的句子上训练 TinyGPT，返回 TrainedModel
    （见第 7 节 训练出来的头）。"""
    torch.manual_seed(seed)
    model = TinyGPT(len(VOCAB), 5, num_heads=num_heads, n_layers=n_layers)
    return _train(model, lambda g: grammar_batch(batch, g), steps, lr, seed)


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


def _check_layer_head(model: TinyGPT, layer: int, head: int) -> None:
    if not 1 <= layer <= len(model.blocks):
        raise ValueError(f"layer 应在 1..{len(model.blocks)} 之间，收到 {layer}")
    heads = model.blocks[layer - 1].attn.num_heads
    if not 1 <= head <= heads:
        raise ValueError(f"head 应在 1..{heads} 之间，收到 {head}")


# 第 7 节 训练出来的头「第二层靠第一层」
def without_head(model: TinyGPT, layer: int, head: int,
                 mean_over: RepeatBatch | None = None) -> TinyGPT:
    """复制一份模型，把第 layer 层（从 1 数）第 head 个头（从 1 数）剪掉。原模型不变。

    mean_over=None（置零）：W_O 里读这个头输出的那几列清零，这个头什么都不写进残差流。
    mean_over=一批数据（换成平均）：这个头在这批数据上的平均输出，经同样那几列写进 W_O 的偏置；
    它每个位置都写同一个向量，不再随输入变化，残差流的大小却和训练时一样。
    """
    _check_layer_head(model, layer, head)
    mha = model.blocks[layer - 1].attn
    pruned = copy.deepcopy(model)
    cols = slice((head - 1) * mha.d_k, head * mha.d_k)
    with torch.no_grad():
        W_O = pruned.blocks[layer - 1].attn.W_O
        if mean_over is not None:
            W_O.bias += W_O.weight[:, cols] @ head_output(model, layer, mean_over.ids[:, :-1])[
                :, head - 1].mean(dim=(0, 1))
        W_O.weight[:, cols] = 0
    return pruned


def head_output(model: TinyGPT, layer: int, ids: torch.Tensor) -> torch.Tensor:
    """第 layer 层（从 1 数）每个头乘 W_O 之前的输出 [batch, heads, seq, d_k]
    （见第 7 节「第二层靠第一层」）。"""
    block = model.blocks[layer - 1]
    x = model.block_inputs(ids)[layer - 1]                    # [batch, seq, d_model]
    with torch.no_grad():
        v = block.attn.split_heads(block.attn.W_V(x))         # [batch, heads, seq, d_k]
        weights = block.attention_weights(x, model.mask[:ids.shape[1], :ids.shape[1]])
        return weights @ v                                    # [batch, heads, seq, d_k]


# 第 7 节 训练出来的头「抄，直接量」
def redirected_copy(model: TinyGPT, data: RepeatBatch,
                    generator: torch.Generator) -> tuple[float, float]:
    """把最后一层的注意力强行改到一个随机的早先位置 j 上，看模型会不会把 token[j] 说出来。

    每条序列只看最后一行 t（模型读的最后一个位置），j 在 1..t-1 里均匀抽取；改道用的是遮蔽：
    第 t 行只许看 j，其余各行照常因果遮蔽。返回 token[j] 的平均概率 (改道前, 改道后)。
    """
    ids = data.ids[:, :-1]                                     # [batch, seq]
    batch, seq = ids.shape
    t = seq - 1
    j = torch.randint(1, t, (batch,), generator=generator)     # [batch]
    mask = causal_mask(seq).expand(batch, 1, seq, seq).clone()  # [batch, 1, seq, seq]
    mask[:, 0, t] = False
    mask[torch.arange(batch), 0, t, j] = True
    target = ids[torch.arange(batch), j]                       # token[j]
    with torch.no_grad():
        before = model(ids)[:, t].softmax(-1)
        after = model(ids, masks={len(model.blocks): mask})[:, t].softmax(-1)
    rows = torch.arange(batch)
    return before[rows, target].mean().item(), after[rows, target].mean().item()


# 第 7 节 训练出来的头「门槛 0.5 旁边的基线」
def uniform_weights(batch: int, seq: int) -> torch.Tensor:
    """把权重平均摊给自己和左边所有位置的“头”：[batch, 1, seq, seq]，第 i 行每格 1/(i+1)。"""
    w = causal_mask(seq).double()
    return (w / w.sum(-1, keepdim=True)).expand(batch, 1, seq, seq)


# 第 7 节 训练出来的头「相变」
def phase_curves(run: TrainedModel, data: RepeatBatch) -> dict[str, list[float]]:
    """每个留下的副本（按步数）：第二遍能抄的位置的损失、其余位置的损失、
    第 1 层最高的前一个 token 分数、第 2 层最低的归纳分数。"""
    curves = {"step": [], "copy": [], "other": [], "previous": [], "induction": []}
    for step in sorted(run.snapshots):
        model = run.snapshots[step]
        scores = head_scores(model, data)
        copy_loss, other_loss = repeat_losses(model, data)
        for key, value in (("step", step), ("copy", copy_loss), ("other", other_loss),
                           ("previous", max(scores[0]["previous"])),
                           ("induction", min(scores[-1]["induction"]))):
            curves[key].append(value)
    return curves


def first_step_above(steps: list[int], values: list[float], threshold: float) -> int | None:
    """values 第一次超过 threshold 时的步数；一直没超过就是 None（见第 7 节「相变」）。"""
    return next((s for s, v in zip(steps, values) if v > threshold), None)


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
    """每个头、每一行 i（从 1 起）分给 i-1 的平均权重：[batch, heads, seq, seq] → [heads, seq-1]
    （见第 7 节「第二遍里，一个位置一个位置地看」）。"""
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


# ---------------------------------------------------------------- 更细的测量


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


def uniform_first_pass_score(data: RepeatBatch) -> float:
    """一个头若把第二遍里每一行的权重平均摊在整个第一遍 A 上，它的归纳分数是多少：
    每行 1/L，对第二遍的所有行求平均（见第 7 节「只有一层呢」）。"""
    rows = copy_rows(data)                                          # [batch, seq - 1]
    per_row = (1 / data.lengths.double())[:, None].expand_as(rows)
    return per_row[rows].mean().item()


def block_means(losses: list[float], size: int = 100) -> list[float]:
    """把每一步的损失按 size 步一段求平均：第 k 项是第 k·size+1 .. (k+1)·size 步
    （见第 7 节「训练」）。"""
    if size < 1 or len(losses) < size:
        raise ValueError(f"size 应在 1..{len(losses)} 之间，收到 {size}")
    starts = range(0, len(losses) - size + 1, size)
    return [sum(losses[i:i + size]) / size for i in starts]


def _check_two_layers(*models: TinyGPT) -> None:
    if any(len(m.blocks) < 2 for m in models):
        raise ValueError("mixed_induction 需要至少两层的模型")


# 第 7 节 训练出来的头「第二层靠第一层」
def mixed_induction(model: TinyGPT, donor: TinyGPT, data: RepeatBatch,
                    keys_from_donor: bool) -> list[float]:
    """第 2 层每个头的归纳分数，但 Key（keys_from_donor=True）或 Query（False）
    改用 donor 的第 1 层输出算；另一半和 Value 仍用 model 自己的。

    donor 通常是剪掉了第 1 层某个头的同一个模型：
    看丢的信息是在 Key 里还是在 Query 里。
    """
    _check_two_layers(model, donor)
    ids = data.ids[:, :-1]
    seq = ids.shape[1]
    mask = model.mask[:seq, :seq]
    with torch.no_grad():
        # 第 2 层读到的输入 [batch, seq, d_model]：自己的，和 donor 的
        own, other = model.block_inputs(ids)[1], donor.block_inputs(ids)[1]
        xq, xk = (own, other) if keys_from_donor else (other, own)
        attn = model.blocks[1].attn
        q = attn.split_heads(attn.W_Q(xq))               # [batch, heads, seq, d_k]
        k = attn.split_heads(attn.W_K(xk))
        v = attn.split_heads(attn.W_V(own))
        # [batch, heads, seq, seq]
        _, weights = scaled_dot_product_attention(q, k, v, mask)
    return induction_score(weights, data).tolist()


GRAMMAR_SENTENCES = ("the cat sat on the mat", "the dog ran on the cat",
                     "a cat sat on a dog", "a dog ran on a mat")   # 第 7 节看的四句


# 第 7 节 训练出来的头「玩具语法」
def determiner_head(model: TinyGPT, sentences=GRAMMAR_SENTENCES,
                    least: float = 0.9) -> int | None:
    """在每句话的 on 这一行（位置 3）都把至少 least 给第一个冠词的头（从 1 数）；
    没有、或不止一个时是 None。"""
    weights = [model.attention(sentence_ids(s)[:, :-1])[0][0] for s in sentences]  # 每句 [heads, 5, 5]
    found = [h for h in range(weights[0].shape[0]) if all(w[h, 3, 0] >= least for w in weights)]
    return found[0] + 1 if len(found) == 1 else None


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
