"""并行预执行：在 Sphinx 之前，用几个工作进程把执行缓存里缺的页面执行好。

Jupyter Book 1.x 一页一页地执行笔记本。这里开 N 个工作进程（N = 本进程可用的 CPU 数），每个工作进程
依次领页面、**每页启动一个全新的内核**执行（页面之间互不影响，与 myst-nb 的执行方式相同），把执行好的
笔记本写到一个临时文件；主进程读回来写进执行缓存（只有主进程写缓存：SQLite 不怕并发写坏）。
Sphinx 随后直接取用缓存。

- **最长的页面先跑**：上次构建记下的每页秒数在 `_build/.page-seconds.json`；没有记录的页面按代码量估计。
  两个工作进程不会在最后只剩一页长页面时一个闲着、一个在跑。
- **工作进程在自己的会话里**（children.popen）：Ctrl-C 只打断构建脚本，由它统一结束工作进程和内核，
  工作进程不会因为用户的信号“失败”，页面也就不会被误当成出错、交给 Sphinx 重跑。
- 工作进程意外退出（不是用户打断的）时，它手上的页面交给 Sphinx 重新执行、照常报错，剩下的页面换一个
  新工作进程接着跑。
- 每页记下“内核启动”和“执行单元”各用了几秒（`timings`），`make bench` 用它给出冷构建的分解。
- **页面之前的任务**（`_config.yml` 的 `pre_tasks`）：一页要用的几次互不相干的训练，在页面之前作为单独的任务
  分给各个工作进程（每个任务一个线程），结果由任务自己存下（第 7 节：`minigpt.seeds`，存在 `_build/.trained`）；
  那一页等它的任务都结束才派出，另一个进程这时接着跑别的页面。任务失败只说一句：页面会自己再算一遍，结果相同。

工作进程的协议：标准输入每行一个 JSON 任务 {"page", "timeout", "out"}（执行页面）或 {"call", "args"}（调用
一个函数，见 `run_call`），标准输出每行一个 JSON 结果 {"page", "ok", "seconds", "kernel_seconds"}；标准输入关闭时退出。
"""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import children  # noqa: E402
import nb_internals  # noqa: E402

HISTORY = ".page-seconds.json"  # _build/ 下：上次每页执行的秒数（只用来排先后）
# 全新的检出（CI、make clean 之后）没有上次的记录：用 make bench 量出的每页秒数排先后（只影响快慢，不影响输出）
HINTS = Path(__file__).with_name("page_seconds.json")


def cpu_workers() -> int:
    """预执行用几个进程：本进程能用的 CPU 数（容器或 taskset 限制过的话按限制算）。"""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # 没有 sched_getaffinity 的平台
        return max(1, os.cpu_count() or 1)


def estimate_seconds(page: Path, history: dict[str, float], hints: dict[str, float] | None = None) -> float:
    """这一页大约要执行几秒（只用来排先后）：有上次构建的记录用记录，其次用 HINTS 里 make bench 量的秒数，
    都没有时按代码单元的字符数估计。history 以页面的绝对路径为键，hints 以 “目录/文件名” 为键。"""
    if page.as_posix() in history:
        return history[page.as_posix()]
    short = "/".join(page.parts[-2:])
    if hints and short in hints:
        return hints[short]
    code = re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S)
    return 2.0 + sum(len(c) for c in code) / 400


@dataclass
class PageTiming:
    page: str
    seconds: float  # 派出任务到拿回结果
    kernel_seconds: float  # 其中内核启动（到内核就绪）
    ok: bool

    @property
    def cell_seconds(self) -> float:
        return max(0.0, self.seconds - self.kernel_seconds)


@dataclass(frozen=True)
class Task:
    """页面之前要做的一件事：调用 call（“模块.函数”）并传入 args；before 是要等它的页面（一个或几个）。"""

    call: str
    args: tuple
    before: tuple[Path, ...]

    @property
    def name(self) -> str:
        return f"{self.call}{self.args}"


def read_tasks(config: dict, root: Path) -> list[Task]:
    """_config.yml 的 pre_tasks：{页面: [[模块.函数, 参数...], ...]}。几页列出同一个任务时，它只做一次，
    这几页都等它（第 7 节和教师指南都读种子 0–5 的训练结果）；先后按第一次列出的位置。"""
    pages: dict[tuple, list[Path]] = {}
    for page, items in (config.get("pre_tasks") or {}).items():
        for item in items:
            pages.setdefault((str(item[0]), tuple(item[1:])), []).append((root / page).resolve())
    return [Task(call, args, tuple(before)) for (call, args), before in pages.items()]


def run_call(call: str, args: list) -> None:
    """在工作进程里调用一个任务：一个线程（几个任务同时跑在几个 CPU 上，互不抢线程）。"""
    import importlib

    import torch

    module, _, name = call.rpartition(".")
    torch.set_num_threads(1)
    getattr(importlib.import_module(module), name)(*args)


