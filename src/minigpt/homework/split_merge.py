"""作业 4（一）：把 [batch, seq, d_model] 拆成各头 [batch, heads, seq, d_k]，再合并回来（见第 4 节）。"""

from __future__ import annotations

import torch

from .errors import HomeworkWrong
from .hints import Diagnosis, given_input, judge_tensor
from .values import count, passed, require


class _Data:
    def __init__(self, x: torch.Tensor, num_heads: int):
        self.x = x.double()
        self.b, self.n, self.d = x.shape
        self.h = num_heads
        self.d_k = self.d // num_heads
        self.heads = self.x.view(self.b, self.n, self.h, self.d_k).transpose(1, 2)


HEAD_DIAGNOSES = (
    Diagnosis("view_without_transpose", lambda c: c.x.reshape(c.b, c.h, c.n, c.d_k),
          "形状对了，数却不对：像是直接 view / reshape 成了 [batch, heads, seq, d_k]。"
          "内存里一个 token 的 d_model 个数是连着放的，直接这样读，一个“头”里就混进了别的 token 的数。"
          "先 view 成 [batch, seq, heads, d_k]，再 transpose(1, 2)"),
    Diagnosis("interleaved", lambda c: c.x.view(c.b, c.n, c.d_k, c.h).permute(0, 3, 1, 2),
          "每个头拿到的不是连着的 d_k 维，而是隔几个取一个（头交错了）："
          "像是 view 成了 [batch, seq, d_k, heads]。第 h 个头应当拿第 h·d_k 到 (h+1)·d_k − 1 维，"
          "view 的顺序是 [batch, seq, heads, d_k]"),
    Diagnosis("all_heads_head_0", lambda c: c.heads[:, :1].expand(-1, c.h, -1, -1) if c.h > 1 else None,
          "每个头拿到的都是第 0 个头的数（前 d_k 维）：第 h 个头应当拿第 h·d_k 到 (h+1)·d_k − 1 维。"
          "先 view 成 [batch, seq, heads, d_k]，再 transpose(1, 2)"),
    Diagnosis("heads_reversed", lambda c: c.x.view(c.b, c.n, c.h, c.d_k).permute(0, 2, 1, 3).flip(1),
          "头的顺序反了：第 0 个头应当是前 d_k 维"),
    Diagnosis("split_after_transposing_x", lambda c: c.x.transpose(1, 2).reshape(c.b, c.h, c.n, c.d_k),
          "形状对了，数却不对：像是先把 x 转置成了 [batch, d_model, seq] 再 reshape，"
          "一个“头”里混进了别的 token 的数。先 view 成 [batch, seq, heads, d_k]，再 transpose(1, 2)"),
    Diagnosis("split_scaled", lambda c: c.heads / c.d_k ** 0.5,
          "每个数都像是除以了 √d_k：拆头只是换个形状看 x，不改动数；"
          "除以 √d_k 是算注意力分数时的事"),
)

MERGE_DIAGNOSES = (
    Diagnosis("merge_without_transpose", lambda c: c.heads.reshape(c.b, c.n, c.d),
          "像是直接把 [batch, heads, seq, d_k] reshape / view 成了 [batch, seq, d_model]，"
          "没有先 transpose(1, 2) 把 seq 换回头的前面：这样拼起来的一行里混着不同 token 的数"),
    Diagnosis("merge_interleaved", lambda c: c.heads.permute(0, 2, 3, 1).reshape(c.b, c.n, c.d),
          "各头的数交错着拼在了一起：应当是第 0 个头的 d_k 维整段在前，第 1 个头的整段在后"
          "（transpose(1, 2) 之后是 [batch, seq, heads, d_k]，再 view 成 [batch, seq, d_model]）"),
    Diagnosis("merge_heads_reversed", lambda c: c.heads.flip(1).transpose(1, 2).reshape(c.b, c.n, c.d),
          "合并时头的顺序反了：第 0 个头的 d_k 维应当在前，第 1 个头的在后"),
)


