"""第 7 节（训练出来的头）页面上的每一次训练与测量，按页面的做法（同样的种子与参数）重做一遍。

tests/test_heads.py 检查正文的每个角色结论；交互图的测试（interactive_cases）也从这里取权重。
训练是单线程、固定种子的，同一平台上与构建书时得到的参数逐位相同。这里只算数，不含任何期望的数字。
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import torch

# 构建本书时存下的训练结果（按代码摘要命名，代码一变就不再读到）：有就读，没有就训练，结果逐位相同
os.environ.setdefault("MINIGPT_TRAINED", str(Path(__file__).resolve().parents[2] / "_build" / ".trained"))

from minigpt import heads as H  # noqa: E402
from minigpt import seeds as S  # noqa: E402

DATA_SEED, TEST_SEED = 0, 1234   # 示例序列、测试序列的数据种子（页面上的）
SENTENCES = ["the cat sat on the mat", "the dog ran on the cat",
             "a cat sat on a dog", "a dog ran on a mat"]


@lru_cache(maxsize=None)
def run2() -> H.TrainedModel:
    return S.train_seed(0)


@lru_cache(maxsize=None)
def run1() -> H.TrainedModel:
    return S.train_seed(0, n_layers=1)


@lru_cache(maxsize=None)
def control() -> H.TrainedModel:
    return S.train_seed(0, repeat=False)


@lru_cache(maxsize=None)
def studies(seeds: tuple[int, ...] = S.SEEDS) -> dict[int, S.SeedStudy]:
    """页面的种子 0–5（默认），或教师指南练习答案里的别的种子。"""
    return S.study_seeds(seeds)


@lru_cache(maxsize=None)
def test_batch() -> H.RepeatBatch:
    return H.repeat_batch(512, torch.Generator().manual_seed(TEST_SEED))


@lru_cache(maxsize=None)
def example() -> H.RepeatBatch:
    return H.repeat_batch(1, torch.Generator().manual_seed(DATA_SEED))


@lru_cache(maxsize=None)
def example_weights() -> tuple[list[str], list[torch.Tensor], int, int]:
    """示例序列（去掉最后一个 token）的 token、两层的权重、第二遍起点、A 的长度。"""
    ex = example()
    ids = ex.ids[:, :-1]
    return ([str(t) for t in ids[0].tolist()], run2().model.attention_weights(ids),
            ex.starts.item(), ex.lengths.item())


@lru_cache(maxsize=None)
def grammar(seed: int) -> H.TrainedModel:
    return S.grammar_seed(seed)   # 页面的做法：换几个种子时存下的


def grammar_weights(seed: int) -> list[torch.Tensor]:
    """每句话（送进前 5 个词）的 [2 头, 5, 5] 权重。"""
    model = grammar(seed).model
    return [model.attention_weights(H.sentence_ids(s)[:, :-1])[0][0] for s in SENTENCES]


def grammar_probs(seed: int, cut: int | None = None) -> list[tuple[float, float]]:
    """每句话的 (P(D₂ = D₁), P(N₂ = N₁))；cut 给了就先剪掉那个头（从 0 数）。"""
    model = grammar(seed).model
    if cut is not None:
        model = H.without_head(model, layer=0, head=cut)
    return H.grammar_probs(model, SENTENCES)
