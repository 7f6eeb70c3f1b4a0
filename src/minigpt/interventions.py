"""改动一个训练好的模型，看什么坏了
（见第 7 节 训练出来的头「第二层靠第一层」「抄，直接量」）：
拿掉一个头（置零或换成平均）、把第二层的 Key 或 Query 换成另一个模型的、
把注意力强行改道。原模型都不变。
"""

from __future__ import annotations

import copy

import torch

from .attention import causal_mask, scaled_dot_product_attention
from .probes import induction_score
from .tasks import RepeatBatch
from .tinygpt import TinyGPT


def _check_layer_head(model: TinyGPT, layer: int, head: int) -> None:
    if not 0 <= layer < len(model.blocks):
        raise ValueError(f"layer 应在 0..{len(model.blocks) - 1} 之间，收到 {layer}")
    heads = model.blocks[layer].attn.num_heads
    if not 0 <= head < heads:
        raise ValueError(f"head 应在 0..{heads - 1} 之间，收到 {head}")


# 第 7 节 训练出来的头「第二层靠第一层」
def without_head(model: TinyGPT, layer: int, head: int,
                 mean_over: RepeatBatch | None = None) -> TinyGPT:
    """复制一份模型，把 `model.blocks[layer]` 的头 head 拿掉（层和头都从 0 数，
    和张量的下标一样）。原模型不变。

    mean_over=None（置零）：W_O 里读这个头输出的那几列清零，
    这个头什么都不写进残差流。mean_over=一批数据（换成平均）：
    这个头在这批数据上的平均输出，经同样那几列写进 W_O 的偏置；
    它每个位置都写同一个向量，不再随输入变化，残差流的大小却和训练时一样。
    """
    _check_layer_head(model, layer, head)
    mha = model.blocks[layer].attn
    pruned = copy.deepcopy(model)
    cols = slice(head * mha.d_k, (head + 1) * mha.d_k)
    with torch.no_grad():
        W_O = pruned.blocks[layer].attn.W_O
        if mean_over is not None:
            W_O.bias += W_O.weight[:, cols] @ head_output(
                model, layer, mean_over.ids[:, :-1])[:, head].mean(dim=(0, 1))
        W_O.weight[:, cols] = 0
    return pruned


def head_output(model: TinyGPT, layer: int, ids: torch.Tensor) -> torch.Tensor:
    """`model.blocks[layer]`（从 0 数）每个头乘 W_O 之前的输出
    [batch, heads, seq, d_k]（见第 7 节「第二层靠第一层」）。"""
    block = model.blocks[layer]
    x = model.block_inputs(ids)[layer]                        # [batch, seq, d_model]
    with torch.no_grad():
        v = block.attn.split_heads(block.attn.W_V(x))  # [batch, heads, seq, d_k]
        weights = block.attention_weights(x, model.mask[:ids.shape[1], :ids.shape[1]])
        return weights @ v                             # [batch, heads, seq, d_k]


def _check_two_layers(*models: TinyGPT) -> None:
    if any(len(m.blocks) < 2 for m in models):
        raise ValueError("mixed_induction 需要至少两层的模型")


# 第 7 节 训练出来的头「第二层靠第一层」
def mixed_induction(model: TinyGPT, donor: TinyGPT, data: RepeatBatch,
                    keys_from_donor: bool) -> list[float]:
    """第二层每个头的归纳分数，但 Key（keys_from_donor=True）或 Query（False）
    改用 donor 的第一层输出算；另一半和 Value 仍用 model 自己的。

    donor 通常是剪掉了第一层某个头的同一个模型：
    看丢的信息是在 Key 里还是在 Query 里。
    """
    _check_two_layers(model, donor)
    ids = data.ids[:, :-1]
    seq = ids.shape[1]
    mask = model.mask[:seq, :seq]
    with torch.no_grad():
        # 第二层读到的输入 [batch, seq, d_model]：自己的，和 donor 的
        own, other = model.block_inputs(ids)[1], donor.block_inputs(ids)[1]
        xq, xk = (own, other) if keys_from_donor else (other, own)
        attn = model.blocks[1].attn
        q = attn.split_heads(attn.W_Q(xq))               # [batch, heads, seq, d_k]
        k = attn.split_heads(attn.W_K(xk))
        v = attn.split_heads(attn.W_V(own))
        # [batch, heads, seq, seq]
        _, weights = scaled_dot_product_attention(q, k, v, mask)
    return induction_score(weights, data).tolist()


# 第 7 节 训练出来的头「抄，直接量」
def redirected_copy(model: TinyGPT, data: RepeatBatch,
                    generator: torch.Generator) -> tuple[float, float]:
    """把最后一层的注意力强行改到一个随机的早先位置 j 上，
    看模型会不会把 token[j] 说出来。

    每条序列只看最后一行 t（模型读的最后一个位置），j 在 1..t-1 里均匀抽取；
    改道用的是遮蔽：第 t 行只许看 j，其余各行照常因果遮蔽。返回 token[j] 的平均概率
    (改道前, 改道后)。
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
        after = model(ids, masks={len(model.blocks) - 1: mask})[:, t].softmax(-1)
    rows = torch.arange(batch)
    return before[rows, target].mean().item(), after[rows, target].mean().item()
