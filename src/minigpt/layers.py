"""多头注意力、前馈网络与 Transformer Block
（见第 4 节 多头注意力、第 5 节 FFN、第 6 节 Transformer Block）。

写法参照 nanoGPT 的 model.py：一个类只讲一件事，forward 尽量短。
注意力的数学只在 `minigpt.attention.scaled_dot_product_attention` 里写一遍。
"""

import numbers

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import scaled_dot_product_attention


def _check_sizes(**sizes) -> None:
    """宽度、头数这类尺寸都得是正整数；否则报 ValueError，
    说出是哪一个、收到了什么。"""
    for name, value in sizes.items():
        integer = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        if not integer or value < 1:
            kind = type(value).__name__
            raise ValueError(f"{name} 应是正整数，收到 {value!r}（{kind}）")


def _check_heads(d_model: int, num_heads: int) -> None:
    _check_sizes(d_model=d_model, num_heads=num_heads)
    if d_model % num_heads != 0:
        raise ValueError(
            "d_model 要平均分给 num_heads 个头，应是 num_heads 的整数倍："
            f"d_model = {d_model}，num_heads = {num_heads}"
            f"（{d_model} % {num_heads} = {d_model % num_heads}，期望为 0）"
        )


def _check_input(x: torch.Tensor, d_model: int) -> None:
    if x.dim() != 3:
        raise ValueError(
            "x 应是三维 [batch, seq_len, d_model]，"
            f"收到 {x.dim()} 维、形状 {tuple(x.shape)}；"
            f"单个句子请用 x.unsqueeze(0) 加上 batch 维"
        )
    if x.shape[-1] != d_model:
        raise ValueError(
            f"x 的最后一维应等于 d_model = {d_model}，"
            f"收到 {x.shape[-1]}（x 形状 {tuple(x.shape)}）"
        )


# 第 4 节 多头注意力
class MultiHeadAttention(nn.Module):
    """合并写法的多头注意力：Q、K、V 各经一个 d_model → d_model 的投影，
    再切成 num_heads 份，每份是一个头。

    GPT 的用法是给它因果遮蔽矩阵，每个位置只读自己和左边（见第 3 节 因果遮蔽）。
    """

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        _check_heads(d_model, num_heads)
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads  # d_k：一个头分到的宽度
        # 各头的 W_i^Q 并排成一个 d_model → d_model 的矩阵（K、V 同理）
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.W_O = nn.Linear(d_model, d_model)  # W_O：读各头接起来的结果

    def split_heads(self, t: torch.Tensor) -> torch.Tensor:
        """[batch, seq, d_model] → [batch, heads, seq, d_k]。
        数据不复制：view 改的是读法，transpose 改的是步长。
        """
        batch, seq, _ = t.shape
        return t.view(batch, seq, self.num_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, t: torch.Tensor) -> torch.Tensor:
        """[batch, heads, seq, d_k] → [batch, seq, d_model]：
        split_heads 的逆操作，各头的 d_k 维首尾相接。
        """
        batch, _, seq, _ = t.shape
        return t.transpose(1, 2).contiguous().view(batch, seq, self.d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                return_weights: bool = False,
                ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """x: [batch, seq, d_model] → [batch, seq, d_model]。

        mask: 1 / True = 可以看；形状 [seq, seq]，
        或能广播到 [batch, heads, seq, seq]（如 [1, 1, seq, seq]）。
        return_weights=True 时另外返回每个头的权重 [batch, heads, seq, seq]。
        """
        _check_input(x, self.d_model)
        q = self.split_heads(self.W_Q(x))  # [batch, heads, seq, d_k]
        k = self.split_heads(self.W_K(x))  # [batch, heads, seq, d_k]
        v = self.split_heads(self.W_V(x))  # [batch, heads, seq, d_k]
        # out: [batch, heads, seq, d_k]，weights: [batch, heads, seq, seq]
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        out = self.W_O(self.merge_heads(out))  # [batch, seq, d_model]
        return (out, weights) if return_weights else out


# 第 4 节 多头注意力
class AttentionHead(nn.Module):
    """单个注意力头：自己的一组 W_Q、W_K、W_V，各是 d_model → d_k。"""

    def __init__(self, d_model: int, d_k: int):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_k)
        self.W_K = nn.Linear(d_model, d_k)
        self.W_V = nn.Linear(d_model, d_k)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """x: [batch, seq, d_model] →
        (输出 [batch, seq, d_k], 权重 [batch, seq, seq])。
        """
        return scaled_dot_product_attention(
            self.W_Q(x), self.W_K(x), self.W_V(x), mask
        )


