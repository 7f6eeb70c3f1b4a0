"""第 7 节正文里关于训练结果的每条结论，和它在一个种子上成立的条件
（见第 7 节「换几个种子」）。

页面把“在几个种子上成立”glue 进正文；tests/test_heads.py 把每个计数钉住：
哪个种子上的结论变了，测试就失败。计数只对量过的种子说话
（正文是 0–5；种子普查 0–39 见 minigpt.survey），别的种子可能不一样。
条件只读 `seeds.seed_facts` 量出的数和平摊注意力的基线，不训练、不算模型。
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import torch

from .probes import first_pass_weight, uniform_weights
from .tasks import REPEAT_VOCAB, repeat_batch
from .seeds import ROLE, SNAPSHOT_EVERY, TEST_SEED

CHANCE = math.log(REPEAT_VOCAB)
# 正文之外的种子：练习 1 请读者训练，正文只在它们上数几条结论
EXERCISE_SEEDS = (6, 7)
# 结论里的门槛：正文把它们 glue 进去，测试也从这里取，一个数只写一次
NEAR_CHANCE = 0.15   # “和瞎猜差不多”：与 ln 16 相差不到它
COPY_LOW = 1.0       # 能抄的位置学会了：损失低于它
ABOVE_FLAT = 0.05    # 另一个头分给第一遍 A 的权重比平摊的头至少多出它
CHEAP = 0.1          # 换掉第一层的另一个头，能抄处的损失升不到它
PARTNER_GAP = 0.3    # 换掉前一个 token 头后仍比瞎猜低这么多……
PARTNER_PREV = 0.4   # ……的种子，另一个头的前一个 token 分数也在它以上
EACH_NEEDED = 0.5    # 换掉第二层任何一个头，能抄处的损失至少升高这么多
REDIRECT_BEFORE = 0.15   # 改道之前，模型给 token[j] 的概率低于它
PREV_ROWS = 0.8      # 前一个 token 头在归纳头要找的各行（第 5–19 行）都在它以上
GRAMMAR_LEARNED = 0.99   # 玩具语法：D₂ 猜对的概率都不低于它
SHARP = 0.999        # 正文的“几乎全给了”：玩具语法里稳定的头给那一格的权重


@cache
def uniform_first_pass() -> float:
    """平摊的头（权重均分给自己和左边）在第二遍里分给整个第一遍 A 的权重，
    用正文的 512 条测试序列量（见第 7 节「两个角色，两个分数」）。第一次用到时才算，
    之后记住：导入本模块不做计算。"""
    test = repeat_batch(512, torch.Generator().manual_seed(TEST_SEED))
    flat = uniform_weights(len(test.ids), test.ids.shape[1] - 1)
    return first_pass_weight(flat, test).item()


# 第 7 节 训练出来的头「换几个种子」
CLAIMS: dict[str, Callable[[dict[str, float]], bool]] = {
    # 第一层有前一个 token 头
    "prev_head": lambda f: f["prev"] > ROLE,
    "other_no_role": lambda f: f["prev_other"] < ROLE and f["ind1_other"] < ROLE,
    # 另一个头的前一个 token 分数也过了门槛（练习 1 的提示）
    "other_prev_passes": lambda f: f["prev_other"] > ROLE,
    # 另一个头分给第一遍的权重，比平摊的头至少多 ABOVE_FLAT
    "other_first_pass": lambda f: (f["first_pass_other"]
                                   > uniform_first_pass() + ABOVE_FLAT),
    # 换掉它，能抄处的损失升不到 CHEAP
    "other_cheap": lambda f: f["cut_other"] < CHEAP,
    "l1_no_induction": lambda f: f["ind1_max"] < ROLE,
    "l2_induction": lambda f: f["ind2_min"] > ROLE and f["prev2_max"] < ROLE,
    "copy_low": lambda f: f["copy"] < COPY_LOW,
    # 其余位置：略高于瞎猜（误用归纳）
    "other_above_chance": lambda f: f["other"] > CHANCE,
    "cut_prev_chance": lambda f: abs(f["cut_prev"] - CHANCE) < NEAR_CHANCE,
    "cut_prev_above": lambda f: f["cut_prev"] > CHANCE + NEAR_CHANCE,
    # 换掉前一个 token 头后损失仍比瞎猜低 PARTNER_GAP 以上的种子，和另一个头的前一个
    # token 分数在 PARTNER_PREV 以上的种子，是不是同一批（这条线是看着种子 0–5 划的）
    "cut_prev_partner": lambda f: ((f["cut_prev"] < CHANCE - PARTNER_GAP)
                                   == (f["prev_other"] > PARTNER_PREV)),
    "cut_prev_no_induction": lambda f: f["cut_prev_ind"] < ROLE,
    "l2_each_needed": lambda f: f["cut_l2_min"] > f["copy"] + EACH_NEEDED,
    "l2_both_mean_chance": lambda f: abs(f["cut_l2_both"] - CHANCE) < NEAR_CHANCE,
    "l2_both_zero_above": lambda f: f["cut_l2_both_zero"] > CHANCE,
    "keys_carry_it": lambda f: f["swap_k"] < ROLE < f["swap_q"],
    # 上下文里出现过的 token 被多押
    "context_bias": lambda f: f["redirect_before"] > 1 / REPEAT_VOCAB,
    "redirect_copies": lambda f: (f["redirect_before"] < REDIRECT_BEFORE
                                  and f["redirect_after"] > ROLE),
    # 归纳分数过门槛不晚于前一个 token 分数（可以更早）
    "ind_not_later": lambda f: f["step_ind"] <= f["step_prev"],
    # 归纳分数过门槛的副本紧挨着能抄处损失降得最快的那 25 步
    # （落在这 25 步里，或紧接着的 25 步里：陡降开始之前的那个副本不算）
    "ind_at_drop": lambda f: (f["fast_from"] < f["step_ind"]
                              <= f["fast_to"] + SNAPSHOT_EVERY),
    # 两个分数在同一个副本上第一次过门槛
    "same_window": lambda f: f["step_prev"] == f["step_ind"],
    # 至多差一个副本（25 步）
    "next_window": lambda f: abs(f["step_prev"] - f["step_ind"]) <= SNAPSHOT_EVERY,
    # 两个分数过门槛的副本都紧挨着降得最快的那 25 步（与 ind_at_drop 同一个窗口）
    "at_steepest_drop": lambda f: (
        f["fast_from"] < min(f["step_prev"], f["step_ind"])
        and max(f["step_prev"], f["step_ind"]) <= f["fast_to"] + SNAPSHOT_EVERY),
    "in_300_400": lambda f: (
        300 < min(f["step_prev"], f["step_ind"])
        <= max(f["step_prev"], f["step_ind"]) <= 400),
    # 相变之前（第 seeds.EARLY 步）：已比瞎猜好、没有头过门槛、
    # 第二层把一半以上的权重给第一遍 A
    "first_stage": lambda f: (f["copy_early"] < CHANCE - NEAR_CHANCE
                              and f["ind_early_max"] < ROLE
                              and f["first_pass_early"] > 0.5),
    "first_in_pass_chance": lambda f: abs(f["pos_first"] - CHANCE) < NEAR_CHANCE,
    "rest_in_pass_low": lambda f: f["pos_rest_max"] < COPY_LOW,
    "prev_where_needed": lambda f: (f["prev_rows_min"] > PREV_ROWS
                                    and f["prev_late_max"] < ROLE),
    "grammar_learned": lambda f: f["grammar_d2_min"] >= GRAMMAR_LEARNED,
    "grammar_det_head": lambda f: not math.isnan(f["grammar_det_head"]),
}


def claim_counts(facts: dict[int, dict[str, float]]) -> dict[str, int]:
    """每条结论在几个种子上成立（见第 7 节「换几个种子」）。"""
    return {name: sum(bool(test(f)) for f in facts.values())
            for name, test in CLAIMS.items()}


# 计数的说法（how_many）：对任何计数都通顺，
# 不写“6 个种子里有 6 个”“2 个里有 0 个”；它是主语，页面在后面接谓语
ALL = "{total} {noun}全都"
SOME = "{total} {noun}中有 {n} 个"
NONE = "{total} {noun}中没有一个"
BOTH = "两{noun}都"
NEITHER = "这两{noun}中没有一个"


def how_many(n: int, total: int, noun: str) -> str:
    """n 个（共 total 个）的说法，作句子的主语，
    后面总要跟一个谓语（“如此”“低于 0.5”……）：
    how_many(6, 6, "个种子") → "6 个种子全都"，(5, 6) → "6 个种子中有 5 个"，
    (0, 6) → "6 个种子中没有一个"；
    total 为 2 时说“两个种子都”“这两个种子中没有一个”。"""
    if not 0 <= n <= total:
        raise ValueError(f"计数 {n} 不在 0 到 {total} 之间")
    if total == 2 and n != 1:
        return (BOTH if n else NEITHER).format(noun=noun)
    if n == total:
        return ALL.format(total=total, noun=noun)
    return (SOME if n else NONE).format(n=n, total=total, noun=noun)
