"""命令行：python -m minigpt.grade 提交.ipynb … （见「教师指南」一页）。"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from . import report, sandbox
from .submission import read_submission
from .results import limits_record, student_id

# 上限在报告里的名字 → 命令行选项、单位
_LIMIT_FLAGS = {"timeout": ("--timeout", 1, " 秒"), "notebook_timeout": ("--notebook-timeout", 1, " 秒"),
                "memory": ("--memory", 2**30, " GiB"), "processes": ("--processes", 1, ""),
                "disk": ("--disk", 2**30, " GiB")}


def limits_change(old: dict, new: dict) -> str:
    """两组上限哪里不同，例如“--timeout 60 秒 → 4 秒”；旧版报告没有记下上限时说“旧报告没有记下上限”。"""
    parts = []
    for key, (flag, unit, word) in _LIMIT_FLAGS.items():
        if key in old and old[key] != new[key]:
            parts.append(f"{flag} {old[key] / unit:g}{word} → {new[key] / unit:g}{word}")
    if old.get("sandboxed", new["sandboxed"]) != new["sandboxed"]:
        parts.append("沙箱里 → 沙箱外" if old["sandboxed"] else "沙箱外 → 沙箱里")
    return "，".join(parts) or "旧报告没有记下上限"


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """终端上的一行进度（完成几份/共几份、用时、预计还要多久）；输出不是终端时什么也不打印。"""

    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.stream, self.start = total, stream, time.monotonic()
        self.on = total > 0 and stream.isatty()

    def update(self, done: int) -> None:
        if not self.on:
            return
        spent = time.monotonic() - self.start
        left = spent / done * (self.total - done) if done else 0
        self.stream.write(f"\r批改中：{done}/{self.total} 份，用时 {_clock(spent)}，"
                          f"预计还要 {_clock(left)}  ")
        self.stream.flush()

    def close(self) -> None:
        if self.on:
            self.stream.write("\n")
            self.stream.flush()


def _gib(text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"应该是一个数（单位 GiB），收到 {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"应该是正数（单位 GiB），收到 {text!r}")
    return int(value * 2**30)


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"应该是一个数，收到 {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"必须是正数，收到 {text!r}")
        return value
    return parse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m minigpt.grade",
        description="批改《Attention 机制与 Transformer Block》的作业笔记本：每份在自己的沙箱里"
                    "从头运行，逐题判分。")
    p.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION.ipynb",
                   help="学生交回的笔记本；文件名去掉 .ipynb 就是 CSV 里的学号")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="另把结果写成 JSON 文件（每批改完一份就更新一次）")
    p.add_argument("--csv", type=Path, metavar="FILE",
                   help="另写一份给成绩册导入的 CSV（UTF-8 带 BOM）：学号、各小题得分、总分、状态")
    p.add_argument("--resume", action="store_true",
                   help="接着 --json 报告批改：内容没变的提交沿用已有结果，只批改其余的")
    p.add_argument("--jobs", type=_positive(int), default=_cpus(), metavar="N",
                   help=f"同时批改几份（默认 {_cpus()}，本进程能用的 CPU 数）")
    p.add_argument("--timeout", type=_positive(float), default=30, metavar="SECONDS",
                   help="每个代码单元最多运行的秒数（默认 30），超时即结束内核")
    p.add_argument("--notebook-timeout", type=_positive(float), default=300, metavar="SECONDS",
                   help="整份笔记本（学生的单元合计）最多运行的秒数（默认 300）")
    p.add_argument("--memory", type=_gib, default=sandbox.Limits.memory, metavar="GiB",
                   help="沙箱里每个进程的内存上限（默认 2）")
    p.add_argument("--processes", type=_positive(int), default=sandbox.Limits.processes,
                   metavar="N", help="沙箱里的进程和线程数上限（默认 256）")
    p.add_argument("--disk", type=_gib, default=sandbox.Limits.disk, metavar="GiB",
                   help="沙箱里单个文件和整个临时文件夹的大小上限（默认 1）")
    p.add_argument("--no-sandbox", action="store_true",
                   help="不用沙箱，直接以你的身份运行学生的代码（危险：只在没有 bubblewrap、"
                        "又信得过这些笔记本时用）")
    return p


def _report_paths_problem(args) -> str | None:
    """--json、--csv 要写得进去（事先查看），而且不能写到一份提交上。文件名以 - 开头的提交会被当成选项：学生把笔记本叫做
    “--csv=同学.ipynb”，在提交的文件夹里运行 ``python -m minigpt.grade *.ipynb`` 时，它就成了
    --csv 同学.ipynb，成绩表会写到同学的笔记本上。所以以 .ipynb 结尾、或者就是某份提交的报告文件一律拒绝。"""
    def same(a: Path, b: Path) -> bool:
        try:
            return a.exists() and b.exists() and os.path.samefile(a, b)
        except OSError:
            return False

    def is_dir(p: Path) -> bool:
        try:
            return p.is_dir()
        except OSError:   # 名字太长之类
            return False

    for flag, target in (("--json", args.json), ("--csv", args.csv)):
        if target is None:
            continue
        if target.name.lower().endswith(".ipynb") or any(same(target, s) for s in args.submissions):
            return (f"批改程序拒绝运行：{flag} 的文件 {report.visible(str(target))} 是一份笔记本"
                    "（以 .ipynb 结尾，或者就是要批改的提交），写报告会覆盖学生交的文件。"
                    "如果你没有写这个选项，那是某份提交的文件名以 - 开头、被当成了选项："
                    "请在提交前面加 --（python -m minigpt.grade --json 报告.json -- *.ipynb），"
                    "或者写成 ./*.ipynb")
    for flag, target in (("--json", args.json), ("--csv", args.csv)):
        # 先看报告写得进去：不然要等正在批改的几份（每份可能好几分钟）跑完才发现
        if target is not None and (is_dir(target) or not is_dir(target.parent)):
            where = "是一个文件夹" if is_dir(target) else f"所在的文件夹 {report.visible(str(target.parent))} 不存在"
            return f"批改程序拒绝运行：{flag} 的文件 {report.visible(str(target))} {where}，报告写不进去"
    if args.json is not None and args.csv is not None and (
            args.json.resolve() == args.csv.resolve() or same(args.json, args.csv)):
        return "批改程序拒绝运行：--json 和 --csv 是同一个文件，一个会覆盖另一个"
    return None


NO_SANDBOX_WARNING = ("警告：--no-sandbox，学生的代码将以你的身份运行，能读写你能读写的文件、"
                      "连网、留下后台进程；剩下的保护只有清空的环境变量，每个进程的内存、CPU 时间"
                      "和文件大小上限，以及 --timeout、--notebook-timeout 两个时限。")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.resume and not args.json:
        parser().error("--resume 要和 --json 报告.json 一起用：报告里记着哪些提交已经批改过")
    refused = _report_paths_problem(args)
    if refused:
        print(refused, file=sys.stderr)
        return 2
    same = {}
    for path in args.submissions:
        same.setdefault(student_id(str(path)), []).append(str(path))
    for sid, paths in same.items():
        if len(paths) > 1:   # 比如每个学生一个文件夹、笔记本都还叫 homework_student.ipynb
            names = "、".join(report.visible(p) for p in paths[:5])
            print(f"提示：{len(paths)} 份提交的学号（文件名去掉 .ipynb）都是 {report.visible(sid)}："
                  f"{names}{' …' if len(paths) > 5 else ''}。"
                  "表和 CSV 里分不清它们，成绩册按学号导入时只会留下一行：请把文件改名为各自的学号再批改",
                  file=sys.stderr)
    try:
        import ipykernel  # noqa: F401
        import nbclient  # noqa: F401
    except ImportError as err:
        print("批改需要 nbclient 和 ipykernel：pip install nbclient ipykernel（缺少 "
              f"{err.name}）", file=sys.stderr)
        return 2
    sandboxed = not args.no_sandbox
    if sandboxed:
        reason = sandbox.unavailable()
        if reason:
            print(f"批改程序拒绝运行提交：{reason}。\n学生的代码必须关在沙箱里运行；"
                  "如果你清楚风险、一定要在沙箱外运行，加 --no-sandbox。", file=sys.stderr)
            return 2
    else:
        print(NO_SANDBOX_WARNING, file=sys.stderr)
    limits, notes = sandbox.within_hard_limits(sandbox.Limits(
        timeout=args.timeout, notebook_timeout=args.notebook_timeout,
        memory=args.memory, processes=args.processes, disk=args.disk))
    for note in notes:
        print(note, file=sys.stderr)
    options = {"timeout_seconds": args.timeout, "notebook_timeout_seconds": args.notebook_timeout,
               "memory_bytes": limits.memory, "processes": limits.processes,
               "disk_bytes": limits.disk, "sandboxed": sandboxed}
    previous = {}
    if args.resume:
        try:
            previous = report.read_json(args.json)
        except ValueError as err:
            print(f"无法接着批改：{err}", file=sys.stderr)
            return 2

    results: list = [None] * len(args.submissions)
    todo = []
    now = limits_record(limits, sandboxed)
    other_limits = []
    for i, path in enumerate(args.submissions):
        if previous:
            _, digest, _ = read_submission(path)
            old = previous.get((path.name, digest)) if digest else None
            if old is not None and old.limits not in (None, now):
                other_limits.append(old)   # 在别的上限下批改的：时限、内存不同，结果可能不同
            elif old is not None:
                old.path = str(path)
                results[i] = old
                continue
        todo.append(i)
    skipped = len(args.submissions) - len(todo)
    if args.resume:
        print(f"接着批改：{skipped} 份沿用 {args.json} 里的结果，{len(todo)} 份要批改",
              file=sys.stderr)
        if other_limits:
            print(f"其中 {len(other_limits)} 份的旧结果是在另一组上限下批改的"
                  f"（{limits_change(other_limits[0].limits, now)}），重新批改",
                  file=sys.stderr)

    def save() -> bool:
        if not args.json:
            return True
        try:
            report.write_json(args.json, [r for r in results if r is not None], options)
        except OSError as err:
            print(f"无法写入 {args.json}：{err.strerror or err}", file=sys.stderr)
            return False
        return True

    # 到这里才导入判分（连带 torch 和检查器）：--help、选项写错、拒绝运行都用不到它，不必先花一两秒
    from .environment import SetupCheck
    from .judge import INTERNAL_NOTE, grade_submission, internal_error

    setup = SetupCheck(limits, sandboxed)   # 批改环境的问题（CUDA 版的 PyTorch、内存上限太小）不算在学生头上

    def one(i: int):
        try:
            return setup.blame(grade_submission(args.submissions[i], limits, sandboxed=sandboxed))
        except Exception as err:   # 一份提交让批改程序出了错：只有这一份无法批改，接着批下一份
            return internal_error(args.submissions[i], err)

    progress = Progress(len(todo))
    if skipped and not save():
        return 2
    pool = ThreadPoolExecutor(max_workers=args.jobs)
    try:
        pending = {pool.submit(one, i): i for i in todo}
        done = 0
        while pending:
            finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in finished:
                results[pending.pop(fut)] = fut.result()
                done += 1
                progress.update(done)
                if not save():
                    raise SystemExit(2)
    except KeyboardInterrupt:
        for fut in pending:
            fut.cancel()
        sandbox.stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
        progress.close()
        kept = sum(r is not None for r in results)
        where = f"，已写入 {args.json}；加 --resume 再运行同一条命令，接着批改其余的" if args.json else ""
        print(f"批改被中断：完成了 {kept}/{len(results)} 份{where}", file=sys.stderr)
        return 130
    pool.shutdown()
    progress.close()
    print(report.format_table(results, args.timeout, args.notebook_timeout))
    if args.csv:
        try:
            report.write_atomic(args.csv, report.to_csv(results))
        except OSError as err:
            print(f"无法写入 {args.csv}：{err.strerror or err}", file=sys.stderr)
            return 2
    if setup.problem is not None:
        print(setup.problem, file=sys.stderr)
        return 2
    broken = [r for r in results if INTERNAL_NOTE in r.notes]
    if broken:
        print(f"批改程序的问题：{len(broken)} 份提交批改时批改程序内部出错，这些提交留空"
              f"（{broken[0].problem}）", file=sys.stderr)
        return 2
    failed = [r for r in results if "kernel_failed" in r.notes]
    if failed:
        print(f"批改程序的问题：{len(failed)} 份提交的内核在学生代码运行之前就启动失败"
              f"（{failed[0].problem}）", file=sys.stderr)
        return 2
    return 0