def judge_split_merge(heads, merged, x, num_heads) -> str:
    """作业 4（一）：heads = x 拆成的各头 [batch, heads, seq, d_k]；merged = heads 合并回
    [batch, seq, d_model]，应当和 x 一模一样（见第 4 节 多头注意力的 split_heads、merge_heads）。
    """
    require(heads=heads, merged=merged)
    n_heads = count(num_heads, "num_heads", given=True)
    x = given_input(x)
    if n_heads < 1 or x.shape[-1] % n_heads:
        raise HomeworkWrong("题目给的 num_heads 要能整除 d_model：请重新运行上面给出数据的单元", "given")
    c = _Data(x, n_heads)
    shape4 = (c.b, c.h, c.n, c.d_k)
    judge_tensor(heads, "heads", c.heads, HEAD_DIAGNOSES, c, what=f"形状 {shape4} 的浮点张量", shapes=(
        ("shape_no_transpose", (c.b, c.n, c.h, c.d_k),
         "这是 view 之后、transpose 之前的样子：还要 transpose(1, 2)，把头的维度换到 seq 前面"),
        ("shape_not_split", (c.b, c.n, c.d), "还没有拆开：heads 是四维的 [batch, heads, seq, d_k]"),
        ("shape_heads_d_k_swapped", (c.b, c.d_k, c.n, c.h),
         f"头数和每头的维数像是弄反了：拆成了 {c.d_k} 个头、每个 {c.h} 维。"
         f"view 成 [batch, seq, heads, d_k]，也就是 ({c.b}, {c.n}, {c.h}, {c.d_k})，再 transpose(1, 2)"),
        ("shape_wrong_transpose", (c.b, c.n, c.d_k, c.h),
         "transpose 像是换错了维：view 成 [batch, seq, heads, d_k] 之后，要换的是 seq 和 heads，即 transpose(1, 2)"),
        ("shape_seq_d_k_swapped", (c.b, c.h, c.d_k, c.n),
         "最后两维像是换了位置（seq 和 d_k）：heads 应是 [batch, heads, seq, d_k]；"
         "是不是之后又对 heads 做了一次 transpose？"),
        ("shape_no_batch", (c.h, c.n, c.d_k),
         "像是丢了 batch 这一维：x 是 [batch, seq, d_model]，heads 要保留它，是四维的 [batch, heads, seq, d_k]"),
    ))
    judge_tensor(merged, "merged", c.x, MERGE_DIAGNOSES, c, what=f"形状 {(c.b, c.n, c.d)} 的浮点张量", shapes=(
        ("merge_not_flattened", (c.b, c.n, c.h, c.d_k),
         "transpose 之后还要把最后两维 [heads, d_k] 接成一维：.contiguous().view(batch, seq, d_model)"),
        ("merge_shape_heads_first", shape4, "这还是拆开的样子：合并的结果是三维的 [batch, seq, d_model]"),
        ("merge_summed", (c.b, c.n, c.d_k),
         "像是把各头加在了一起（sum 或 mean）：合并是把各头的结果沿最后一维接起来，"
         "得到 d_model 维，不是相加"),
        ("merge_seq_d_model_swapped", (c.b, c.d, c.n),
         "最后两维像是换了位置：merged 应是 [batch, seq, d_model]。transpose(1, 2) 之后直接 "
         "reshape(batch, seq, d_model)，不要再转置"),
        ("merge_cat_along_seq", (c.b, c.h * c.n, c.d_k),
         "各头像是沿 seq 那一维接了起来：每个 token 的各头结果要沿最后一维接成 d_model 维，"
         "torch.cat(…, dim=-1)，或者 transpose(1, 2) 之后 reshape"),
    ))
    return passed(4, f"heads 的形状是 {shape4}，第 h 个头拿的是第 h·{c.d_k} 维起的 {c.d_k} 维；"
                     "merged 和 x 一模一样")
