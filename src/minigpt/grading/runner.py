"""在沙箱里运行一份笔记本（见「教师指南」）：由批改程序在 bubblewrap 里启动，不直接给人用。

    python -m minigpt.grading.runner --timeout 秒 --notebook-timeout 秒 … < 代码单元.json

- 从标准输入读代码单元（批改程序已经读过、核对过笔记本），在一个新内核里逐个运行；
  一个单元出错，照样运行后面的单元；单元超时或内核崩溃，就换新内核，跳过它重跑前面的单元，再接着往下。
- 先在自己的进程上设好资源上限（内存、进程数、文件大小、CPU 时间），内核和学生启动的一切都继承它们；
  以 root 身份启动时（教师以 root 运行批改），先把身份换成一个普通的用户号。
- 每个学生单元之后，一个小探针记下答案变量有没有变（``Snapshots``）；
- 运行结束，探针把答案变量写成 JSON（minigpt/answer_format.py）；本程序结束内核和学生留下的所有进程，
  再把“哪个单元出了什么问题”和答案原样写到标准输出（一行 JSON）。
  批改程序在沙箱外读它（有大小上限）、核对它，自己判分。沙箱外没有一处是沙箱里能写的。

运行用的笔记本只含代码单元，开头的预热单元和末尾的探针也在其中，各占自己的序号：
学生的第 n 个代码单元永远是第 n 个，哪怕笔记本第一个单元就是代码。
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import resource
import signal
import sys
import time
from pathlib import Path

from ..answer_format import (KEY_MARKER, AnswerFileError, new_nonce, parse_json,
                             probe_request, signed_answers)

MAX_RESTARTS = 3  # 一份笔记本最多换几次内核（超时、崩溃），之后剩下的单元不再运行
# 预热单元：学生的代码运行之前导入好 torch 和本包，并装好探针（answer_format.install_kernel_probe），
# 它抽的密钥打印在这个单元的输出里，只有 runner 读得到
WARM_UP = ("import torch, minigpt.homework, minigpt.data, minigpt.attention, minigpt.answer_format\n"
           f"print({KEY_MARKER!r} + minigpt.answer_format.install_kernel_probe())")
PROBE_TIMEOUT = 60
STEP_PROBE_TIMEOUT = 10      # 每个学生单元之后的小探针（记下答案变量有没有变）最多这么多秒
STEP_PROBE_BUDGET = 30       # 小探针合计最多这么多秒，之后不再探（不影响最后的探针和判分）
MAX_SNAPSHOT_BYTES = 400_000  # 各单元之后答案变化的记录合计最多这么多字节
STARTUP_TIMEOUT = 120

# 上限被碰到时，学生代码里会出现的异常：(异常类型, 说明里的字样) → 哪个上限
_LIMIT_SIGNS = [
    ("MemoryError", "", "memory"),
    ("RuntimeError", "can't allocate memory", "memory"),
    ("OSError", "Cannot allocate memory", "memory"),
    ("BlockingIOError", "Resource temporarily unavailable", "processes"),
    ("OSError", "Resource temporarily unavailable", "processes"),
    ("RuntimeError", "can't start new thread", "processes"),
    ("OSError", "File too large", "disk"),
    ("OSError", "No space left on device", "disk"),
]
LIMIT_TEXT = {"memory": "超出内存上限", "processes": "超出进程数上限",
              "disk": "超出文件大小或磁盘上限", "notebook_timeout": "整份笔记本超过时限",
              "files": "超出文件数上限"}

# 私有 /tmp 里最多这么多个文件和文件夹。tmpfs 的 --size 只管字节：空文件不占字节，却各占约 1 KB 内核内存
# （不属于任何进程，内存上限管不着）；不加限制，一份提交几十秒就能建出几百万个，占住宿主几 GB 内存。
# bwrap 给不了 tmpfs 的 nr_inodes，所以 runner 自己盯着：超过就结束沙箱里的其余进程、清空 /tmp，像内核崩溃那样换新内核。
MAX_FILES = 20_000
WATCH_SECONDS = 0.05


def which_limit(ename: str, evalue: str) -> str | None:
    for name, words, limit in _LIMIT_SIGNS:
        if ename == name and words in evalue:
            return limit
    return None


def _set_limit(which: int, value: int) -> None:
    """软、硬上限都设成 value；继承来的硬上限更低时用它（普通用户只能调低硬上限，调高会出错）。"""
    hard = resource.getrlimit(which)[1]
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def apply_limits(memory: int, processes: int | None, file_size: int, cpu: int) -> None:
    """资源上限：每个进程的地址空间、CPU 秒数、单个文件大小；进程数按用户号计（沙箱里才设）。"""
    _set_limit(resource.RLIMIT_AS, memory)
    _set_limit(resource.RLIMIT_FSIZE, file_size)
    _set_limit(resource.RLIMIT_CPU, cpu)
    _set_limit(resource.RLIMIT_CORE, 0)
    if processes is not None:
        _set_limit(resource.RLIMIT_NPROC, processes)


def _not_dumpable() -> None:
    """PR_SET_DUMPABLE 0：学生的进程（同一个用户号）打不开 /proc/<本进程>/fd，也 ptrace 不了本进程，
    所以伪造不了本进程交回的结果。"""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def drop_root(uid: int) -> None:
    """以 root 进了沙箱：把私有的 /tmp 交给普通用户 uid，再换成它（能力随之全部失去）。"""
    os.chown("/tmp", uid, uid)
    os.chmod("/tmp", 0o700)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


# 单元换掉内置函数：builtins.len = …、setattr(builtins, …)、__builtins__ 之类
_BUILTINS_CHANGED = re.compile(r"\bbuiltins\.\w+[ \t]*=(?!=)|setattr\([ \t]*(?:builtins|__builtins__)\b|"
                               r"__builtins__[ \t]*(?:\.\w+|\[[^\]]*\])[ \t]*=(?!=)")


def _problem(cell: int, kind: str, exception: str | None, message: str) -> dict:
    return {"cell": cell, "kind": kind, "exception": exception, "message": message}


def _error_of(cell) -> tuple[str, str] | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return str(out.get("ename", "Error")), str(out.get("evalue", ""))
    return None


def _kernel_specs():
    """内核规格固定为“本解释器 + ipykernel”：不查找教师机器上的内核规格。"""
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

    class Fixed(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f",
                                    "{connection_file}"],
                              display_name="Python 3", language="python")

    return Fixed()


class KernelStartError(Exception):
    pass


class FileWatch:
    """每 WATCH_SECONDS 秒看一次私有 /tmp 用了多少个 inode；超过 MAX_FILES 就结束除本进程以外的所有进程
    （内核随之退出，nbclient 报 DeadKernelError），记下 hit。只在沙箱里用（那里的 /tmp 是私有的）。"""

    def __init__(self, root: str = "/tmp", limit: int = MAX_FILES):
        self.root, self.limit, self.hit = root, limit, False
        self.base = self.used()

    def used(self) -> int:
        st = os.statvfs(self.root)
        return st.f_files - st.f_ffree

    async def run(self) -> None:
        while True:
            await asyncio.sleep(WATCH_SECONDS)
            if self.used() - self.base > self.limit:
                self.hit = True
                try:
                    os.kill(-1, signal.SIGKILL)   # 只到得了本沙箱里、同一用户的进程，不含本进程
                except ProcessLookupError:
                    pass

    def clean(self, keep: Path) -> None:
        """删掉 /tmp 里学生建的一切（换内核前），再建回工作目录。"""
        import shutil

        for entry in os.scandir(self.root):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass
        keep.mkdir(parents=True, exist_ok=True)
        self.hit = False


class _Attempt:
    """一次运行（一个内核）的结局：broke 是让内核换掉的那个单元的问题（超时、崩溃、文件太多）。"""

    def __init__(self):
        self.broke: dict | None = None
        self.out_of_time = False
        self.stopped_at = 0       # 最后开始运行（或因时限没有运行）的学生单元


class NotebookRun:
    """运行学生的代码单元：一个单元出错照样往下；超时、崩溃就换内核，跳过它重跑其余单元。

    每个学生单元运行之后，一个小探针记下答案变量有没有变（``snapshots``）：批改程序据此说出
    “哪个单元改了哪道题的答案”，也据此让已经对了的题不因别的题的单元而丢分（judge.py）。
    """

    def __init__(self, sources: list[str], workdir: Path, names: list[str], timeout: float,
                 notebook_timeout: float, limits: dict, watch: FileWatch | None = None,
                 own_uid: int | None = None):
        self.sources, self.workdir, self.names = sources, workdir, names
        self.timeout, self.notebook_timeout, self.limits, self.watch = (
            timeout, notebook_timeout, limits, watch)
        # 沙箱外、以学生专用的用户号运行时（Gradescope 的 --isolation account）是那个用户号：换内核前
        # 只结束它的进程；None 且不在沙箱里（--no-sandbox）时不结束任何进程
        self.own_uid = own_uid
        self.problems: dict[int, dict] = {}
        self.skip: set[int] = set()
        self.restarts = 0
        self.spent = 0.0                  # 学生单元一共运行了多少秒（--notebook-timeout 计的是它）
        self.snapshots = Snapshots()
        # 换内核失败时的退路：上一个内核里最后一次记下的答案 (第几个学生单元之后, {变量名: 探针写的值}, 各单元的变化)
        self.fallback: tuple[int, dict, list] | None = None
        self._recorded: tuple[int, dict, list] | None = None
        self.final_nonce = ""             # 最后的探针这次用的 nonce（见 answer_format.new_nonce）
        self.key = ""                     # 这个内核里探针的密钥（预热单元交回）

    # ------------------------------------------------------------ 整体

    async def run(self):
        """返回 (问题列表, 探针单元的输出文字；探针没有运行完时为 None)。"""
        while True:
            finished, probed = await self._one_kernel()
            if finished:
                return list(self.problems.values()), probed
            if self.watch is not None and self.watch.hit:
                self.watch.clean(self.workdir)
            if self.snapshots.at:
                self._recorded = self.snapshots.recorded()
            if self.watch is not None or self.own_uid is not None:
                # 沙箱里（或学生专用的用户号下）：先结束上一个内核留下的一切进程（学生 fork 出的、另起会话的），
                # 等它们真的没了，再启动新内核。否则它们占满进程数上限（按用户号计），新内核起不来，
                # 已经对了的题也成了“出错”
                end_others(uid=self.own_uid)
            self.restarts += 1
            if self.restarts > MAX_RESTARTS:
                self._not_run(None, f"内核已换过 {MAX_RESTARTS} 次，没有再运行这个单元")
                self.fallback = self._recorded
                return list(self.problems.values()), None

    async def _one_kernel(self) -> tuple[bool, str | None]:
        """在一个新内核里从头运行（跳过 skip 里的单元）；(是否结束, 探针的输出)。"""
        from jupyter_client.manager import AsyncKernelManager
        from nbclient import NotebookClient

        cells = self._cells()
        self.snapshots.restart()   # 新内核从头运行：答案的变化从头记
        km = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=_kernel_specs())
        # 给 nbclient 一份列表的副本：它把执行的单元写回 nb.cells[序号]，小探针用的是最后探针的序号，
        # 写进我们自己的列表就会把最后的探针（和它的 nonce）换成小探针
        client = NotebookClient(
            nbformat_notebook(list(cells)), km=km, timeout=self.timeout, allow_errors=True,
            startup_timeout=STARTUP_TIMEOUT, interrupt_on_timeout=False, shutdown_kernel="immediate",
            record_timing=False, kernel_name="python3")
        client.reset_execution_trackers()
        attempt, started = _Attempt(), False
        try:
            quiet = {"stdout": open(os.devnull, "w"), "stderr": open(os.devnull, "w")}
            async with client.async_setup_kernel(cwd=str(self.workdir), **quiet):
                started = True
                await self._warm_up(client, cells[0])
                await self._student_cells(client, km, cells, attempt)
                if attempt.broke is not None:
                    return False, None
                return True, await self._final_probe(client, cells, attempt)
        except KernelStartError as err:
            if self.restarts == 0:
                raise
            # 换内核失败：学生的代码已经运行过（比如写满了 /tmp），算这份提交的问题；
            # 答案按上一个内核里最后一次记下的判（已经对了的题不丢分）
            self._not_run(None, f"换内核失败，没有运行：{err}")
            self.fallback = self._recorded
            return True, None
        except Exception as err:  # 内核起不来，或者关内核时出错
            if not started:
                if self.restarts == 0:
                    raise KernelStartError(
                        f"无法启动 Python 内核：{type(err).__name__}: {err}") from None
                self._not_run(type(err).__name__, "换内核失败，没有运行这个单元")
                self.fallback = self._recorded
                return True, None
            if attempt.broke is None:
                raise
            return False, None
        finally:
            # km 是我们传进去的，nbclient 不替我们关内核：超时、崩溃、正常结束都在这里关掉它
            if km.has_kernel:
                try:
                    await km.shutdown_kernel(now=True)
                except Exception:
                    pass

    def _cells(self) -> list:
        import nbformat

        cells = [nbformat.v4.new_code_cell(WARM_UP)]
        cells += [nbformat.v4.new_code_cell(s) for s in self.sources]
        return cells

    def _not_run(self, exception: str | None, message: str) -> None:
        for n in range(len(self.sources)):
            if n not in self.skip and n not in self.problems:
                self.problems[n] = _problem(n + 1, "not_run", exception, message)

    # ------------------------------------------------------------ 各个步骤

    async def _warm_up(self, client, cell) -> None:
        """先把 torch 和本包导入好（不计入学生单元的时限）。"""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        client.timeout = max(STARTUP_TIMEOUT, math.ceil(self.timeout))
        try:
            await client.async_execute_cell(cell, 0, store_history=False)
        except (CellTimeoutError, DeadKernelError) as err:
            raise KernelStartError(f"内核里导入 torch 和 minigpt 失败：{type(err).__name__}")
        if _error_of(cell):
            ename, evalue = _error_of(cell)
            raise KernelStartError(f"内核里导入 torch 和 minigpt 失败：{ename}: {evalue}")
        text = _stream_text(cell)
        cell["outputs"] = []
        if KEY_MARKER not in text:
            raise KernelStartError("内核里装探针失败")
        self.key = text.split(KEY_MARKER, 1)[1].split("\n", 1)[0].strip()

    async def _student_cells(self, client, km, cells, attempt: _Attempt) -> None:
        for n in range(len(self.sources)):
            if n in self.skip:
                continue
            left = self.notebook_timeout - self.spent
            attempt.stopped_at = n
            if left <= 0:   # 时限恰好用完在上一个单元结束时
                attempt.out_of_time = True
                self.problems[n] = self._out_of_time(n)
                break
            if not await self._student_cell(client, km, cells, n, left, attempt):
                break
            await self._step_probe(client, km, n, attempt)
            if attempt.broke is not None:
                break
        if attempt.broke is None and attempt.out_of_time:
            for m in range(attempt.stopped_at, len(self.sources)):
                if m not in self.skip and m not in self.problems:
                    self.problems[m] = _problem(m + 1, "not_run", "NotebookTimeout",
                                                "整份笔记本的时限已到，没有运行这个单元")

    def _out_of_time(self, n: int) -> dict:
        return _problem(n + 1, "limit", "NotebookTimeout",
                        f"{LIMIT_TEXT['notebook_timeout']}（--notebook-timeout "
                        f"{self.notebook_timeout:g} 秒），从这个单元起不再运行")

    async def _student_cell(self, client, km, cells, n: int, left: float, attempt: _Attempt) -> bool:
        """运行第 n 个学生单元，记下它的问题；返回还要不要接着往下运行。"""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        client.timeout = max(1, math.ceil(min(self.timeout, left)))  # nbclient 只收整数秒
        began = time.monotonic()
        try:
            await client.async_execute_cell(cells[n + 1], n + 1)
        except CellTimeoutError:
            self.spent += time.monotonic() - began
            if left < self.timeout:   # 是整份笔记本的时限到了
                attempt.out_of_time = True
                self.problems[n] = self._out_of_time(n)
                self.skip.add(n)
                await km.interrupt_kernel()
                return False
            message = f"运行超过 {self.timeout:g} 秒，已结束内核"
            if _BUILTINS_CHANGED.search(self.sources[n]):
                # r36c F8（H05）：单元的代码一下子就运行完了，内核自己的代码却因为内置函数被换掉而卡住，
                # 不说成是单元的代码（比如循环）运行太久
                message += ("。这个单元换掉了内置函数（builtins）：内核自己的代码也用它们，"
                            "单元的代码也许早已运行完，是内核因此卡住了")
            attempt.broke = _problem(n + 1, "timeout", "CellTimeoutError", message)
        except DeadKernelError:
            self.spent += time.monotonic() - began
            attempt.broke = self._dead_kernel(n)
        else:
            self.spent += time.monotonic() - began
        if attempt.broke:
            self.problems[n] = attempt.broke
            self.skip.add(n)
            return False
        err = _error_of(cells[n + 1])
        if err and n not in self.problems:
            self.problems[n] = self._error_problem(n, *err)
        return True

    def _dead_kernel(self, n: int) -> dict:
        if self.watch is not None and self.watch.hit:
            return _problem(n + 1, "limit", "TooManyFiles",
                            f"{LIMIT_TEXT['files']}（{self.limits['files']}），已结束内核、清空 /tmp")
        return _problem(n + 1, "crash", "DeadKernelError",
                        "内核退出了（崩溃、被结束，或超出 CPU 时间上限）")

    def _error_problem(self, n: int, ename: str, evalue: str) -> dict:
        first = (evalue.strip().splitlines() or [""])[0][:160]
        limit = which_limit(ename, evalue)
        if limit:
            return _problem(n + 1, "limit", ename, f"{LIMIT_TEXT[limit]}（{self.limits[limit]}）"
                                                   + (f"：{first}" if first else ""))
        return _problem(n + 1, "error", ename, first)

    async def _step_probe(self, client, km, n: int, attempt: _Attempt) -> None:
        """第 n 个学生单元之后的小探针：记下哪些答案变量变了。探针超时就不再探（内核打断后照常往下）。"""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        left = STEP_PROBE_BUDGET - self.snapshots.seconds
        if not self.snapshots.open or left <= 0:
            return
        nonce = new_nonce()
        began = time.monotonic()
        try:
            text = await self._probe(client, km, nonce, min(STEP_PROBE_TIMEOUT, left))
        except CellTimeoutError:
            self.snapshots.close()
            await km.interrupt_kernel()
            return
        except DeadKernelError:   # 学生的对象在探针里弄死了内核：算这个单元崩溃
            attempt.broke = self._dead_kernel(n)
            self.problems[n] = attempt.broke
            self.skip.add(n)
            return
        finally:
            self.snapshots.seconds += time.monotonic() - began
        self.snapshots.add(n + 1, text, self.key, nonce)

    async def _final_probe(self, client, cells, attempt: _Attempt) -> str | None:
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        self.final_nonce = new_nonce()
        try:
            return await self._probe(client, client.km, self.final_nonce, PROBE_TIMEOUT)
        except (CellTimeoutError, DeadKernelError):
            # 探针没有回答（学生的代码换掉了它、让它卡住，或者它运行时内核退出了）：和探针被注销一样，
            # 是“探针没有输出答案”，不是“没有这个变量”（r36c F3）
            return ""

    async def _probe(self, client, km, nonce: str, timeout: float) -> str:
        """运行一次探针，返回它送出的文字。发的是 comm_open 消息：内核直接调用预热时登记的探针，
        不经过输入转换器、AST 转换器、各种事件钩子（见 answer_format.install_kernel_probe）。"""
        import queue

        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        kc = client.kc
        msg = kc.session.msg(*probe_request(self.names, nonce))
        kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        deadline = time.monotonic() + timeout
        texts, idle = [], False
        while not idle:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CellTimeoutError(f"探针超过 {timeout:g} 秒")
            if not await km.is_alive():
                raise DeadKernelError("探针运行时内核退出了")
            try:
                msg = await kc.get_iopub_msg(timeout=min(1.0, left))
            except queue.Empty:
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg.get("msg_type") == "stream":
                texts.append(str(msg["content"].get("text", "")))
            elif (msg.get("msg_type") == "status"
                  and msg["content"].get("execution_state") == "idle"):
                idle = True
        return "".join(texts)


def nbformat_notebook(cells):
    import nbformat

    return nbformat.v4.new_notebook(cells=cells)


def _stream_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream")


class Snapshots:
    """每个单元之后答案变量的变化：[{"cell": 第几个学生单元（从 1 数）, "answers": {变量名: 探针写的值}}]，
    只记变了的变量；合计超过 MAX_SNAPSHOT_BYTES 就不再记（truncated）。"""

    def __init__(self):
        self.items: list[dict] = []
        self.last: dict[str, str] = {}
        self.used = 0
        self.seconds = 0.0        # 小探针一共用了多少秒（不计入学生单元的时限，另有 STEP_PROBE_BUDGET）
        self.open = True
        self.truncated = False
        self.at = 0               # 最后一次记下答案是在第几个学生单元之后（从 1 数；0 是还没有记过）

    def recorded(self) -> tuple[int, dict, list]:
        """此刻记下的答案：(第几个学生单元之后, {变量名: 探针写的值}, 各单元的变化)。"""
        return self.at, {n: json.loads(v) for n, v in self.last.items()}, list(self.items)

    def close(self) -> None:
        self.open = False

    def restart(self) -> None:
        self.items, self.last, self.used, self.at = [], {}, 0, 0

    def add(self, cell: int, text: str, key: str, nonce: str) -> None:
        try:
            raw = parse_json(signed_answers(text, key, nonce))
        except AnswerFileError:
            return
        if not isinstance(raw, dict):
            return
        self.at = cell
        changed = {}
        for name, item in raw.items():
            dumped = json.dumps(item, sort_keys=True, ensure_ascii=False)
            if self.last.get(name, '{"kind": "missing"}') != dumped:
                changed[name] = item
                self.last[name] = dumped
                self.used += len(dumped)
        if self.used > MAX_SNAPSHOT_BYTES:
            self.truncated = True
            self.open = False
            return
        if changed:
            self.items.append({"cell": cell, "answers": changed})


async def run_cells(sources: list[str], workdir: Path, names: list[str],
                    timeout: float, notebook_timeout: float, limits: dict,
                    watch: FileWatch | None = None, own_uid: int | None = None):
    """运行学生的代码单元：(问题列表, 探针单元的输出文字或 None, 每个单元之后答案的变化)。"""
    run = NotebookRun(sources, workdir, names, timeout, notebook_timeout, limits, watch, own_uid)
    problems, probed = await run.run()
    return problems, probed, run.snapshots, run.fallback, (run.key, run.final_nonce)


def _others(uid: int | None = None) -> list[int]:
    """沙箱里除 1 号进程和自己以外、还没有被收走的进程。给了 uid（沙箱外，学生专用的用户号）时只数这个
    用户号还活着的进程：别的用户的与本机的不算，僵尸也不算（收走它们的是它们的新父进程，不是本进程）。"""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in (1, me):
            try:
                stat = Path(f"/proc/{entry}/stat").read_text(errors="replace")
                if uid is not None and (os.stat(f"/proc/{entry}").st_uid != uid
                                        or stat.rsplit(")", 1)[1].split()[0] == "Z"):
                    continue
            except (OSError, IndexError):
                continue
            found.append(int(entry))
    return found


END_WAIT = 20.0   # 换内核前，最多等这么多秒让上一个内核留下的进程全部消失


def end_others(wait: float = END_WAIT, uid: int | None = None) -> None:
    """结束除自己以外的所有进程，并等到它们都被收走（僵尸也占进程数上限）。只在沙箱里调用，或者沙箱外、
    以学生专用的、非 root 的用户号 uid 运行时调用（那时 kill(-1) 只到得了这个用户号的进程）。"""
    if uid is not None and (uid == 0 or os.getuid() != uid):
        raise RuntimeError(f"end_others 只在学生专用的非 root 用户号下结束“其余所有进程”（本进程的用户号是 {os.getuid()}）")
    deadline = time.monotonic() + wait
    while True:
        try:
            os.kill(-1, signal.SIGKILL)   # 只到得了本沙箱里（或这个用户号的）、同一用户的进程，不含本进程和 1 号进程
        except ProcessLookupError:
            pass
        while True:   # 收走自己的子进程（旧内核）；别的由沙箱的 1 号进程收走
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not _others(uid) or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def end_leftovers() -> int:
    """结束沙箱里除自己以外的所有进程（学生留下的后台进程）；返回结束了几个。只在沙箱的进程命名空间里调用。"""
    me = os.getpid()
    alive = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (1, me):
            continue
        try:
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        alive += state != "Z"
    try:
        os.kill(-1, signal.SIGKILL)   # 只到得了本进程命名空间里、同一用户的进程
    except ProcessLookupError:
        pass
    return alive


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minigpt.grading.runner")
    p.add_argument("--timeout", type=float, required=True)
    p.add_argument("--notebook-timeout", type=float, required=True)
    p.add_argument("--memory", type=int, required=True)
    p.add_argument("--processes", type=int, required=True)
    p.add_argument("--disk", type=int, required=True)
    p.add_argument("--uid", type=int, default=None)
    p.add_argument("--workdir", type=Path, required=True)
    p.add_argument("--sandboxed-pidns", default=None,
                   help="批改程序所在的进程命名空间；本进程的不同于它时才结束“所有其余进程”")
    p.add_argument("--own-account", action="store_true",
                   help="沙箱外，以学生专用的用户号运行（Gradescope 的 --isolation account）：进程数按这个用户号"
                        "设上限，换内核前结束这个用户号的其余进程")
    args = p.parse_args(argv)
    request = json.load(sys.stdin)
    # 结果只从这个描述符交回；标准输出本身改指 /dev/null（库打印的东西混不进结果）
    result_fd = os.dup(1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    sources, names = request["sources"], request["names"]

    import nbclient  # 先导入，再降权限  # noqa: F401
    import nbformat  # noqa: F401

    in_sandbox = (args.sandboxed_pidns is not None
                  and os.readlink("/proc/self/ns/pid") != args.sandboxed_pidns)
    if args.uid is not None and os.getuid() == 0 and in_sandbox:
        drop_root(args.uid)   # 换了用户号，进程随之“不可转储”
    _not_dumpable()
    # 学生专用的用户号（非 root、不在沙箱里）：这个用户号的进程只有本进程和学生的，可以按它设上限、结束其余
    own_uid = os.getuid() if args.own_account and not in_sandbox and os.getuid() != 0 else None
    cpu = int(args.notebook_timeout * 2 + STARTUP_TIMEOUT * 2 + 60)
    apply_limits(args.memory, args.processes if in_sandbox or own_uid is not None else None, args.disk, cpu)
    limits = {"memory": f"{args.memory / 2**30:g} GiB", "processes": f"{args.processes} 个",
              "disk": f"{args.disk / 2**30:g} GiB"}
    args.workdir.mkdir(parents=True, exist_ok=True)
    result = {"version": 1, "kernel_failed": None, "runner_error": None,
              "problems": [], "answers": None,
              "answers_problem": None, "leftover": 0, "snapshots": [], "snapshots_truncated": False}
    limits["files"] = f"{MAX_FILES} 个"

    async def cells_watched():
        if not in_sandbox:   # 沙箱外的 /tmp 是教师的：不数它；只在学生专用的用户号下结束“其余所有进程”
            return await run_cells(sources, args.workdir, names, args.timeout,
                                   args.notebook_timeout, limits, own_uid=own_uid)
        watch = FileWatch()
        task = asyncio.create_task(watch.run())
        try:
            return await run_cells(sources, args.workdir, names, args.timeout,
                                   args.notebook_timeout, limits, watch)
        finally:
            task.cancel()

    try:
        problems, probed, snapshots, fallback, nonce = asyncio.run(cells_watched())
        result["problems"] = problems
        result["snapshots"], result["snapshots_truncated"] = snapshots.items, snapshots.truncated
        if probed is None and fallback is not None:
            # 最后的探针没有运行（换内核失败）：交回上一个内核里最后一次记下的答案，并说明是哪个单元之后的
            after, answers, items = fallback
            result["answers"] = {n: answers.get(n, {"kind": "missing"}) for n in names}
            result["snapshots"], result["answers_after_cell"] = items, after
        if probed is not None:
            try:
                result["answers"] = parse_json(signed_answers(probed, *nonce))
            except AnswerFileError as err:
                result["answers_problem"] = str(err).replace("结果文件", "答案")
    except KernelStartError as err:
        result["kernel_failed"] = str(err)
    except Exception as err:  # 内核发来不合规的消息（学生改了内核里的东西）之类：只算这一份出错
        result["runner_error"] = f"{type(err).__name__}: {err}"[:200]
    if in_sandbox:
        result["leftover"] = end_leftovers()
    with os.fdopen(result_fd, "w", encoding="utf-8") as out:
        out.write("\n" + json.dumps(result, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
