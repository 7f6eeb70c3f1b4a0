"""同一个配置，多个种子：第 7 节的结论要在每个种子上都量一遍
（见第 7 节「换几个种子」）。

训练是单线程、固定种子的：同样的代码、同样的种子，得到逐位相同的参数。
所以一次训练的结果可以存起来再用：构建本书时，中文版训练过的，英文版直接读。
存放的目录由环境变量 `MINIGPT_TRAINED` 给出（tools/build_book.py 设为
`_build/.trained`）；没有设时每次都重新训练，结果一样，只是慢一些。

存的是 `.npz`：只有数组，读的时候 `allow_pickle=False`，不执行任何 pickle。
文件名里带着训练与测量代码的摘要（`code_key`）：其中任何一行计算变了，
旧文件就不再被读到。
"""

from __future__ import annotations

import ast
import hashlib
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import interventions as I
from . import probes as P
from . import tasks as D
from . import training as T
from .tinygpt import init_model

SEEDS = tuple(range(6))              # 正文训练的种子：0 是逐步讲解的那一个
SNAPSHOT_EVERY = 25                  # 每隔多少步留一个模型副本（相变图的横轴）
STEPS = 800
CURVE_ROWS = 128                     # 相变曲线用测试序列的前几条
TEST_SEED = 1234                     # 测试序列的数据种子（与正文相同）
EARLY = 200                          # 相变之前的一个副本（第一阶段）
REDIRECT_SEED = 99                   # 改道实验里抽 j 的随机数种子
ROLE = 0.5                           # 正文的门槛：分数过了它才给头起角色的名字


# 训练与测量经过的模块（tests/test_heads.py 核对：seeds 导入的 minigpt 模块都在这里）
KEY_MODULES = ("attention.py", "data.py", "layers.py", "tinygpt.py", "tasks.py",
               "probes.py", "interventions.py", "training.py", "seeds.py")


class _Blank(ast.NodeTransformer):
    """把字符串和 f-string 整个换成空串：译文里占位符的次序可以不同。"""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.Constant("") if isinstance(node.value, str) else node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return ast.Constant("")


def code_key(package: Path = Path(__file__).resolve().parent) -> str:
    """训练与测量的代码（KEY_MODULES）的摘要：语法树里的字符串（文档、报错的话）
    换成空串再求 SHA-256，所以只翻译了注释和文字的英文版，与中文版得到同一个摘要；
    画图的代码变了也不影响它。"""
    digest = hashlib.sha256()
    for name in KEY_MODULES:
        tree = _Blank().visit(ast.parse((package / name).read_text(encoding="utf-8")))
        digest.update(name.encode() + b"\0" + ast.dump(tree).encode() + b"\0")
    return digest.hexdigest()[:16]


def _cache_file(name: str) -> Path | None:
    folder = os.environ.get("MINIGPT_TRAINED")
    return Path(folder) / f"{code_key()}-{name}.npz" if folder else None


def _save(run: T.TrainedModel, path: Path) -> None:
    arrays = {"losses": np.array(run.losses, dtype=np.float64),
              "seconds": np.array(run.seconds, dtype=np.float64)}
    for step, model in [(0, run.model), *run.snapshots.items()]:
        for name, value in model.state_dict().items():
            arrays[f"{step}/{name}"] = value.numpy()
    _save_arrays(path, arrays)


