"""题目给的数据（见「作业」一节）：检查器和批改程序都从这里重新生成，不用学生手里的那一份。"""

from __future__ import annotations

import functools

import torch


@functools.lru_cache(maxsize=1)
def _inputs() -> dict:
    from ..attention import attention_scores, scale_scores
    from ..data import make_toy_example

    # make_toy_example 要设种子 42：在 fork_rng 里做，学生笔记本里的随机数状态不受检查器影响
    with torch.random.fork_rng(devices=[]):
        toy = make_toy_example()
    Q, K = toy.Q.detach(), toy.K.detach()
    d_k = Q.shape[-1]
    return {"q": Q[1], "k": K[2], "Q": Q, "K": K, "d_k": d_k, "seq_len": Q.shape[0],
            "scores": scale_scores(attention_scores(Q, K), d_k),
            "hidden_size": 512, "d_ff": 2048}


def exercise_inputs() -> dict:
    """题目给的数据（见「作业」一节），与学生版笔记本里的数据单元算出的相同。

    种子 42，句子 "the cat sat"。每次调用都给一份新的拷贝（改它不影响下一次）。

    笔记本里的检查器和批改（minigpt.grade）都用它，而不用学生笔记本里的 q、K、scores……：
    改了题目数据也骗不过检查，笔记本里的 ✔ 和批改的分数也就是同一个判断。
    """
    return {name: value.clone() if isinstance(value, torch.Tensor) else value
            for name, value in _inputs().items()}
