"""训练第 7 节的小 GPT，并记下训练途中的变化（见第 7 节 训练出来的头「训练」
「相变」）。

种子固定、单线程训练：同一平台上每次得到逐位相同的参数。
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .data import VOCAB
from .probes import head_scores, repeat_losses
from .tasks import RepeatBatch, grammar_batch, repeat_batch
from .tinygpt import TinyGPT, init_model


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
        # foreach：一次更新全部参数，省掉逐个参数的循环，结果与逐个更新逐位相同
        opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
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


def train_repeat(n_layers: int = 2, num_heads: int = 2, steps: int = 800,
                 seed: int = 0, batch: int = 64, lr: float = 5e-3,
                 keep: tuple[int, ...] = (), repeat: bool = True) -> TrainedModel:
    """在重复序列上训练 TinyGPT（d_model 32、d_ff 64），返回 TrainedModel
    （见第 7 节 训练出来的头）。

    模型读 23 个 token（序列的位置 0..22），位置 i 猜位置 i+1 上的 token。
    keep=(300, 400) 之类：顺便留下第 300、400 步之后的模型（TrainedModel.snapshots）。
    repeat=False：对照组，训练序列的“第二遍”换成新的随机 token，从不重复。
    """
    model = init_model(n_layers, num_heads, seed)
    return _train(model, lambda g: repeat_batch(batch, g, repeat=repeat).ids,
                  steps, lr, seed, keep)


def train_grammar(n_layers: int = 1, num_heads: int = 2, steps: int = 400,
                  seed: int = 0, batch: int = 64, lr: float = 5e-3) -> TrainedModel:
    """在玩具语法的句子上训练 TinyGPT，返回 TrainedModel
    （见第 7 节 训练出来的头）。"""
    model = grammar_model(n_layers, num_heads, seed)
    return _train(model, lambda g: grammar_batch(batch, g), steps, lr, seed)


def grammar_model(n_layers: int = 1, num_heads: int = 2, seed: int = 0) -> TinyGPT:
    """玩具语法用的 TinyGPT（第 1 节的词表，一句 6 个词），还一步没训练。"""
    return init_model(n_layers, num_heads, seed, vocab_size=len(VOCAB), seq_len=6)


def block_means(losses: list[float], size: int = 100) -> list[float]:
    """把每一步的损失按 size 步一段求平均：第 k 项是第 k·size+1 .. (k+1)·size 步
    （见第 7 节「训练」）。"""
    if size < 1 or len(losses) < size:
        raise ValueError(f"size 应在 1..{len(losses)} 之间，收到 {size}")
    starts = range(0, len(losses) - size + 1, size)
    return [sum(losses[i:i + size]) / size for i in starts]


# 第 7 节 训练出来的头「相变」
def phase_curves(run: TrainedModel, data: RepeatBatch) -> dict[str, list[float]]:
    """每个留下的副本（按步数）：能抄位置的损失、其余位置的损失、
    第一层最高的前一个 token 分数、第二层最低的归纳分数。"""
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


def first_step_above(steps: list[int], values: list[float],
                     threshold: float) -> int | None:
    """values 第一次超过 threshold 时的步数；一直没超过就是
    None（见第 7 节「相变」）。"""
    return next((s for s, v in zip(steps, values) if v > threshold), None)
