"""第 7 节训练的小 GPT（见第 7 节 训练出来的头「一个小 GPT」）。

模型全用本书自己的零件搭成：token 嵌入 + 位置嵌入 → 几个
`TransformerBlock`（带因果遮蔽）→ 输出层，按“猜下一个 token”
训练（`minigpt.training`）。看它的头学到了什么，见 `minigpt.probes` 与
`minigpt.interventions`。
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .attention import causal_mask
from .layers import TransformerBlock
from .tasks import REPEAT_SEQ_LEN, REPEAT_VOCAB


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
        """ids: [batch, seq] → 第一层的输入 [batch, seq, d_model]：token 嵌入
        + 位置嵌入。"""
        _check_ids(ids, self.seq_len)
        return self.tok(ids) + self.pos(torch.arange(ids.shape[1]))

    def forward(self, ids: torch.Tensor,
                masks: dict[int, torch.Tensor] | None = None) -> torch.Tensor:
        """ids: [batch, seq] → logits [batch, seq, vocab]。masks：
        {层的下标（从 0 数，同 self.blocks）: 遮蔽}，给了的层用它代替
        因果遮蔽（第 7 节的改道实验）。"""
        x = self.embed(ids)                              # [batch, seq, d_model]
        causal = self.mask[:ids.shape[1], :ids.shape[1]]
        for layer, block in enumerate(self.blocks):
            x = block(x, (masks or {}).get(layer, causal))  # [batch, seq, d_model]
        return self.out(x)

    def block_inputs(self, ids: torch.Tensor) -> list[torch.Tensor]:
        """每一层读到的输入（残差流）：第 l 项是 blocks[l] 的输入，
        形状 [batch, seq, d_model]。"""
        causal = self.mask[:ids.shape[1], :ids.shape[1]]
        xs = [self.embed(ids)]
        for block in self.blocks[:-1]:
            xs.append(block(xs[-1], causal))
        return xs

    def attention_weights(self, ids: torch.Tensor) -> list[torch.Tensor]:
        """每一层每个头的注意力权重：列表的第 l 项是 blocks[l] 的
        [batch, heads, seq, seq]。每层的权重由那一层自己的
        `TransformerBlock.attention_weights` 给出，这里只把各层的输入递给它。"""
        causal = self.mask[:ids.shape[1], :ids.shape[1]]
        with torch.no_grad():
            return [block.attention_weights(x, causal)
                    for block, x in zip(self.blocks, self.block_inputs(ids))]


def _check_ids(ids: torch.Tensor, seq_len: int) -> None:
    if ids.dim() != 2 or not 1 <= ids.shape[1] <= seq_len:
        raise ValueError(
            f"ids 应是二维 [batch, seq]，seq 在 1..{seq_len} 之间；"
            f"收到形状 {tuple(ids.shape)}")


def init_model(n_layers: int = 2, num_heads: int = 2, seed: int = 0,
               vocab_size: int = REPEAT_VOCAB,
               seq_len: int = REPEAT_SEQ_LEN) -> TinyGPT:
    """按种子初始化一个读 seq_len - 1 个 token 的 TinyGPT，还一步没训练
    （`train_repeat` 从它开始；第 7 节也拿它当对照组）。
    用自己的随机数状态：调用前后，全局的随机数不变。"""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = TinyGPT(vocab_size, seq_len - 1, num_heads=num_heads,
                        n_layers=n_layers)
    return model.eval()
