"""批改作业的基准（make bench 的一部分；不是测试）：

- 下限：一个沙箱里启动内核、import torch 和 minigpt，运行一个只有 ``import torch`` 的单元，要多少秒（取 3 次的中位数）；
- 30 份提交（都是 tests/fixtures/submissions/correct.ipynb 的副本）用默认的 --jobs 批改，每份平均多少秒；
- 6 份提交 --jobs 2 与 --jobs 1 的用时之比（2 核的机器上目标 ≤ 0.75），旁边是这台机器此刻能给出的比值：
  两个纯 CPU 的进程同时跑与一个跑两遍的用时之比（CPU 被别人占着时，批改的比值不会比它好）。

每个数旁边是测量前后的 1 分钟平均负载（os.getloadavg）：CPU 是共享的，负载高时数字不能直接比。

用法（仓库根目录）：.venv/bin/python tools/bench_grade.py [--submissions 30]（0：只量下限和比值）
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORRECT = REPO / "tests" / "fixtures" / "submissions" / "correct.ipynb"


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def _spin(n: int = 20_000_000) -> None:
    x = 0
    for i in range(n):
        x += i


def machine_ratio() -> float:
    """两个纯 CPU 的进程同时跑的用时 ÷ 一个进程跑两遍的用时（理想的 2 核是 0.5）。"""
    import multiprocessing

    def run(k: int) -> float:
        procs = [multiprocessing.Process(target=_spin) for _ in range(k)]
        began = time.perf_counter()
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        return time.perf_counter() - began

    return run(2) / (2 * run(1))


def floor_seconds(repeat: int = 3) -> float:
    from minigpt.grading import sandbox

    request = json.dumps({"sources": ["import torch"], "names": ["score"]}).encode()
    times = []
    for _ in range(repeat):
        base = Path(tempfile.mkdtemp(prefix="bench-grade-"))
        began = time.perf_counter()
        outcome = sandbox.run(request, sandbox.Limits(), True, base)
        times.append(time.perf_counter() - began)
        shutil.rmtree(base, ignore_errors=True)
        if outcome.returncode != 0:
            sys.exit(f"沙箱里的 runner 失败：{outcome.stderr[-500:]}")
    return statistics.median(times)


def grade_seconds(n: int, jobs: int, where: Path) -> float:
    folder = where / f"n{n}-j{jobs}"
    folder.mkdir()
    files = []
    for i in range(n):
        files.append(folder / f"{i + 1:03d}.ipynb")
        shutil.copy(CORRECT, files[-1])
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "minigpt.grade", *map(str, files), "--jobs", str(jobs),
                           "--json", str(folder / "report.json")], capture_output=True, text=True)
    spent = time.perf_counter() - began
    if proc.returncode != 0:
        sys.exit(f"批改失败（退出码 {proc.returncode}）：{proc.stderr[-1000:]}")
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    bad = {s["id"]: s.get("problem") or next((f"{k}: {e['status']} {e.get('message', '')[:200]}"
                                               for k, e in s["exercises"].items() if e["status"] != "passed"), "")
           for s in report["submissions"] if s["passed"] != s["total"]}
    if bad:
        sys.exit(f"正确的提交没有得满分（负载 {_load()}）：{bad}")
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=30)
    args = parser.parse_args()
    from minigpt.grading import cli, sandbox

    reason = sandbox.unavailable()
    if reason:
        print(f"[bench_grade] 跳过：沙箱起不来：{reason}")
        return 0
    jobs = cli._cpus()
    print(f"[bench_grade] {os.cpu_count()} 个 CPU（本进程可用 {jobs} 个），负载 {_load()}")
    before = _load()
    floor = floor_seconds()
    print(f"[bench_grade] 下限：一个沙箱启动内核并 import torch：{floor:.1f} 秒（负载 {before}→{_load()}）")
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        if args.submissions:
            before = _load()
            total = grade_seconds(args.submissions, jobs, Path(tmp))
            print(f"[bench_grade] {args.submissions} 份提交，--jobs {jobs}：{total:.1f} 秒，"
                  f"每份 {total / args.submissions:.2f} 秒（下限 ÷ jobs = {floor / jobs:.2f} 秒）"
                  f"（负载 {before}→{_load()}）")
        before = _load()
        one = grade_seconds(6, 1, Path(tmp))
        middle = _load()
        two = grade_seconds(6, 2, Path(tmp))
        after = _load()
        machine = machine_ratio()
        print(f"[bench_grade] 6 份提交：--jobs 1 {one:.1f} 秒（负载 {before}→{middle}），--jobs 2 {two:.1f} 秒"
              f"（负载 {middle}→{after}），比值 {two / one:.2f}；"
              f"这台机器此刻两个纯 CPU 进程的比值 {machine:.2f}（负载 {_load()}）")
    return 0


if __name__ == "__main__":
    sys.exit(main())
