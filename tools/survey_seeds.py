"""维护者用：重新生成第 7 节的种子普查 book/data/s7_seed_survey.json（见 src/minigpt/survey.py）。

    MINIGPT_TRAINED=_build/.trained python tools/survey_seeds.py [--jobs 2]

用正文的配置（`seeds.study_seed`）训练种子 0–39 并量好；设了 MINIGPT_TRAINED 时先读存下的
模型和测量（构建书时训练过的种子不再重训）。每个种子一个线程，--jobs 个进程并行。
训练或测量的代码一变（`seeds.code_key()` 变了），就要重跑一次。
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from minigpt import survey as S  # noqa: E402


def one(seed: int) -> dict:
    import torch

    torch.set_num_threads(1)
    return S.survey((seed,))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="并行的进程数（默认 1）")
    parser.add_argument("--out", type=Path, default=REPO / "book" / S.SURVEY_FILE)
    args = parser.parse_args()
    with ProcessPoolExecutor(args.jobs) as pool:
        parts = list(pool.map(one, S.SURVEY_SEEDS))
    keys = {part["code_key"] for part in parts}
    if len(keys) != 1:
        sys.exit(f"运行途中训练代码变了（摘要 {sorted(keys)}）：请重跑")
    data = {"code_key": keys.pop(),
            "seeds": {k: v for part in parts for k, v in part["seeds"].items()}}
    S.write_survey(data, args.out)
    print(f"写好了 {args.out}（{len(data['seeds'])} 个种子，代码摘要 {data['code_key']}）")


if __name__ == "__main__":
    main()