@dataclass
class _Worker:
    proc: object
    page: Path | Task | None = None
    out: Path | None = None
    started: float = 0.0
    buffer: bytes = field(default=b"")
    log: Path | None = None


class Pool:
    """N 个预执行工作进程；用完（或被打断）时由 close() / children.stop_all() 结束。"""

    def __init__(self, size: int, env: dict[str, str], logs: Path, preload: list[str] = ()):
        self.env = env
        self.preload = list(preload)  # 母体另外预先 import 的模块（zygote.preload_for）
        self.logs = logs  # 每个工作进程（和它的内核）的 stderr 写到这里；意外退出时打印末尾
        self.workers: list[_Worker] = []
        self.selector = selectors.DefaultSelector()
        for _ in range(size):
            self._spawn()

    def _spawn(self) -> _Worker:
        log = self.logs / f"worker-{len(list(self.logs.glob('worker-*.log')))}.log"
        with open(log, "wb") as stderr:
            proc = children.popen([sys.executable, str(Path(__file__).resolve()), "--worker", *self.preload],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                  env=self.env)
        worker = _Worker(proc, log=log)
        os.set_blocking(proc.stdout.fileno(), False)
        self.selector.register(proc.stdout, selectors.EVENT_READ, worker)
        self.workers.append(worker)
        return worker

    def _retire(self, worker: _Worker) -> None:
        self.selector.unregister(worker.proc.stdout)
        self.workers.remove(worker)
        worker.proc.stdin.close()
        worker.proc.wait()

    def known(self) -> list:
        return [w.proc for w in self.workers]

    def close(self) -> None:
        for worker in list(self.workers):
            self._retire(worker)
        self.selector.close()

    def run(self, pages: list[Path | Task], timeout: int, scratch: Path, on_done,
            before_first_page=lambda: None) -> list[PageTiming]:
        """执行 pages（已排好先后；Task 是页面之前的任务），每完成一页调用 on_done(page, 输出文件或 None)。
        一页要等它的任务都结束（不论成败）才派出。派出第一页之前调用 before_first_page()
        （工作进程此时已在启动、预先 import torch）。"""
        queue = list(pages)
        timings: list[PageTiming] = []

        def ready(item: Path | Task) -> bool:
            pending = queue + [w.page for w in self.workers]
            return isinstance(item, Task) or not any(isinstance(t, Task) and item in t.before for t in pending)

        def dispatch(worker: _Worker) -> None:
            item = next((i for i in queue if ready(i)), None)
            if item is None:
                return
            queue.remove(item)
            worker.page, worker.started = item, time.perf_counter()
            if isinstance(item, Task):
                worker.out = None
                job = {"call": item.call, "args": list(item.args)}
            else:
                worker.out = scratch / f"{len(queue)}-{item.stem}.ipynb"
                job = {"page": str(item), "timeout": timeout, "out": str(worker.out)}
            worker.proc.stdin.write((json.dumps(job) + "\n").encode())
            worker.proc.stdin.flush()

        def finished(worker: _Worker, ok: bool, result: dict | None) -> None:
            item, worker.page = worker.page, None
            if isinstance(item, Task):
                if not ok:
                    print(f"[build_book] 预执行任务失败：{item.name}（页面会自己再算一遍）", flush=True)
                timings.append(PageTiming(item.name, time.perf_counter() - worker.started, 0.0, ok))
                return
            if result is None:
                on_done(item, None)
                return
            timings.append(PageTiming(str(item), time.perf_counter() - worker.started,
                                      result["kernel_seconds"], ok))
            if not ok:
                print(f"[build_book] 预执行失败：{item}（交给 Sphinx 重新执行并报告）", flush=True)
            on_done(item, worker.out if ok else None, result["seconds"])

        before_first_page()
        for worker in list(self.workers):
            dispatch(worker)
        while any(w.page is not None for w in self.workers):
            for key, _ in self.selector.select(timeout=1.0):
                worker = key.data
                chunk = os.read(worker.proc.stdout.fileno(), 65536)
                if not chunk:  # 工作进程意外退出（用户的信号不会走到这里：那时主进程已经在收尾）
                    page, code = worker.page, worker.proc.wait()
                    self._retire(worker)
                    if page is not None:
                        tail = worker.log.read_text(encoding="utf-8", errors="replace")[-2000:]
                        print(f"[build_book] 预执行进程意外退出（退出码 {code}）：{getattr(page, 'name', page)}"
                              f"（交给 Sphinx 重新执行并报告）。它的 stderr 末尾：\n{tail}", flush=True)
                        finished(worker, False, None)
                    if queue or any(w.page is not None for w in self.workers):
                        dispatch(self._spawn())
                    continue
                worker.buffer += chunk
                while b"\n" in worker.buffer:
                    line, worker.buffer = worker.buffer.split(b"\n", 1)
                    result = json.loads(line)
                    finished(worker, result["ok"], result)
                    for idle in [w for w in self.workers if w.page is None]:  # 任务结束可能放出了等着的页面
                        dispatch(idle)
        return timings


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # 没有或坏了：只影响先后顺序
        return {}