def _save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # 先写临时文件再改名：两个进程同时写同一个文件时，读到的总是完整的一份
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    with os.fdopen(fd, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


def _load(path: Path, seed: int, make) -> T.TrainedModel:
    with np.load(path, allow_pickle=False) as data:
        steps = sorted({int(k.split("/")[0]) for k in data.files if "/" in k})
        models = {}
        for step in steps:
            model = make()
            prefix = f"{step}/"
            model.load_state_dict({k[len(prefix):]: torch.from_numpy(data[k].copy())
                                   for k in data.files if k.startswith(prefix)})
            models[step] = model.eval()
        losses = data["losses"].tolist()
        seconds = float(data["seconds"])
    final = models.pop(0)
    vocab = final.out.out_features
    return T.TrainedModel(model=final, losses=losses,
                          chance_loss=float(np.log(vocab)),
                          seed=seed, seconds=seconds, snapshots=models)


# 第 7 节 训练出来的头「换几个种子」
def train_seed(seed: int, n_layers: int = 2, repeat: bool = True) -> T.TrainedModel:
    """正文的配置（`train_repeat` 的默认值，800 步），每 25 步留一个副本；
    repeat=False 是对照组：训练序列从不重复。设了
    MINIGPT_TRAINED 时先找存下的结果。"""
    keep = tuple(range(SNAPSHOT_EVERY, STEPS + 1, SNAPSHOT_EVERY))
    path = _cache_file(f"L{n_layers}-{'rep' if repeat else 'norep'}-seed{seed}")
    if path is not None and path.is_file():
        return _load(path, seed, lambda: init_model(n_layers=n_layers, seed=seed))
    run = T.train_repeat(n_layers=n_layers, seed=seed, steps=STEPS, keep=keep,
                         repeat=repeat)
    if path is not None:
        _save(run, path)
    return run


# 第 7 节 训练出来的头「玩具语法」
def grammar_seed(seed: int) -> T.TrainedModel:
    """玩具语法的一层模型（`train_grammar` 的默认值，400 步）。`study_seed` 每个
    种子都训练一个；设了 MINIGPT_TRAINED 时先找存下的结果，页面不再重训。"""
    path = _cache_file(f"grammar-seed{seed}")
    if path is not None and path.is_file():
        return _load(path, seed, lambda: T.grammar_model(seed=seed))
    run = T.train_grammar(seed=seed)
    if path is not None:
        _save(run, path)
    return run


def test_batch() -> D.RepeatBatch:
    """正文量分数用的 512 条测试序列（数据种子 1234，没参加训练）。"""
    return D.repeat_batch(512, torch.Generator().manual_seed(TEST_SEED))


def curve_batch(test: D.RepeatBatch) -> D.RepeatBatch:
    """相变曲线用的测试序列：test 的前 CURVE_ROWS 条（32 个副本各量一遍，
    用全部 512 条太慢）。"""
    return D.RepeatBatch(test.ids[:CURVE_ROWS], test.starts[:CURVE_ROWS],
                         test.lengths[:CURVE_ROWS])


@dataclass(frozen=True, eq=False)
class SeedStudy:
    """一个种子的全部测量（见第 7 节「换几个种子」）：相变曲线（`phase_curves`）、
    正文各条结论用到的数（`seed_facts`）；训练结果要用时才读（`run`）。"""

    seed: int
    curves: dict[str, list[float]]
    facts: dict[str, float]

    @property
    def run(self) -> T.TrainedModel:
        """这个种子的训练结果（存下的就读，没有就训练：两者逐位相同）。"""
        return train_seed(self.seed)


# 第 7 节 训练出来的头「换几个种子」
def study_seed(seed: int) -> SeedStudy:
    """训练一个种子的两层模型并量好它（设了 MINIGPT_TRAINED 时先找存下的测量）。
    每个种子互不相干：构建时几个种子分给几个进程，各用一个线程。"""
    path = _cache_file(f"study-seed{seed}")
    if path is not None and path.is_file():
        with np.load(path, allow_pickle=False) as data:
            curves = {k[len("curve/"):]: data[k].tolist()
                      for k in data.files if k.startswith("curve/")}
            facts = {k[len("fact/"):]: float(data[k])
                     for k in data.files if k.startswith("fact/")}
        return SeedStudy(seed, curves, facts)
    run = train_seed(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        test = test_batch()
        curves = T.phase_curves(run, curve_batch(test))
        facts = seed_facts(run, test, curves)
    finally:
        torch.set_num_threads(threads)
    if path is not None:
        _save_arrays(path, {
            **{f"curve/{k}": np.array(v, dtype=np.float64)
               for k, v in curves.items()},
            **{f"fact/{k}": np.array(v, dtype=np.float64)
               for k, v in facts.items()}})
    return SeedStudy(seed, curves, facts)


def study_seeds(seeds: tuple[int, ...] = SEEDS) -> dict[int, SeedStudy]:
    """每个种子一份 `SeedStudy`（见第 7 节「换几个种子」）。"""
    return {seed: study_seed(seed) for seed in seeds}


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value


# 第 7 节 训练出来的头「换几个种子」
def seed_facts(run: T.TrainedModel, test: D.RepeatBatch,
               curves: dict[str, list[float]],
               role: float = ROLE) -> dict[str, float]:
    """一个种子上，正文每条结论要用的数（见第 7 节「换几个种子」）。

    “前一个 token 头”是第一层前一个 token 分数最高的那个头，“另一个头”
    是第一层的其余那个；剪头一律换成平均（`without_head(..., mean_over=test)`），
    另记两个第二层头都置零时的损失。头和层都从 0 数（`model.blocks[0]`）。
    """
    model = run.model
    scores = P.head_scores(model, test)
    prev = scores[0]["previous"]
    p = max(range(len(prev)), key=lambda h: prev[h])
    other = 1 - p
    copy_loss, other_loss = P.repeat_losses(model, test)

    def copy_after(m) -> float:
        return P.repeat_losses(m, test)[0]

    mean_prev = I.without_head(model, 0, p, test)
    both_mean = I.without_head(I.without_head(model, 1, 0, test), 1, 1, test)
    both_zero = I.without_head(I.without_head(model, 1, 0), 1, 1)
    steps = curves["step"]
    drops = [a - b for a, b in zip(curves["copy"], curves["copy"][1:])]
    # 第 steps[fast] 步到 steps[fast+1] 步降得最多
    fast = drops.index(max(drops))
    # 改道：在不重复的序列上做，免得 j 碰巧就是该抄的位置
    norep = D.repeat_batch(512, torch.Generator().manual_seed(TEST_SEED),
                           repeat=False)
    before, after = I.redirected_copy(model, norep,
                                      torch.Generator().manual_seed(REDIRECT_SEED))
    pos = P.second_pass_losses(model, test)
    # 前一个 token 头逐行的分数（第 i 行在下标 i - 1）
    by_row = P.previous_token_by_row(model.attention_weights(test.ids[:, :-1])[0])[p]
    # 归纳头要找的位置 t - L + 1 只在 first..late-1 之间：第 late 行起的位置从来不是
    first, late = (D.REPEAT_SEQ_LEN - 2 * D.REPEAT_MAX + 1,
                   D.REPEAT_SEQ_LEN - D.REPEAT_MIN)
    step_prev = T.first_step_above(steps, curves["previous"], role)
    step_ind = T.first_step_above(steps, curves["induction"], role)
    grammar = grammar_seed(run.seed).model
    # 相变之前的第一阶段（第 EARLY 步的副本）：
    # 所有头里最高的归纳分数、第二层分给第一遍 A 的权重
    early = run.snapshots[EARLY]
    early_ind = max(max(layer["induction"]) for layer in P.head_scores(early, test))
    early_first = P.first_pass_weight(early.attention_weights(test.ids[:, :-1])[1],
                                      test).max().item()
    return {
        "prev": prev[p], "prev_other": prev[other], "prev_head": p,
        "ind1_other": scores[0]["induction"][other],
        "ind1_max": max(scores[0]["induction"]),
        "ind2_min": min(scores[1]["induction"]),
        "ind2_max": max(scores[1]["induction"]),
        "prev2_max": max(scores[1]["previous"]),
        "first_pass_other": P.first_pass_weight(
            model.attention_weights(test.ids[:, :-1])[0], test)[other].item(),
        "copy": copy_loss, "other": other_loss,
        "cut_prev": copy_after(mean_prev),
        "cut_prev_ind": max(P.head_scores(mean_prev, test)[1]["induction"]),
        "cut_other": (copy_after(I.without_head(model, 0, other, test))
                      - copy_loss),
        "cut_l2_min": min(copy_after(I.without_head(model, 1, h, test))
                          for h in (0, 1)),
        "cut_l2_both": copy_after(both_mean),
        "cut_l2_both_zero": copy_after(both_zero),
        "swap_k": max(I.mixed_induction(model, mean_prev, test, True)),
        "swap_q": min(I.mixed_induction(model, mean_prev, test, False)),
        "redirect_before": before, "redirect_after": after,
        # 没过门槛记作 nan（存进 .npz 的都是数）
        "step_prev": _or_nan(step_prev), "step_ind": _or_nan(step_ind),
        "fast_from": steps[fast], "fast_to": steps[fast + 1],
        "copy_early": curves["copy"][steps.index(EARLY)], "ind_early_max": early_ind,
        "first_pass_early": early_first,
        "copy_300": curves["copy"][steps.index(300)],
        "copy_400": curves["copy"][steps.index(400)],
        "prev_rows_min": by_row[first - 1:late - 1].min().item(),
        "prev_late_max": by_row[late - 1:].max().item(),
        # 稳定看第一个冠词的头（从 0 数）；没有记作 nan
        "grammar_det_head": _or_nan(P.determiner_head(grammar)),
        "grammar_d2_min": min(a for a, _ in P.grammar_probs(
            grammar, list(D.GRAMMAR_SENTENCES))),
        "pos_first": pos[0], "pos_rest_min": min(pos[1:]),
        "pos_rest_max": max(pos[1:]),
    }

