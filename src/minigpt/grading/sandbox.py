"""把 runner 关进 bubblewrap 沙箱里运行（见「教师指南」的「沙箱」一节）。

沙箱里：
- 文件系统只读（沙箱的根和 /dev 也改成只读），只看得到 /usr、Python 解释器、虚拟环境和 minigpt 包；
  私有的 /tmp（tmpfs，大小即磁盘上限，文件数由 runner 限制）是唯一能写的地方；看不到别的提交、教师的家目录和批改报告；
- 网络命名空间只有自己的回环接口（内核和 runner 在里面说话），连不到外面，也连不到宿主的 127.0.0.1；
- 进程命名空间是自己的：沙箱结束时（runner 退出、超时被结束、批改程序退出），里面的进程全部结束；
- 环境变量只有下面 ``clean_env`` 列出的几个，教师的环境变量一个也不传进去；
- 资源上限由 runner 在自己身上设好再启动内核（runner.py 的 apply_limits）；高过批改程序自己的硬上限
  （ulimit -H，普通用户调不高）的，按硬上限算（``within_hard_limits``）。

没有 bubblewrap（macOS、Windows、没装 bwrap 或不能建用户命名空间的 Linux）时，``unavailable()`` 说明原因，
批改程序拒绝运行提交；``--no-sandbox`` 才在沙箱外运行（仍是干净的环境变量、内存、CPU 时间和文件大小上限
与两个时限，进程数不限）。
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import selectors
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

INSTALL_HINT = ("Debian/Ubuntu：sudo apt-get install bubblewrap；Fedora：sudo dnf install bubblewrap；"
                "Arch：sudo pacman -S bubblewrap")
# 以 root 批改时，每个沙箱换成这个范围里随机取的、此刻没有进程在用的用户号（fresh_uid）。进程数上限按用户号
# 计、而且是全机的：以前第 k 个并行的沙箱固定用 62000 + k，同时运行的两次批改（两个终端、CI 和开发者）就共用
# 它，一份提交开满进程，另一次批改里同一个用户号的正确提交连内核都启动不了
UID_RANGE = (2**20, 2**31 - 2**16)
MAX_RESULT_BYTES = 2 * 2**20   # runner 从标准输出交回的结果最多这么大（答案本身最多 1 MB）
WORKDIR = "/tmp/work"     # 沙箱里笔记本的工作目录


@dataclass(frozen=True)
class Limits:
    timeout: float = 30               # 每个代码单元的秒数
    notebook_timeout: float = 300     # 整份笔记本（学生单元合计）的秒数
    memory: int = 2 * 2**30           # 每个进程的地址空间
    processes: int = 256              # 沙箱里的进程（和线程）数
    disk: int = 2**30                 # 单个文件的大小，以及 /tmp 的总大小

    def wall_clock(self) -> float:
        """整个沙箱最多运行多久（内核启动、换内核、探针都算上），过了就从外面结束它。"""
        return self.notebook_timeout + 4 * (60 + self.timeout) + 180


# 上限 → (资源, 命令行参数, 教师查看它的 shell 命令, 显示方式)
_HARD = {"memory": ("RLIMIT_AS", "--memory", "ulimit -Hv", "GiB"),
         "processes": ("RLIMIT_NPROC", "--processes", "ulimit -Hu", "个"),
         "disk": ("RLIMIT_FSIZE", "--disk", "ulimit -Hf", "GiB")}


def _shown(value: int, unit: str) -> str:
    return f"{value / 2**30:g} GiB" if unit == "GiB" else f"{value} 个"


def within_hard_limits(limits: Limits) -> tuple[Limits, list[str]]:
    """沙箱的上限不能高过批改程序自己的硬上限（ulimit -H）：普通用户调不高硬上限，runner 在沙箱里
    也一样（root 降了权限之后同样）。要的上限高过硬上限时按硬上限算，另返回一句给教师的说明。"""
    import resource

    fitted, notes = {}, []
    for field, (name, flag, shell, unit) in _HARD.items():
        hard = resource.getrlimit(getattr(resource, name))[1]
        want = getattr(limits, field)
        if hard != resource.RLIM_INFINITY and hard < want:
            fitted[field] = hard
            notes.append(f"提示：{flag} 要的是 {_shown(want, unit)}，但你的硬上限（{shell}）只有 "
                         f"{_shown(hard, unit)}，普通用户调不高它：沙箱里按 {_shown(hard, unit)} 算。")
    return replace(limits, **fitted), notes


def clean_env(python_bin: Path) -> dict[str, str]:
    """沙箱里的全部环境变量：只有 Python 和内核需要的。"""
    return {
        "PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp", "USER": "student", "LOGNAME": "student", "LANG": "C.UTF-8",
        "TMPDIR": "/tmp", "JUPYTER_RUNTIME_DIR": "/tmp/.jupyter", "JUPYTER_PLATFORM_DIRS": "1",
        "JUPYTER_CONFIG_DIR": "/tmp/.jupyter-config", "IPYTHONDIR": "/tmp/.ipython",
        "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/.matplotlib", "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    }


def interpreter() -> str:
    """沙箱里运行的 Python：本解释器的路径，所在目录取真实路径（r36b F7：``../venv/bin/python`` 里的 ``..``
    在沙箱里走不通），文件名不跟随符号链接（虚拟环境的 bin/python 是指向基础解释器的链接，跟过去就出了虚拟环境）。"""
    exe = Path(os.path.abspath(sys.executable))
    return str(exe.parent.resolve() / exe.name)


def _python_paths() -> list[Path]:
    """沙箱里要只读挂上的 Python：解释器前缀、虚拟环境、sys.path 上的目录和 minigpt 包本身。"""
    import minigpt

    cwd = Path.cwd().resolve()
    paths = {Path(sys.base_prefix), Path(sys.prefix), Path(sys.exec_prefix),
             Path(sys.executable).resolve().parent.parent,
             Path(minigpt.__file__).resolve().parent}
    for entry in sys.path:
        if not entry:
            continue
        p = Path(entry).resolve()
        if p == cwd or not p.is_dir():
            continue
        paths.add(p)
    # 去掉已被上一级目录包含的
    out = []
    for p in sorted(paths, key=lambda p: len(p.parts)):
        if not any(p == q or q in p.parents for q in out) and p.exists():
            out.append(p)
    return out


def bwrap_command(limits: Limits, as_root: bool) -> list[str]:
    bwrap = shutil.which("bwrap")
    cmd = [bwrap, "--die-with-parent", "--new-session",
           "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
           "--hostname", "sandbox", "--clearenv"]
    if not as_root:
        cmd += ["--unshare-user", "--uid", "1000", "--gid", "1000", "--disable-userns"]
    for name, value in clean_env(Path(interpreter()).parent).items():
        cmd += ["--setenv", name, value]
    cmd += ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "lib", "lib32", "lib64", "sbin"):
        host = Path("/") / top
        if host.is_symlink():
            cmd += ["--symlink", os.readlink(host), f"/{top}"]
        elif host.is_dir():
            cmd += ["--ro-bind", str(host), f"/{top}"]
    for f in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime"):
        cmd += ["--ro-bind-try", f, f]
    cmd += ["--proc", "/proc", "--dev", "/dev",
            "--size", str(limits.disk), "--tmpfs", "/tmp"]
    # bwrap 按参数的顺序挂载：Python 要在私有的 /tmp 之后挂上，否则放在 /tmp 下的虚拟环境或解释器
    # 会被那个 tmpfs 盖住（/tmp 的其余部分仍是私有的、空的）
    made: set[Path] = set()
    for p in _python_paths():
        # 中间的目录由 bwrap 新建，要让降了权限的用户也能走进去
        for parent in reversed(p.parents[:-1]):
            if parent not in made:
                made.add(parent)
                cmd += ["--perms", "0755", "--dir", str(parent)]
        cmd += ["--ro-bind", str(p), str(p)]
    # 沙箱的根（/，还有上面 --dir 建的文件夹）和 /dev 都是 bwrap 建的 tmpfs，没有大小上限（默认是内存的一半）。
    # 以普通用户批改时它们属于沙箱里的用户、可写：一份提交能往里写满宿主一半的内存。挂载完都改成只读
    # （不递归：/tmp、/proc 和只读挂上的 Python 不受影响；/dev/null 这样的设备照样能写）
    cmd += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp"]
    return cmd


def unavailable() -> str | None:
    """沙箱在这台机器上能用吗？能用返回 None，否则返回原因（中文，含安装办法）。"""
    if not sys.platform.startswith("linux"):
        return (f"这台机器是 {sys.platform}：批改用的沙箱 bubblewrap 只在 Linux 上运行。"
                "请在 Linux（或 Linux 虚拟机、WSL 2）上批改")
    if shutil.which("bwrap") is None:
        return f"没有找到沙箱程序 bubblewrap（命令 bwrap）。安装它：{INSTALL_HINT}"
    cmd = bwrap_command(Limits(), os.getuid() == 0)
    cmd += [interpreter(), "-c", "import nbclient, ipykernel, jupyter_client, minigpt"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"沙箱 bubblewrap 启动不了：{err}"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["（没有输出）"])[-1][:200]
        if "execvp" in tail or "No such file or directory" in tail:
            return (f"沙箱 bubblewrap 起来了，但在沙箱里找不到批改用的 Python：{tail}。"
                    f"沙箱里只挂上了 Python 的安装目录（{interpreter()}）；请用 Python 的完整路径"
                    "启动批改程序（或者激活虚拟环境后运行 python -m minigpt.grade），而不是加 --no-sandbox")
        return (f"沙箱 bubblewrap 在这台机器上启动不了：{tail}。常见原因是内核不允许普通用户"
                "建用户命名空间（sysctl kernel.unprivileged_userns_clone=1，或 Ubuntu 的 "
                "kernel.apparmor_restrict_unprivileged_userns=0）")
    return None


def _uids_in_use() -> set[int]:
    uids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                uids.add(os.stat(f"/proc/{entry}").st_uid)
            except OSError:
                pass
    return uids


def fresh_uid() -> int:
    """沙箱用的用户号：在 UID_RANGE 里随机取，避开此刻有进程在用的（见 UID_RANGE 的说明）。"""
    rng, used = random.SystemRandom(), _uids_in_use()
    while True:
        uid = rng.randrange(*UID_RANGE)
        if uid not in used:
            return uid


def host_pidns() -> str:
    return os.readlink("/proc/self/ns/pid")


def runner_command(workdir: str, limits: Limits, uid: int | None,
                   sandboxed: bool) -> list[str]:
    cmd = [interpreter(), "-m", "minigpt.grading.runner",
           "--timeout", f"{limits.timeout:g}", "--notebook-timeout", f"{limits.notebook_timeout:g}",
           "--memory", str(limits.memory), "--processes", str(limits.processes),
           "--disk", str(limits.disk), "--workdir", workdir]
    if sandboxed:
        cmd += ["--sandboxed-pidns", host_pidns()]
    if uid is not None:
        cmd += ["--uid", str(uid)]
    return cmd


_RUNNING: set = set()          # 正在运行的沙箱（Ctrl-C 时由 stop_all 结束）
_LOCK = threading.Lock()


_STOPPING = threading.Event()  # 批改被中断：不再启动新的沙箱

# 沙箱外（sandboxed=False）运行 runner 的账号：(用户号, 组号)；None 是批改程序自己的账号（--no-sandbox）。
# 容器里没有 bubblewrap 时（Gradescope，见 gradescope.py），以 root 运行的批改程序把学生的代码交给一个
# 普通用户号：它写不了批改程序的文件和结果，也 ptrace 不了批改程序
_ACCOUNT: tuple[int, int] | None = None


def use_account(uid: int | None, gid: int | None = None) -> None:
    """此后在沙箱外运行的 runner 都以这个用户号（组号默认与它相同）运行；None 恢复为批改程序自己的账号。"""
    global _ACCOUNT
    _ACCOUNT = None if uid is None else (uid, uid if gid is None else gid)


def stop_all() -> None:
    """结束所有正在运行的沙箱，此后也不再启动新的（批改被中断时）。"""
    _STOPPING.set()
    with _LOCK:
        for proc in list(_RUNNING):
            try:
                os.killpg(proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass


@dataclass
class RunOutcome:
    returncode: int | None        # None：超过 wall_clock，被从外面结束
    stdout: bytes                 # runner 交回的结果（最多 MAX_RESULT_BYTES）
    stderr: str                   # runner 的 stderr 的最后 2000 个字符
    too_big: bool = False         # 标准输出超过了 MAX_RESULT_BYTES（已结束沙箱）


def _pump(proc, deadline: float) -> tuple[bytes, bytes, bool, bool]:
    """读 runner 的标准输出（有上限）和标准错误（只留最后 2000 字节），直到它结束或到时。"""
    out, err = bytearray(), bytearray()
    too_big = timed_out = False
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(timeout=min(left, 1.0)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.extend(chunk)
                if key.data is err and len(err) > 4000:
                    del err[:-2000]
                if key.data is out and len(out) > MAX_RESULT_BYTES:
                    too_big = True
                    break
            if too_big:
                break
    return bytes(out), bytes(err[-2000:]), too_big, timed_out


def run(request: bytes, limits: Limits, sandboxed: bool, base: Path) -> RunOutcome:
    """在沙箱（sandboxed=False 时是一个干净环境里的子进程）里跑 runner，等它结束。

    沙箱外没有一处是沙箱里能写的：请求从标准输入送进去，结果从标准输出读回（有上限），
    base 只在 --no-sandbox 时用作工作目录。
    """
    as_root = os.getuid() == 0
    account = None if sandboxed else _ACCOUNT
    if sandboxed:
        uid = fresh_uid() if as_root else None
        cmd = bwrap_command(limits, as_root) + runner_command(WORKDIR, limits, uid, True)
        env = None
    else:
        work = base / "work"
        work.mkdir()
        cmd = runner_command(str(work), limits, None, False)
        if account is not None:
            cmd.append("--own-account")
        env = clean_env(Path(interpreter()).parent)
        env["HOME"] = env["TMPDIR"] = str(base)
        for k in ("JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR", "IPYTHONDIR", "MPLCONFIGDIR"):
            env[k] = str(base / k.lower())
        if account is not None:   # base 是批改程序建的（0700）：交给那个账号，它只能写这里
            for folder in (base, work):
                os.chown(folder, *account)
    with _LOCK:   # 在锁里检查并启动：stop_all 之后不会再漏网一个
        if _STOPPING.is_set():
            return RunOutcome(-1, b"", "批改已中断")
        who = {} if account is None else {"user": account[0], "group": account[1], "extra_groups": []}
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, cwd=str(base),
                                start_new_session=True, **who)
        _RUNNING.add(proc)
    try:
        try:
            proc.stdin.write(request)   # runner 一开始就读完标准输入
            proc.stdin.close()
        except BrokenPipeError:
            pass
        out, err, too_big, timed_out = _pump(proc, time.monotonic() + limits.wall_clock())
    finally:
        # 结束 runner 的进程组：沙箱里这会结束整个沙箱（bwrap 是组长）；沙箱外，
        # 学生用 setsid 另起的进程结束不了
        try:
            os.killpg(proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        with _LOCK:
            _RUNNING.discard(proc)
    code = None if timed_out else proc.returncode
    return RunOutcome(code, out, err.decode("utf-8", "replace"), too_big)