# 第 4 节 多头注意力
class NaiveMultiHeadAttention(nn.Module):
    """多头注意力的“逐头写法”：每个头是一个 AttentionHead，
    有自己的小投影；各头的输出接起来，再乘 W_O。

    参数与 `MultiHeadAttention` 一一对应，算出的也相同：
    大矩阵的第 i 段行就是头 i 的小矩阵，
    见 `from_fused`。mask 形状为 [seq, seq] 或 [batch, seq, seq]，所有头共用。
    """

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        _check_heads(d_model, num_heads)
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.heads = nn.ModuleList(
            AttentionHead(d_model, self.d_k) for _ in range(num_heads)
        )
        self.W_O = nn.Linear(d_model, d_model)

    @classmethod
    def from_fused(cls, mha: MultiHeadAttention) -> "NaiveMultiHeadAttention":
        """把合并写法的权重按头切开，复制成逐头写法；两者输出相同。

        nn.Linear 的 weight 形状是 [out, in]：
        头 i 拿 W_Q.weight 的第 i·d_k 到 (i+1)·d_k - 1 行和对应的偏置。
        """
        ref = mha.W_O.weight
        naive = cls(mha.d_model, mha.num_heads).to(dtype=ref.dtype, device=ref.device)
        with torch.no_grad():
            for i, head in enumerate(naive.heads):
                rows = slice(i * mha.d_k, (i + 1) * mha.d_k)
                for name in ("W_Q", "W_K", "W_V"):
                    fused, small = getattr(mha, name), getattr(head, name)
                    small.weight.copy_(fused.weight[rows])
                    small.bias.copy_(fused.bias[rows])
            naive.W_O.load_state_dict(mha.W_O.state_dict())
        return naive

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                return_weights: bool = False,
                ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """x: [batch, seq, d_model] → [batch, seq, d_model]；
        可选返回权重 [batch, heads, seq, seq]。
        """
        _check_input(x, self.d_model)
        # 每个：([batch, seq, d_k], [batch, seq, seq])
        results = [head(x, mask) for head in self.heads]
        out = torch.cat([o for o, _ in results], dim=-1)  # [batch, seq, d_model]
        out = self.W_O(out)                               # [batch, seq, d_model]
        if return_weights:
            # [batch, heads, seq, seq]
            return out, torch.stack([w for _, w in results], dim=1)
        return out


# 第 5 节 前馈网络
class FeedForward(nn.Module):
    """前馈网络：每个位置的向量单独进来，升到 d_ff 维、过 ReLU、再降回 d_model 维。"""

    def __init__(self, d_model: int, d_ff: int | None = None):
        super().__init__()
        if d_ff is None:
            d_ff = 4 * d_model  # 惯例：中间层是模型宽度的 4 倍
        _check_sizes(d_model=d_model, d_ff=d_ff)
        self.d_model, self.d_ff = d_model, d_ff
        self.up = nn.Linear(d_model, d_ff)    # W_1、b_1
        self.down = nn.Linear(d_ff, d_model)  # W_2、b_2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[..., d_model] → [..., d_model]，最后一维之外的各个位置互不相干。"""
        signal = F.relu(self.up(x))  # [..., d_ff]：探测器的信号，不是正数的换成 0
        return self.down(signal)     # [..., d_model]


# 第 4 节 多头注意力（两种写法的参数对照）
def n_params(*modules: nn.Module) -> int:
    """几个模块一共有多少个参数：每个参数张量的元素个数相加
    （第 5 节 FFN 也用它数 Block 各部分的参数）。"""
    return sum(p.numel() for m in modules for p in m.parameters())


def feedforward_num_params(d_model: int, d_ff: int | None = None) -> int:
    """FFN 的参数量 = 2·d_model·d_ff + d_ff + d_model（两个权重矩阵加两组偏置）
    （见第 5 节 FFN、作业 3）。
    """
    if d_ff is None:
        d_ff = 4 * d_model
    _check_sizes(d_model=d_model, d_ff=d_ff)
    return (d_ff * d_model + d_ff) + (d_model * d_ff + d_model)


# 第 6 节 Transformer Block
class TransformerBlock(nn.Module):
    """Post-LN 的一层：先多头注意力、后 FFN；
    每个子层的输出加回输入，再做 LayerNorm。
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int | None = None):
        super().__init__()
        # 两个子层各配一个 LayerNorm，按数据经过的先后排
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ln_attn = nn.LayerNorm(d_model)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln_ffn = nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        """x: [batch, seq, d_model] → [batch, seq, d_model]；
        mask 只传给注意力子层。
        """
        x = self.ln_attn(x + self.attn(x, mask))  # 子层 1：多头注意力
        x = self.ln_ffn(x + self.ffn(x))          # 子层 2：逐位置的 FFN
        return x

    # 第 7 节 训练出来的头：一层的每个头在看哪里
    def attention_weights(self, x: torch.Tensor,
                          mask: torch.Tensor | None = None) -> torch.Tensor:
        """输入 x 时，注意力子层每个头的权重 [batch, heads, seq, seq]。

        调用的是 forward 第一行里的同一个 self.attn，只是请它把权重也交出来；
        forward 本身不变，训练时不多算。
        """
        _, weights = self.attn(x, mask, return_weights=True)
        return weights
