"""构建脚本的子进程与信号：Ctrl-C（SIGINT）或 SIGTERM 在任何阶段都能在几秒内停下整个构建。

构建会启动三类子进程：预执行的工作进程（每个又启动一个 Jupyter 内核）、`jupyter-book build`
（Sphinx；它也可能启动内核，PDF 构建时还启动 latexmk / XeLaTeX）。这里的约定：

- **每个子进程都在自己的会话（进程组）里启动**（`start_new_session`）。终端里的 Ctrl-C 只发给前台进程组，
  也就是只发给构建脚本本身；子进程不会各自收到信号、各自以 KeyboardInterrupt 死掉，于是不会有
  “工作进程死了，当成页面失败、交给 Sphinx 重跑”这种误判。信号发给整个进程组时（`kill -INT -PGID`）
  也一样：子进程不在那个组里。
- **信号一到就抛出 `Interrupted`**（`install_handlers`），构建脚本的主流程不论停在哪一步都就此中止。
- **收尾时结束所有后代进程**（`stop_all`）：直接的子进程（工作进程、Sphinx、make）连同它们的进程组立即 SIGKILL
  （nbclient 在执行笔记本时接管了 SIGTERM，收到后会把内核关掉、当成页面出错报告，进程还接着跑）；剩下的后代
  （内核）按 /proc 的进程树找出来，SIGTERM，最多等 `grace` 秒，还活着的发 SIGKILL。在 Linux 上构建脚本还把自己设成
  “子进程收割者”（`PR_SET_CHILD_SUBREAPER`）：父进程先死的内核会被过继给构建脚本，照样能被找到、结束。
  Jupyter 内核在自己的会话里运行（jupyter_client 的做法），所以只结束进程组是不够的，要按进程树找。
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


class Interrupted(BaseException):
    """构建被 SIGINT / SIGTERM 打断（不是 Exception：不会被 “except Exception” 吞掉）。"""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # 130（SIGINT）、143（SIGTERM）：与 shell 的约定一致


_held: list[int] | None = None  # held() 里到来、还没处理的信号


def _raise(signum, _frame) -> None:
    # 收尾期间再来的信号一律忽略：收尾本身只需几秒
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _held is not None:  # 正在一段不能被打断的操作里：记下，做完再抛
        _held.append(signum)
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def held():
    """这一段里到来的 SIGINT / SIGTERM 先记下，这一段做完再抛 Interrupted（例如写执行缓存：记录与文件要么都写好，
    要么都没写）。信号处理函数总在主线程里运行，所以与进程里有没有别的线程无关。"""
    global _held
    if _held is not None:  # 已经在外层的 held() 里
        yield
        return
    _held = []
    try:
        yield
    finally:
        pending, _held = _held, None
    if pending:
        raise Interrupted(pending[0])


def install_handlers() -> None:
    """SIGINT 与 SIGTERM 都抛出 Interrupted；在 Linux 上把本进程设为子进程收割者。"""
    signal.signal(signal.SIGINT, _raise)
    signal.signal(signal.SIGTERM, _raise)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):  # 没有 prctl：内核仍会在父进程消失后一秒内自行退出
            pass


def popen(cmd: list[str], **kwargs) -> subprocess.Popen:
    """在新会话里启动子进程（它不会直接收到终端的 Ctrl-C，由构建脚本统一结束）。"""
    return subprocess.Popen(cmd, start_new_session=True, **kwargs)


def _parents() -> dict[int, int]:
    """{pid: ppid}，读 /proc（没有 /proc 的平台返回空字典）。"""
    result = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return result
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # 进程刚好结束
            continue
        # 第二个字段（命令名）可能含空格和括号：从最后一个 “)” 之后读
        fields = stat[stat.rindex(")") + 2:].split()
        result[int(entry.name)] = int(fields[1])
    return result


def descendants(pid: int | None = None) -> list[int]:
    """pid（默认本进程）的所有后代进程（子、孙……），读 /proc。"""
    root = os.getpid() if pid is None else pid
    parents = _parents()
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # 已经结束、还没被收割的僵尸进程不算活着
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
        return state[state.rindex(")") + 2] != "Z"
    except (OSError, ValueError):
        return True


def _signal(pid: int, signum: int) -> None:
    """发给 pid 所在的进程组；那个组若是构建脚本自己的组（例如 make 和构建脚本所在的组），只发给 pid 本身。"""
    try:
        group = os.getpgid(pid)
        if group != os.getpgrp():
            os.killpg(group, signum)
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _reap() -> None:
    """收割已经结束的子进程（包括过继来的内核），免得留下僵尸。"""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _terminate(targets: set[int], grace: float) -> None:
    """对 targets 发 SIGTERM（连同各自的进程组），最多等 grace 秒，还活着的发 SIGKILL。"""
    for pid in targets:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while targets and time.monotonic() < deadline:
        _reap()
        targets = {pid for pid in targets if _alive(pid)}
        if targets:
            time.sleep(0.05)  # 轮询“进程已结束”这个事件，不是等运气
    for pid in targets:
        _signal(pid, signal.SIGKILL)


def stop_all(known: list[subprocess.Popen] = (), grace: float = 3.0) -> None:
    """结束本进程的所有后代。known 是自己启动的子进程（没有 /proc 的平台靠它们）。

    先结束直接的子进程（Sphinx、工作进程、make）和它们的进程组，再结束剩下的后代（各自会话里的内核、
    过继来的孙进程）。顺序要紧：内核先死的话，Sphinx 会把“内核死了”当成页面出错，打印一大段回溯。"""
    mine = os.getpid()
    parents = _parents()
    direct = {pid for pid, parent in parents.items() if parent == mine}
    direct |= {p.pid for p in known if p.poll() is None}
    # 直接的子进程用 SIGKILL：nbclient 在执行笔记本时接管了 SIGINT / SIGTERM，收到后先关掉内核、再把
    # “内核死了”当成页面错误报告出来，Sphinx 还会接着跑下去。它们的输出没有用处，下一次构建从头来过。
    for pid in direct:
        _signal(pid, signal.SIGKILL)
    _terminate(direct, grace)
    for _ in range(3):  # 过继来的进程可能又有子进程：重复几轮直到一个不剩
        rest = set(descendants())
        if not rest:
            break
        _terminate(rest, grace)
    for process in known:
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    _reap()
