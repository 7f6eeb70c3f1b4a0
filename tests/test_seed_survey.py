"""第 7 节的种子普查（book/data/s7_seed_survey.json，由 tools/survey_seeds.py 生成）：
它是用现在的训练代码算的，与构建书时训练的种子一致，页面 glue 的每个普查计数都是 claim_counts 在它上面给出的数。
这里不重训普查的种子：只读文件，和构建时存下的种子 0–7 对照。"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from support import heads_cases as C
from minigpt import claims, seeds, survey

BOOK = Path(__file__).resolve().parents[1] / "book"
SURVEY = BOOK / survey.SURVEY_FILE
PAGE = BOOK / "s7_trained_heads.md"


def _survey() -> dict[int, dict[str, float]]:
    return survey.read_survey(SURVEY)[1]


def _grew(facts) -> list[int]:
    return [s for s, f in facts.items()
            if claims.CLAIMS["prev_head"](f) and claims.CLAIMS["l2_induction"](f)]


def test_the_survey_was_made_by_the_current_training_code():
    key, facts = survey.read_survey(SURVEY)
    assert key == seeds.code_key(), (
        "训练或测量的代码变了，种子普查已过期：用 "
        "MINIGPT_TRAINED=_build/.trained python tools/survey_seeds.py --jobs 2 重新生成 "
        f"{SURVEY.relative_to(BOOK.parent)}")
    assert tuple(facts) == survey.SURVEY_SEEDS


@pytest.mark.slow
def test_the_survey_agrees_with_the_build_on_the_seeds_the_build_trains():
    facts = _survey()
    built = C.studies(seeds.SEEDS + claims.EXERCISE_SEEDS)
    for seed, study in built.items():
        assert set(study.facts) == set(facts[seed])
        for name, value in study.facts.items():
            assert value == facts[seed][name] or (math.isnan(value) and math.isnan(facts[seed][name])), \
                (seed, name)


# 普查里两个角色都长出来的种子上，每条结论成立的个数（页面 glue 成 s7_sv_of_<名字>）
EXPECTED_GREW = 30
EXPECTED_STUCK = [7, 13, 21, 22, 25, 26, 27, 31, 35, 36]
EXPECTED_GREW_COUNTS = {"ind_at_drop": 25, "ind_not_later": 27, "same_window": 9,
                        "next_window": 19, "at_steepest_drop": 14,
                        "cut_prev_partner": 26, "cut_prev_no_induction": 28,
                        "cut_prev_above": 5, "other_first_pass": 27, "other_cheap": 13,
                        "first_stage": 28, "keys_carry_it": 29, "prev_where_needed": 3}


def test_every_survey_count_on_the_page_is_what_claim_counts_gives():
    facts = _survey()
    grew = _grew(facts)
    assert len(grew) == EXPECTED_GREW
    assert [s for s in facts if s not in grew] == EXPECTED_STUCK
    counts = claims.claim_counts({s: facts[s] for s in grew})
    assert {k: counts[k] for k in EXPECTED_GREW_COUNTS} == EXPECTED_GREW_COUNTS
    page = PAGE.read_text(encoding="utf-8")
    used = {name for name in claims.CLAIMS if f"s7_sv_of_{name}`" in page}
    assert used == set(EXPECTED_GREW_COUNTS)
    assert "s7_sv_of_grew`" in page and "s7_sv_all_of_grammar_learned`" in page


def test_the_seeds_that_grow_no_role_learn_little_and_the_page_seeds_all_grow_both():
    """正文：种子 0–5 都长出两个角色；其余没长出来的种子一个角色也没有，能抄位置的损失也没降到
    COPY_LOW 以下（“停在……”）。"""
    facts = _survey()
    grew = _grew(facts)
    assert set(seeds.SEEDS) <= set(grew)
    for s in facts:
        if s not in grew:
            f = facts[s]
            assert max(f["prev"], f["prev_other"], f["ind2_max"], f["ind1_max"]) < seeds.ROLE, s
            assert f["copy"] > claims.COPY_LOW, s


def test_the_exceptions_the_page_names_are_what_it_says():
    """换掉前一个 token 头后归纳分数仍过门槛的种子，第一层另一个头的前一个 token 分数也过了门槛；
    Key 那一条的例外，只换 Key 后停在门槛上方不到 0.01 处（“刚好”）。"""
    facts = _survey()
    grew = _grew(facts)
    for s in grew:
        f = facts[s]
        if not claims.CLAIMS["cut_prev_no_induction"](f):
            assert f["prev_other"] > seeds.ROLE, s
        if not claims.CLAIMS["keys_carry_it"](f):
            assert seeds.ROLE < f["swap_k"] < seeds.ROLE + 0.01, s
        if not claims.CLAIMS["cut_prev_partner"](f):
            # 没有“伙伴”，损失却仍比瞎猜低得多
            assert f["prev_other"] < claims.PARTNER_PREV
            assert f["cut_prev"] < claims.CHANCE - claims.PARTNER_GAP


def test_the_ind_at_drop_window_starts_after_the_steepest_drop_begins():
    """“落在那 25 步里，或紧接着的 25 步里”：陡降开始的那个副本本身不算。"""
    f = {"fast_from": 300.0, "fast_to": 325.0}
    at = claims.CLAIMS["ind_at_drop"]
    assert not at({**f, "step_ind": 300.0})
    assert at({**f, "step_ind": 325.0}) and at({**f, "step_ind": 350.0})
    assert not at({**f, "step_ind": 375.0})


def test_what_the_page_says_about_the_seeds_that_grew_no_role_and_the_first_stage():
    """正文：没长出角色的种子里，陡降那一段比所有长出角色的种子的转变都晚的是少数（“多数……早就过去了”）；
    第 EARLY 步的“第一阶段”不成立的种子，是因为能抄位置的损失还没降够（其余两条照样成立）；
    归纳分数领先最多的种子，领先的那段时间里第一层的前一个 token 分数都没过门槛（step_prev 的定义），
    训练结束时另一个头也没过门槛，两个头的分数加起来却超过门槛。"""
    facts = _survey()
    grew = _grew(facts)
    stuck = [s for s in facts if s not in grew]
    latest = max(max(facts[s]["step_prev"], facts[s]["step_ind"]) for s in grew)
    late = [s for s in stuck if facts[s]["fast_from"] >= latest]
    assert 0 < len(late) < len(stuck) / 2, late
    for s in grew:
        f = facts[s]
        if not claims.CLAIMS["first_stage"](f):
            assert f["copy_early"] >= claims.CHANCE - claims.NEAR_CHANCE, s
            assert f["ind_early_max"] < seeds.ROLE and f["first_pass_early"] > 0.5, s
    lead = max(grew, key=lambda s: facts[s]["step_prev"] - facts[s]["step_ind"])
    f = facts[lead]
    assert f["step_prev"] - f["step_ind"] > seeds.SNAPSHOT_EVERY
    assert f["prev_other"] < seeds.ROLE < f["prev"] + f["prev_other"]
