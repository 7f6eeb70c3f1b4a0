"""书中的数值实验（见第 2 节「缩放」、第 6 节、附录 梯度能否传回远处）。

第 2 节：为什么除以 √d_k——点积方差随 d_k 增长、不缩放时 softmax 饱和。
第 6 节：一摞 Block 去掉 LayerNorm 后激活有多大；只沿残差路径反传，
比较 Post-LN 与 Pre-LN。
附录：从最后一个位置反向传播，看梯度能否传回开头。

两种模型都直接用 PyTorch 自带模块（nn.RNN、nn.MultiheadAttention），种子 42，
创建顺序与原文一致，所以原文打印的 loss、梯度范数和 0.000% / 42.973% 都能复现；
比较不同长度时，书里的短序列取长序列的开头，长度 10 的数因此与原文不同。
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn as nn

from .attention import (
    attention_scores, causal_mask, scale_scores, softmax_weights, to_nn_mha_mask,
)
from .data import make_toy_example
from .layers import FeedForward, MultiHeadAttention, TransformerBlock


@dataclass(frozen=True, eq=False, kw_only=True)
class RNNGradients:
    """一次 RNN 梯度实验的全部结果
    （见附录 梯度能否传回远处「量一量：RNN 的梯度能传多远」）。
    """

    model: nn.RNN
    x: torch.Tensor           # [1, seq_len, input_dim]，叶子张量，x.grad 已填好
    outputs: torch.Tensor     # [1, seq_len, hidden_dim]，已 detach
    h_last: torch.Tensor      # [1, 1, hidden_dim]，已 detach
    loss: float
    grad_norms: torch.Tensor  # [seq_len]，每个输入位置的梯度范数


def rnn_input_gradients(
    seq_len: int = 80,
    input_dim: int = 4,
    hidden_dim: int = 8,
    seed: int = 42,
    dtype: torch.dtype = torch.float32,
    inputs: torch.Tensor | None = None,
) -> RNNGradients:
    """nn.RNN 只用最后一步的输出做 loss，反传后看每个输入位置的梯度。

    loss = outputs[:, -1, :].pow(2).mean()。dtype 默认 float32（与正文一致）；
    传 torch.float64 时参数和输入按同样的种子生成再转换，只是算得更精确。
    inputs：给出 [1, seq_len, input_dim] 时用它代替随机输入（比较不同长度时，
    短序列取长序列的开头一段）；模型参数照样按种子生成。
    """
    torch.manual_seed(seed)
    model = nn.RNN(
        input_dim, hidden_dim, num_layers=1, nonlinearity="tanh", batch_first=True
    )
    x = torch.randn(1, seq_len, input_dim) if inputs is None else inputs.detach()
    model, x = model.to(dtype), x.to(dtype).requires_grad_()
    outputs, h_last = model(x)                 # [1, seq, hidden], [1, 1, hidden]
    loss = outputs[:, -1, :].pow(2).mean()
    loss.backward()
    grad_norms = x.grad.norm(dim=-1)[0].detach()  # [seq_len]
    return RNNGradients(
        model=model, x=x, outputs=outputs.detach(), h_last=h_last.detach(),
        loss=loss.item(), grad_norms=grad_norms,
    )


def rnn_length_sweep(lengths: Sequence[int] = (10, 20, 40, 80), input_dim: int = 4,
                     hidden_dim: int = 8, seed: int = 42) -> dict[int, torch.Tensor]:
    """对每个长度重设种子、重建 RNN，所以各长度下的模型参数相同。

    输入只抽一次：按最长的长度抽，较短的序列取它的开头一段，
    所以各个长度之间只差在后面接了多少个 token。
    返回 {长度: 每个位置的梯度范数 [长度]}。
    """
    longest = rnn_input_gradients(max(lengths), input_dim, hidden_dim, seed)
    return {
        n: rnn_input_gradients(n, input_dim, hidden_dim, seed,
                               inputs=longest.x[:, :n]).grad_norms
        for n in lengths
    }


@dataclass(frozen=True, eq=False, kw_only=True)
class AttentionGradients:
    """一次注意力梯度实验的全部结果
    （见附录 梯度能否传回远处「同一把尺子量注意力」）。
    """

    model: nn.MultiheadAttention
    x: torch.Tensor                   # [1, seq_len, embed_dim]，x.grad 已填好
    output: torch.Tensor              # [1, seq_len, embed_dim]，已 detach
    loss: float
    grad_norms: torch.Tensor          # [seq_len]
    weights: torch.Tensor             # [heads, seq_len, seq_len]，每个头的注意力权重
    last_token_weights: torch.Tensor  # [seq_len]，最后一个 query 的权重（各头平均）


def attention_input_gradients(
    seq_len: int = 80,
    embed_dim: int = 8,
    num_heads: int = 2,
    seed: int = 42,
    dtype: torch.dtype = torch.float32,
    inputs: torch.Tensor | None = None,
) -> AttentionGradients:
    """nn.MultiheadAttention（带因果遮蔽）只用最后一个位置做 loss，
    看每个输入位置的梯度。

    mask 由 `causal_mask` 经 `to_nn_mha_mask` 转换（True = 不许看，即上三角），
    与正文的 torch.triu 相同。inputs 的用法同 `rnn_input_gradients`。
    """
    torch.manual_seed(seed)
    model = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
    x = torch.randn(1, seq_len, embed_dim) if inputs is None else inputs.detach()
    model, x = model.to(dtype), x.to(dtype).requires_grad_()
    attn_mask = to_nn_mha_mask(causal_mask(seq_len))  # [seq, seq]，True = 遮住
    out, weights = model(
        x, x, x,
        attn_mask=attn_mask,
        need_weights=True,
        average_attn_weights=False,
    )
    loss = out[:, -1, :].pow(2).mean()
    loss.backward()
    weights = weights[0].detach()  # [heads, seq, seq]
    return AttentionGradients(
        model=model, x=x, output=out.detach(), loss=loss.item(),
        grad_norms=x.grad.norm(dim=-1)[0].detach(),
        weights=weights, last_token_weights=weights[:, -1, :].mean(dim=0),
    )


def cumulative_mass(grad_norms: torch.Tensor) -> torch.Tensor:
    """梯度的累计占比：先归一化成总和为 1，再累加
    （见附录 梯度能否传回远处「梯度落在前半段还是后半段」）。
    """
    mass = grad_norms / grad_norms.sum()
    return torch.cumsum(mass, dim=0)


def first_half_share(grad_norms: torch.Tensor) -> float:
    """前 seq_len // 2 个位置拿到的梯度占总量的比例，0..1
    （见附录 梯度能否传回远处「梯度落在前半段还是后半段」）。
    """
    half = grad_norms.shape[0] // 2
    return (grad_norms[:half].sum() / grad_norms.sum()).item()


@dataclass(frozen=True, kw_only=True)
class FirstPositionVsLength:
    """不同长度下位置 0 的梯度范数，以及注意力那一侧拆开来的两个因子
    （见附录 梯度能否传回远处）。
    """

    lengths: tuple[int, ...]
    rnn: tuple[float, ...]
    attention: tuple[float, ...]
    # 注意力：最后一个位置分给位置 0 的权重（各头平均），和最后一个位置输出向量的范数
    attention_weight_0: tuple[float, ...] = ()
    attention_last_output_norm: tuple[float, ...] = ()


def first_position_gradient_vs_length(
    lengths: Sequence[int] = (10, 20, 40, 80, 160),
    seed: int = 42,
    dtype: torch.dtype = torch.float32,
) -> FirstPositionVsLength:
    """序列变长时，最早位置收到的梯度：RNN 按指数衰减，注意力只是被更多位置分摊
    （见附录 梯度能否传回远处）。

    两种模型都用附录的配置与种子；输入按最长的长度各抽一次，较短的序列取开头一段。
    float32 下 RNN 在长度 160 时，位置 0 的梯度 x.grad 约为 1e-36，本身仍能用
    float32 表示；但求范数要先把各分量平方（约 1e-72），小于 float32 能表示的
    最小正数，所以范数在 float32 下溢为 0。
    """
    lengths = tuple(lengths)
    longest = max(lengths)
    rnn_x = rnn_input_gradients(longest, seed=seed, dtype=dtype).x
    attn_x = attention_input_gradients(longest, seed=seed, dtype=dtype).x
    rnn = tuple(
        rnn_input_gradients(n, seed=seed, dtype=dtype, inputs=rnn_x[:, :n])
        .grad_norms[0].item()
        for n in lengths
    )
    runs = [attention_input_gradients(n, seed=seed, dtype=dtype, inputs=attn_x[:, :n])
            for n in lengths]
    return FirstPositionVsLength(
        lengths=lengths, rnn=rnn,
        attention=tuple(r.grad_norms[0].item() for r in runs),
        attention_weight_0=tuple(r.last_token_weights[0].item() for r in runs),
        attention_last_output_norm=tuple(r.output[0, -1].norm().item() for r in runs),
    )


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """log y 对 log x 的最小二乘斜率：y ≈ c·x^k 时返回 k
    （见附录 梯度能否传回远处）。
    """
    lx = torch.tensor([math.log(x) for x in xs], dtype=torch.float64)
    ly = torch.tensor([math.log(y) for y in ys], dtype=torch.float64)
    lx, ly = lx - lx.mean(), ly - ly.mean()
    return ((lx * ly).sum() / (lx * lx).sum()).item()


def lstm_input_gradients(seq_len: int = 80, input_dim: int = 4,
                         hidden_dim: int = 8,
                         seed: int = 42) -> torch.Tensor:
    """把 nn.RNN 换成未训练的 nn.LSTM，种子、尺寸和损失与 `rnn_input_gradients`
    相同，返回每个位置的梯度范数。LSTM 先按种子抽的参数是 RNN 的 4 倍，
    随后抽出的输入因此和 RNN 读的不是同一串数。
    """
    torch.manual_seed(seed)
    model = nn.LSTM(input_dim, hidden_dim, batch_first=True)
    x = torch.randn(1, seq_len, input_dim, requires_grad=True)
    outputs, _ = model(x)
    outputs[:, -1, :].pow(2).mean().backward()
    return x.grad.norm(dim=-1)[0].detach()


# ------------------------------------------------ 第 6 节：残差路径上的梯度


def residual_path_gradient(num_layers: int, norm_first: bool,
                           d_model: int = 8, num_heads: int = 2,
                           seq_len: int = 5, seed: int = 42) -> float:
    """梯度只走残差这条路，从第 num_layers 层传回输入时还剩多少。

    子层照常参与前向计算，但输出被 detach，反传时梯度只能走残差相加那条路。
    顶层收到的梯度是固定的随机方向 g；返回 ‖输入处的梯度‖ / ‖g‖。
    创建顺序：设种子 → x → 逐层建注意力、FFN、两个 LayerNorm → g。
    """
    torch.manual_seed(seed)
    x = torch.randn(1, seq_len, d_model, requires_grad=True)
    mask = causal_mask(seq_len)
    layers = [(MultiHeadAttention(d_model, num_heads),
               FeedForward(d_model),
               nn.LayerNorm(d_model), nn.LayerNorm(d_model))
              for _ in range(num_layers)]
    g = torch.randn(1, seq_len, d_model)
    h = x
    for attn, ffn, ln_attn, ln_ffn in layers:
        if norm_first:  # Pre-LN：x + 子层(LN(x))
            h = h + attn(ln_attn(h), mask).detach()
            h = h + ffn(ln_ffn(h)).detach()
        else:           # Post-LN：LN(x + 子层(x))，同 TransformerBlock
            h = ln_attn(h + attn(h, mask).detach())
            h = ln_ffn(h + ffn(h).detach())
    (h * g).sum().backward()  # 顶层输出处的梯度恰好是 g
    return (x.grad.norm() / g.norm()).item()


# ------------------------------------ 第 6 节：没有 LayerNorm，激活越摞越大


@dataclass(frozen=True, kw_only=True)
class ActivationScale:
    """同一摞 Block 带着和去掉 LayerNorm 时，每层输出的均方根（RMS）。

    两个列表的第 0 项是输入 x 的 RMS，第 l 项是第 l 个 Block 之后的 RMS。
    """

    num_layers: int
    rms_with_ln: list[float]     # Block 原样：LN(x + 子层(x))
    rms_without_ln: list[float]  # 同样的参数，只去掉两个 LayerNorm：x + 子层(x)


# 第 6 节 Transformer Block「LayerNorm」：为什么 Block 里少不了它
def activation_scale(num_layers: int = 32, d_model: int = 8,
                     num_heads: int = 2, seq_len: int = 5,
                     seed: int = 42) -> ActivationScale:
    """把同一个 x 送过一摞 Block 两次：一次原样，一次跳过两个 LayerNorm。

    两次用的是同一批 Block（注意力和 FFN 的参数相同），唯一的差别是 LayerNorm。
    RMS = 全部激活值平方的平均再开方，即一个激活值的典型大小。
    创建顺序：设种子 → x → 逐个建 Block。只做前向，不算梯度。
    """
    torch.manual_seed(seed)
    x = torch.randn(1, seq_len, d_model)  # [batch, seq, d_model]
    blocks = [TransformerBlock(d_model, num_heads)
              for _ in range(num_layers)]
    mask = causal_mask(seq_len)

    def rms(t: torch.Tensor) -> float:
        return t.pow(2).mean().sqrt().item()

    with_ln, without_ln = [rms(x)], [rms(x)]
    a = b = x
    with torch.no_grad():
        for block in blocks:
            # 原样：两个子层各是 LN(x + 子层(x))
            a = block(a, mask)
            # 同样的子层，只有残差相加，没有 LayerNorm
            b = b + block.attn(b, mask)
            b = b + block.ffn(b)
            with_ln.append(rms(a))
            without_ln.append(rms(b))
    return ActivationScale(num_layers=num_layers, rms_with_ln=with_ln,
                           rms_without_ln=without_ln)


# ---------------------------------------------------------------- 为什么是 √d_k


@dataclass(frozen=True, kw_only=True)
class DotProductStat:
    """一个 d_k 下点积的经验方差
    （见第 2 节 缩放点积注意力「缩放」）。
    """

    d_k: int
    var_unscaled: float  # Var(q·k)，理论值 d_k
    var_scaled: float    # Var(q·k / √d_k)，理论值 1


def dot_product_stats(d_k_values: Sequence[int] = (4, 16, 64, 256),
                      n_samples: int = 10000, seed: int = 0) -> list[DotProductStat]:
    """用随机向量验证 Var(q·k) ≈ d_k、Var(q·k/√d_k) ≈ 1
    （见第 2 节 缩放点积注意力「缩放」）。

    q、k 的每个分量独立取自 N(0, 1)；每个 d_k 抽 n_samples 对。
    使用独立的随机数生成器，不改变全局随机状态。
    """
    gen = torch.Generator().manual_seed(seed)
    stats = []
    for d_k in d_k_values:
        q = torch.randn(n_samples, d_k, generator=gen, dtype=torch.float64)
        k = torch.randn(n_samples, d_k, generator=gen, dtype=torch.float64)
        dots = (q * k).sum(dim=-1)  # [n_samples]
        stats.append(DotProductStat(
            d_k=d_k,
            var_unscaled=dots.var().item(),
            var_scaled=(dots / math.sqrt(d_k)).var().item(),
        ))
    return stats


@dataclass(frozen=True, kw_only=True)
class InitScoreStd:
    """一个 d_k 下，默认初始化时缩放后分数的标准差
    （见第 2 节 缩放点积注意力「softmax 归一化」）。
    """

    d_k: int
    n_seeds: int
    std_q: float       # Q 各分量的标准差，理论值 √(1/3) ≈ 0.577
    std_scaled: float  # 缩放后分数 q·k/√d_k 的标准差，约 1/3，与 d_k 无关


def init_score_std(d_k_values: Sequence[int] = (4, 16, 64, 256),
                   n_seeds: int = 100) -> list[InitScoreStd]:
    """量一量还没训练的玩具例子里，缩放后的分数有多大
    （见第 2 节 缩放点积注意力「softmax 归一化」）。

    每个 d_k 取 d_model = d_k，用种子 0 … n_seeds−1 各按 make_toy_example
    的顺序造一次 “the cat sat”（嵌入 + 三个默认初始化的 nn.Linear），
    把所有种子的九个缩放后分数放在一起求标准差。
    nn.Linear 默认把权重均匀地取在 ±1/√d_model 之间（方差 1/(3·d_model)），
    嵌入的分量方差为 1，所以 Q、K 每个分量的方差约 1/3，
    缩放后分数的标准差约 1/3，与 d_k 无关。不改变全局随机状态。
    """
    results = []
    with torch.random.fork_rng(devices=[]):
        for d_k in d_k_values:
            qs, scaled = [], []
            for seed in range(n_seeds):
                ex = make_toy_example(d_model=d_k, d_k=d_k, seed=seed)
                qs.append(ex.Q.flatten())
                scores = attention_scores(ex.Q, ex.K)  # [3, 3]
                scaled.append(scale_scores(scores, d_k).flatten())
            results.append(InitScoreStd(
                d_k=d_k, n_seeds=n_seeds,
                std_q=torch.cat(qs).double().std().item(),
                std_scaled=torch.cat(scaled).double().std().item(),
            ))
    return results


@dataclass(frozen=True, kw_only=True, eq=False)
class SoftmaxSaturation:
    """缩放前后 softmax 的对比（见第 2 节 缩放点积注意力「缩放」）。

    scores / weights 等是一次“典型”抽样（未缩放最大权重处在所有抽样的中位数）；
    grad_norm 是 softmax 雅可比矩阵 ∂weights/∂scores 的 Frobenius 范数：
    越接近 0，梯度越小。
    median_* 是 n_trials 次抽样的中位数。
    """

    d_k: int
    n_keys: int
    n_trials: int
    scores: torch.Tensor          # [n_keys] 未缩放 q·k
    scaled_scores: torch.Tensor   # [n_keys] q·k / √d_k
    weights: torch.Tensor         # [n_keys] softmax(scores)
    scaled_weights: torch.Tensor  # [n_keys] softmax(scaled_scores)
    max_weight: float
    scaled_max_weight: float
    grad_norm: float
    scaled_grad_norm: float
    median_max_weight: float
    scaled_median_max_weight: float
    median_grad_norm: float
    scaled_median_grad_norm: float


def _softmax_jacobian_norm(p: torch.Tensor) -> torch.Tensor:
    """softmax 雅可比 diag(p) − p pᵀ 的 Frobenius 范数，p: [..., n] → [...]。"""
    jac = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # [..., n, n]
    return jac.flatten(-2).norm(dim=-1)


def softmax_saturation(d_k: int = 64, n_keys: int = 8, seed: int = 0,
                       n_trials: int = 1000) -> SoftmaxSaturation:
    """不缩放时 softmax 接近 one-hot、梯度接近 0；缩放后分布展开
    （见第 2 节 缩放点积注意力「缩放」）。

    每次抽样：一个 query 和 n_keys 个 key，分量独立取自 N(0, 1)。
    """
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(n_trials, 1, d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(n_trials, n_keys, d_k, generator=gen, dtype=torch.float64)
    scores = attention_scores(q, k).squeeze(-2)  # [n_trials, n_keys]
    scaled = scale_scores(scores, d_k)           # [n_trials, n_keys]
    p, ps = softmax_weights(scores), softmax_weights(scaled)
    max_w, max_ws = p.max(dim=-1).values, ps.max(dim=-1).values
    g, gs = _softmax_jacobian_norm(p), _softmax_jacobian_norm(ps)
    # 典型的一次：最大权重正是中位数（torch.median 在偶数个时取较小的那个）
    i = max_w.argsort()[(n_trials - 1) // 2].item()
    return SoftmaxSaturation(
        d_k=d_k, n_keys=n_keys, n_trials=n_trials,
        scores=scores[i], scaled_scores=scaled[i],
        weights=p[i], scaled_weights=ps[i],
        max_weight=max_w[i].item(), scaled_max_weight=max_ws[i].item(),
        grad_norm=g[i].item(), scaled_grad_norm=gs[i].item(),
        median_max_weight=max_w.median().item(),
        scaled_median_max_weight=max_ws.median().item(),
        median_grad_norm=g.median().item(),
        scaled_median_grad_norm=gs.median().item(),
    )
