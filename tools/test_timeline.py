"""make test 的时间花在哪里：读 BOOK_TEST_TIMELINE 记下的时间线（tests/support/scheduler.py 的 record），
打印每个工作进程忙了多久、闲了多久（在它的第一个与最后一个测试之间、两个测试之间的空档），每组的时间，
以及最久的测试（含夹具的准备：一个组里第一个要整本书的测试，等的就是构建）。

用法：
    BOOK_TEST_TIMELINE=/tmp/timeline.tsv make test
    python tools/test_timeline.py /tmp/timeline.tsv [--top 25]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.scheduler import group_of  # noqa: E402


def read(path: Path) -> list[tuple[str, str, float, float]]:
    """[(工作进程, 测试, 开始时刻, 结束时刻)]，按开始时刻排序。"""
    started, spans = {}, []
    for line in path.read_text(encoding="utf-8").splitlines():
        stamp, worker, event, nodeid = line.split("\t", 3)
        if event == "start":
            started[(worker, nodeid)] = float(stamp)
        elif (worker, nodeid) in started:
            spans.append((worker, nodeid, started.pop((worker, nodeid)), float(stamp)))
    return sorted(spans, key=lambda s: s[2])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timeline", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    spans = read(args.timeline)
    if not spans:
        raise SystemExit(f"[timeline] {args.timeline} 里没有完整的测试记录")
    first, last = min(s[2] for s in spans), max(s[3] for s in spans)
    print(f"[timeline] {len(spans)} 个测试，第一个开始到最后一个结束 {last - first:.0f} 秒")
    by_worker = defaultdict(list)
    for worker, _, start, end in spans:
        by_worker[worker].append((start, end))
    for worker, items in sorted(by_worker.items()):
        busy = sum(end - start for start, end in items)
        gaps = sum(max(0.0, b[0] - a[1]) for a, b in zip(items, items[1:]))
        tail = last - items[-1][1]
        print(f"  {worker}: 忙 {busy:.0f} 秒，测试之间的空档 {gaps:.0f} 秒，最后一个测试之后闲 {tail:.0f} 秒")
    groups = defaultdict(float)
    for _, nodeid, start, end in spans:
        groups[group_of(nodeid)] += end - start
    print("\n组（秒）：")
    for group, seconds in sorted(groups.items(), key=lambda g: -g[1])[:args.top]:
        print(f"  {seconds:7.1f}  {group}")
    print(f"\n最久的 {args.top} 个测试（秒，含夹具的准备）：")
    for worker, nodeid, start, end in sorted(spans, key=lambda s: s[2] - s[3])[:args.top]:
        print(f"  {end - start:7.1f}  {worker}  +{start - first:5.0f}  {nodeid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