def pre_execute(pages: list[Path], cache_dir: Path, timeout: int, env: dict[str, str],
                workers: int | None = None, history_file: Path | None = None,
                before_first_page=lambda: None, tasks: list[Task] = ()) -> list[PageTiming]:
    """把执行缓存里还没有的页面并行执行好并存入缓存；返回每页的计时（没有并行执行时为空）。
    before_first_page：第一页开始执行之前要等的事（构建脚本的字体缓存）。
    tasks：页面之前的任务；只做要执行的页面的那些，排在所有页面之前。"""
    nbi = nb_internals.load()
    workers = workers or cpu_workers()
    cache = nbi.open_cache(cache_dir)
    history = _read_json(history_file) if history_file else {}
    hints = _read_json(HINTS)
    todo, code = [], []
    for page in pages:
        nb = nbi.read_notebook(page)
        if nb is None or nbi.is_cached(cache, nb):
            continue
        if any(c.cell_type == "code" for c in nb.cells):
            todo.append(page)
            code += [c.source for c in nb.cells if c.cell_type == "code"]
        else:  # 没有代码单元的笔记本，执行前后完全一样：直接入缓存，省掉一次内核启动
            nbi.store(cache, nb, str(page))
    if len(todo) < 2 or workers < 2:  # 只有一页要跑、或只有一个 CPU 时并行没有好处，交给 Sphinx
        return []
    todo.sort(key=lambda p: estimate_seconds(p, history, hints), reverse=True)
    before = [t for t in tasks if any(page in todo for page in t.before)]
    workers = min(workers, len(todo) + len(before))
    extra = f"，另有 {len(before)} 个任务排在要它们的页面之前" if before else ""
    print(f"[build_book] 并行预执行 {len(todo)} 页（{workers} 个进程，最长的先跑{extra}）…", flush=True)
    todo = before + todo

    def on_done(page: Path, out: Path | None, seconds: float | None = None) -> None:
        if out is None:
            return
        import nbformat

        nbi.store(cache, nbformat.read(out, as_version=4), str(page), seconds)

    with tempfile.TemporaryDirectory(prefix="pre-execute-", dir=cache_dir.parent) as scratch:
        import zygote

        pool = Pool(workers, env, Path(scratch), zygote.preload_for(code))
        try:
            timings = pool.run(todo, timeout, Path(scratch), on_done, before_first_page)
        except BaseException:  # 被打断（或出错）：先结束工作进程和内核，再删它们写文件的临时目录
            children.stop_all(pool.known())
            raise
        pool.close()
    if history_file:
        history.update({t.page: round(t.seconds, 2) for t in timings if t.page.endswith(".md")})
        history_file.write_text(json.dumps(history, ensure_ascii=False, indent=0, sort_keys=True), encoding="utf-8")
    return timings


def worker_main(preload: list[str]) -> int:
    """工作进程：按行读任务，执行页面，把笔记本写到任务给的文件，按行回报结果。preload 交给母体（见 tools/zygote.py）。"""
    import nbformat

    nbi = nb_internals.load()
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # 库往标准输出打印的东西不混进协议
    manager = None
    if os.environ.get("BOOK_KERNEL_PRELOAD", "1") != "0":  # 见 tools/zygote.py；设为 0 则每页照常启动内核
        import zygote

        zygote.ACTIVE = zygote.Zygote(preload)  # 与第一页的读取同时 import torch
        manager = zygote.kernel_manager_class()
    for line in sys.stdin:
        job = json.loads(line)
        if "call" in job:
            start = time.perf_counter()
            try:
                run_call(job["call"], job["args"])
                ok = True
            except Exception:  # noqa: BLE001  任务失败：说一句（stderr 在工作进程的日志里），页面自己再算
                import traceback

                traceback.print_exc()
                ok = False
            protocol.write(json.dumps({"page": job["call"], "ok": ok, "seconds": time.perf_counter() - start,
                                       "kernel_seconds": 0.0}) + "\n")
            continue
        page = Path(job["page"])
        start = time.perf_counter()
        ready = []
        nb = nbi.read_notebook(page)
        try:
            ok, seconds = nbi.execute(nb, page.parent, job["timeout"],
                                      on_kernel_ready=lambda: ready.append(time.perf_counter()),
                                      kernel_manager_class=manager)
        except Exception:  # noqa: BLE001  内核死掉等：这一页交给 Sphinx 重新执行并报告
            ok, seconds = False, time.perf_counter() - start
        if ok:
            tmp = Path(job["out"] + ".tmp")
            nbformat.write(nb, tmp)
            tmp.replace(job["out"])
        kernel = (ready[0] - start) if ready else 0.0
        protocol.write(json.dumps({"page": str(page), "ok": ok, "seconds": seconds,
                                   "kernel_seconds": kernel}) + "\n")
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    sys.exit(worker_main(sys.argv[2:]))
