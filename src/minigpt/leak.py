"""不遮蔽会怎样：训练“猜下一个 token”时，注意力学会偷看下一个位置
（见第 3 节 因果遮蔽「训练会把偷看放大」）。

每条样本是 seq_len + 1 个均匀随机的 token：前 seq_len 个送进模型，
位置 i 要猜的是样本里的第 i+1 个。下一个 token 和前文无关，
诚实的模型最好也只能做到损失 ln(vocab_size)。不遮蔽时，位置 0 .. seq_len - 2
抄得到答案（它就在输入的位置 i+1 上）；样本的最后一个 token 没有送进模型，
位置 seq_len - 1 无处可抄，所以不遮蔽的训练损失
最低也只能降到约 ln(vocab_size) / seq_len。
"""

import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import causal_mask, scaled_dot_product_attention


# 第 3 节 因果遮蔽「训练会把偷看放大」
class TinyNextTokenModel(nn.Module):
    """最小的“猜下一个 token”模型：token 嵌入 + 位置嵌入 → 单头注意力 → 输出层。"""

    def __init__(self, vocab_size: int, seq_len: int, d_model: int):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(seq_len, d_model)  # 有位置信息才认得出“下一个”
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.out = nn.Linear(d_model, vocab_size)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None,
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids: [batch, seq] →
        (logits [batch, seq, vocab], 权重 [batch, seq, seq])。
        """
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[-1]))
        q, k, v = self.W_Q(x), self.W_K(x), self.W_V(x)
        h, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.out(h), weights


@dataclass(frozen=True, kw_only=True)
class LeakRun:
    """一次训练的记录（见第 3 节 因果遮蔽「训练会把偷看放大」）。"""

    masked: bool               # 训练时是否用因果遮蔽
    seq_len: int               # 送进模型的 token 数（每条样本抽 seq_len + 1 个）
    losses: list[float]        # 每一步的训练损失
    next_weight: list[float]   # 每一步：位置 i 分给位置 i+1 的平均注意力权重
    chance_loss: float         # ln(vocab_size)：只能瞎猜时的损失
    eval_loss_masked: float    # 训练后在新数据上加遮蔽（像生成时看不到后面）的损失
    # 训练后在同一批新数据上、按训练时的条件（遮或不遮）测的每个位置的损失
    eval_loss_by_position: list[float]
    # 训练好的模型本身（第 7 节看它的注意力权重）；手工构造的记录可以不给
    model: TinyNextTokenModel | None = field(default=None, repr=False, compare=False)


def train_next_token(masked: bool, steps: int = 120, vocab_size: int = 10,
                     seq_len: int = 8, d_model: int = 16, batch: int = 64,
                     lr: float = 0.01, seed: int = 0) -> LeakRun:
    """在随机序列上训练 TinyNextTokenModel 猜下一个 token，返回 LeakRun
    （见第 3 节 因果遮蔽）。

    每条样本抽 seq_len + 1 个 token，前 seq_len 个是输入，位置 i 的目标是
    样本里的第 i+1 个；masked=False 时，前 seq_len - 1 个位置的答案就在输入里。
    种子 seed 同时决定初始化和数据。
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 小模型：单线程反而快，结果也不随核数变化
    try:
        torch.manual_seed(seed)
        model = TinyNextTokenModel(vocab_size, seq_len, d_model)
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        mask = causal_mask(seq_len) if masked else None
        losses, next_weight = [], []
        for _ in range(steps):
            seq = torch.randint(vocab_size, (batch, seq_len + 1))
            logits, w = model(seq[:, :-1], mask)
            loss = F.cross_entropy(logits.reshape(-1, vocab_size),
                                   seq[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            # 每行 i 分给 i+1 的权重，就是权重矩阵紧贴对角线上方的那一条
            nxt = w.detach().diagonal(offset=1, dim1=-2, dim2=-1)
            next_weight.append(nxt.mean().item())
        seq = torch.randint(vocab_size, (1000, seq_len + 1))
        with torch.no_grad():
            logits, _ = model(seq[:, :-1], causal_mask(seq_len))
            eval_loss = F.cross_entropy(logits.reshape(-1, vocab_size),
                                        seq[:, 1:].reshape(-1)).item()
            logits, _ = model(seq[:, :-1], mask)  # 训练时的条件
            by_pos = F.cross_entropy(logits.transpose(1, 2), seq[:, 1:],
                                     reduction="none").mean(dim=0)  # [seq_len]
    finally:
        torch.set_num_threads(threads)
    return LeakRun(masked=masked, seq_len=seq_len, losses=losses,
                   next_weight=next_weight, chance_loss=math.log(vocab_size),
                   eval_loss_masked=eval_loss,
                   eval_loss_by_position=by_pos.tolist(), model=model)


# 第 3 节 因果遮蔽「训练会把偷看放大」：结论要在几个种子上都成立
LEAK_SEEDS = tuple(range(6))


def train_leak_seeds(seeds: tuple[int, ...] = LEAK_SEEDS,
                     **kwargs) -> dict[int, tuple[LeakRun, LeakRun]]:
    """每个种子各训练两次（不遮蔽、因果遮蔽），返回 {种子: (不遮蔽, 遮蔽)}。

    其余参数原样交给 train_next_token。
    """
    return {seed: (train_next_token(masked=False, seed=seed, **kwargs),
                   train_next_token(masked=True, seed=seed, **kwargs))
            for seed in seeds}
