"""第 7 节的种子普查：同一个配置（`seeds.study_seed`）训练种子 0–39，
量出的数存成一个小文件（见第 7 节「换几个种子」）。

正文逐个展示的种子（0–5，练习 1 的 6、7）构建时训练；再多训练几十个
太慢，所以普查由维护者用 `python tools/survey_seeds.py` 跑一次，
结果写进 `book/data/s7_seed_survey.json`，页面只读这个文件。
文件里记着训练代码的摘要（`seeds.code_key()`）：训练或测量的代码一变，
tests/test_seed_survey.py 就失败，提示重跑上面的命令。
"""

from __future__ import annotations

import json
import math
from pathlib import Path

SURVEY_SEEDS = tuple(range(40))
# 相对 book/（页面执行时的当前目录）
SURVEY_FILE = Path("data") / "s7_seed_survey.json"
RERUN = "python tools/survey_seeds.py"


def survey(seeds: tuple[int, ...] = SURVEY_SEEDS) -> dict:
    """训练（或从 MINIGPT_TRAINED 读）每个种子，返回要写进文件的内容：
    代码摘要和每个种子的 `seed_facts`（没过门槛记作 None，JSON 里是 null）。"""
    from .seeds import code_key, study_seed

    return {"code_key": code_key(),
            "seeds": {str(seed): {k: (None if math.isnan(v) else v)
                                  for k, v in study_seed(seed).facts.items()}
                      for seed in seeds}}


def write_survey(data: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, sort_keys=True)
    path.write_text(text + "\n", encoding="utf-8")


def read_survey(path: Path = SURVEY_FILE
                ) -> tuple[str, dict[int, dict[str, float]]]:
    """读普查文件：(代码摘要, {种子: seed_facts})，null 读回 nan。"""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"找不到种子普查文件 {path}：用 {RERUN} 生成") from None
    by_seed = sorted(data["seeds"].items(), key=lambda item: int(item[0]))
    facts = {int(seed): {k: (math.nan if v is None else float(v))
                         for k, v in f.items()}
             for seed, f in by_seed}
    return data["code_key"], facts
