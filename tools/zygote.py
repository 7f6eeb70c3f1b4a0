"""预先 import 好 torch 的“内核母体”：每页仍是一个全新的内核进程，只是不必每次都重新 import torch。

冷构建里最贵的不是执行单元，而是每页一个内核：启动 Python、import ipykernel，再在第一个单元里
`import torch`（这台机器上单是 torch 就要约 2 秒 CPU）。九页就是九遍。这里的做法与 Android 的 zygote、
Python 的 forkserver 相同：

- 每个预执行工作进程先启动一个母体进程（`python tools/zygote.py [torch] [matplotlib]`），它只做一件事：
  import `PRELOAD` 里的模块（IPython、ipykernel 的内核程序），页面用到 torch 时再加上 torch（`preload_for`：
  要执行的页面里有一页的代码提到 torch 或 minigpt；测试用的小书多半用不到它，不必为它花 2 秒 CPU）。
  页面画图时（提到 matplotlib 或 minigpt）再加上 matplotlib 的核心模块（`MATPLOTLIB`，每页省约 0.4 秒 CPU），
  但有两条限制：不 import pyplot 和 inline 后端（`matplotlib_inline.backend_inline` 在 import 时向当时的
  IPython 注册画图钩子，母体里没有 IPython，钩子就丢了），所以后端仍由内核按原样选定；matplotlib 在 import 时
  读 MPLBACKEND 与字体缓存，所以等第一个内核请求到来才 import（那时构建脚本已建好字体缓存），MPLBACKEND 取
  这个请求的环境，没有时取 ipykernel 自己会设的 inline 后端（`INLINE_BACKEND`）。然后等待请求。
  母体不执行任何页面的代码、不建 zmq 上下文、不开线程。
- 要启动内核时，jupyter_client 照常准备好连接文件和命令行（`python -m ipykernel_launcher -f 连接文件`）；
  `ZygoteKernelManager` 在 jupyter_client 留给子类的位置（`_async_launch_kernel`）把这条命令交给母体，
  母体 fork 出一个子进程：新会话、页面所在目录、内核该有的环境变量与命令行，然后运行与
  `ipykernel_launcher` 相同的入口。这个子进程就是这一页的内核：用户命名空间是空的，页面之间互不可见，
  执行完照常关闭。
- 命令不是本解释器的 `-m ipykernel_launcher` 时（别的内核），照常由 jupyter_client 启动。

母体的协议：标准输入每行一个 JSON 请求 {"argv", "env", "cwd"}，标准输出每行回一个 {"pid"}；标准输入关闭时
结束它的所有内核并退出。内核由母体收割（SIGCHLD 设为忽略，不留僵尸）。

同一个母体还有一种用法，给测试用（tests/support/forkrun.py 的 ForkRunner）：`python tools/zygote.py --scripts torch numpy`
预先 import 命令行上的模块，然后每个请求 fork 一个子进程“用全新的 Python 运行一个程序”（抄下来的页面程序、
练习的起始代码），等它结束、回报退出码（serve_scripts）。子进程看到的和 `python 程序.py` 一样：
- `__name__ == "__main__"`、`sys.argv == [程序]`、`sys.path[0]` 是程序所在的目录、工作目录和环境变量是请求给的；
- 标准输出、标准错误各写进一个文件（文件描述符 1、2 本身被换掉，C 代码写的也在里面），标准输入是 /dev/null；
- 没接住的异常照常打印回溯、退出码 1；`sys.exit(n)` 的退出码照常；atexit 注册的函数照常运行；
- 母体 import 时发出的警告（全新的进程 import 时也会打印到标准错误）算在每个程序的标准错误里，
  不会因为母体已经 import 过而被吞掉。
用户命名空间是空的：程序没写 `import torch` 就用不了 torch。这种用法的协议：标准输入每行一个 JSON 请求
{"script", "cwd", "env", "stdout", "stderr"}，母体先回 {"ready"}，每个请求先回 {"pid"}，程序结束后回 {"returncode"}
（被信号结束时是负的信号编号，同 subprocess）。标准输入关闭时退出。
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

# 母体预先 import 的模块：每个内核都要的那几个；页面用到 torch 时再加上它（preload_for）
PRELOAD = ("IPython", "ipykernel.kernelapp")
LAUNCHER = ["-m", "ipykernel_launcher"]
USES_TORCH = re.compile(r"\b(torch|minigpt)\b")
# 页面画图时（命令行上写 matplotlib）第一个内核请求到来时 import 的模块：matplotlib 的核心，不含 pyplot 与 inline 后端
MATPLOTLIB = ("matplotlib", "matplotlib.figure", "matplotlib.font_manager", "matplotlib.backends.backend_agg",
              "matplotlib.backends.backend_svg", "matplotlib.backends.backend_pdf")
USES_MATPLOTLIB = re.compile(r"\b(matplotlib|minigpt)\b")
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"  # ipykernel 在 MPLBACKEND 没有设时设的值
SCRIPTS = "--scripts"  # 命令行的第一个参数是它时：测试的分叉运行器（serve_scripts）


def preload_for(code: list[str]) -> list[str]:
    """除 PRELOAD 之外还要预先 import 的模块：要执行的代码（各页代码单元的源码）里提到 torch 或 minigpt 时有 torch，
    提到 matplotlib 或 minigpt 时有 matplotlib（即 MATPLOTLIB 那一组）。
    只影响快慢：内核里照样 import，页面看到的状态与照常启动的内核相同。"""
    preload = []
    if any(USES_TORCH.search(source) for source in code):
        preload.append("torch")
    if any(USES_MATPLOTLIB.search(source) for source in code):
        preload.append("matplotlib")
    return preload


def _import_matplotlib(env: dict[str, str]) -> None:
    """（母体里，第一个内核请求到来时）import MATPLOTLIB。matplotlib 在 import 时把 MPLBACKEND 读进 rcParams：
    取内核的环境里的值，没有时取 ipykernel 启动内核时会设的值，与照常启动的内核里读到的相同。"""
    import importlib

    # 改母体自己的环境无妨：fork 出的内核按请求把环境整个重设（_kernel_child）
    os.environ["MPLBACKEND"] = env.get("MPLBACKEND") or INLINE_BACKEND
    for name in MATPLOTLIB:
        importlib.import_module(name)


def _enter(request: dict) -> None:
    """（fork 出的子进程里）换到请求给的工作目录和环境变量（整个替换，不留母体的）。"""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])


def _kernel_child(request: dict) -> None:
    """（fork 出的子进程里）变成这一页的内核；永不返回。"""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # 内核自己的 subprocess 要能等到子进程
        os.setsid()  # 与 jupyter_client 启动内核时一样：新会话，打断内核时发给整个进程组
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)  # 标准输出是母体回话用的管道：内核的标准输出改为母体的 stderr
        _enter(request)
        import importlib.util

        # 与 `python -m ipykernel_launcher …` 一样：argv[0] 是 ipykernel_launcher.py 的完整路径
        sys.argv = [importlib.util.find_spec("ipykernel_launcher").origin, *request["argv"][3:]]
        from ipykernel import kernelapp as app

        app.launch_new_instance()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001  内核启动失败：打印原因，jupyter_client 会发现它已结束
        import traceback

        traceback.print_exc()
    finally:
        try:
            import atexit

            atexit._run_exitfuncs()  # 与正常退出一样运行 atexit（内核的清理在这里）
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve() -> int:
    """母体：import 命令行上的模块与 PRELOAD，然后按请求 fork 内核。"""
    import importlib

    script_dir = str(Path(__file__).resolve().parent)
    if sys.path and sys.path[0] == script_dir:  # 与 ipykernel_launcher 一样，不把脚本所在目录留在 sys.path 上
        del sys.path[0]
    later = "matplotlib" in sys.argv[1:]  # 等第一个请求（见 _import_matplotlib）
    for name in (*(n for n in sys.argv[1:] if n != "matplotlib"), *PRELOAD):
        importlib.import_module(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # 结束的内核由系统自动收割
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    kernels: list[int] = []
    for line in sys.stdin:
        request = json.loads(line)
        if later:
            _import_matplotlib(request["env"])
            later = False
        pid = os.fork()
        if pid == 0:
            replies.close()
            _kernel_child(request)
        kernels.append(pid)
        replies.write(json.dumps({"pid": pid}) + "\n")
    for pid in kernels:  # 工作进程走了：它的内核一个不留
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return 0


def _gone(pid: int) -> bool:
    """进程已结束（不存在，或是等待收割的僵尸）。"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return stat[stat.rindex(")") + 2] in "ZX"


class ForkedKernel:
    """母体 fork 出的内核进程，按 jupyter_client 的本地 provisioner 使用 subprocess.Popen 的方式提供同样的方法。"""

    stdin = stdout = stderr = None

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and _gone(self.pid):
            self.returncode = 0  # 退出码归母体（它不是我们的子进程）：只知道它结束了
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.02)  # 轮询“进程已结束”这个事件
        return self.returncode

    def send_signal(self, signum: int) -> None:
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    """工作进程这一侧：启动母体，请它 fork 内核。"""

    def __init__(self, preload: list[str] = (), env: dict[str, str] | None = None):
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *preload],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def fork_kernel(self, argv: list[str], env: dict[str, str], cwd: str) -> int:
        self.proc.stdin.write(json.dumps({"argv": argv, "env": env, "cwd": cwd}) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"内核母体意外退出（退出码 {self.proc.wait()}）")
        return json.loads(reply)["pid"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


ACTIVE: Zygote | None = None  # 本工作进程的母体（kernel_manager_class 由 nbclient 构造，只能从这里取）


def kernel_manager_class():
    """返回一个 jupyter_client KernelManager 的子类：本解释器的 ipykernel 内核交给母体 fork。"""
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner

    class ZygoteKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd, **kw):  # jupyter_client 注明供子类覆盖
            provisioner = self.provisioner
            if (ACTIVE is None or not isinstance(provisioner, LocalProvisioner)
                    or kernel_cmd[:3] != [sys.executable, *LAUNCHER]):
                return await super()._async_launch_kernel(kernel_cmd, **kw)
            options = LocalProvisioner._scrub_kwargs(kw)
            env = dict(options.get("env") or os.environ)
            env["JPY_PARENT_PID"] = str(os.getpid())  # jupyter_client 启动内核时也这样设
            cwd = str(options.get("cwd") or os.getcwd())
            pid = ACTIVE.fork_kernel(list(kernel_cmd), env, cwd)
            provisioner.process = ForkedKernel(pid)
            provisioner.pid = provisioner.pgid = pid
            provisioner.cwd = cwd
            self._reconcile_connection_info(provisioner.connection_info)

    return ZygoteKernelManager


# ---------------------------------------------------------------- 程序模式（测试的分叉运行器）

def _script_child(request: dict, import_warnings: str) -> None:
    """（fork 出的子进程里）像 `python 程序.py` 一样运行一个程序，然后以它的退出码结束；永不返回。"""
    import atexit
    import runpy
    import traceback

    code = 1
    try:
        _enter(request)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, key in ((1, "stdout"), (2, "stderr")):
            target = os.open(request[key], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        sys.stderr.write(import_warnings)
        script = os.path.abspath(request["script"])
        sys.argv = [request["script"]]
        sys.path[0] = os.path.dirname(script)
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:  # noqa: BLE001  和解释器一样：打印回溯，退出码 1
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def serve_scripts(modules: list[str]) -> int:
    """程序模式的母体：import modules（记下 import 时的警告），然后一个请求一个程序，依次运行。
    sys.path[0] 留着（是本脚本所在的目录）：子进程把它换成程序所在的目录，同 `python 程序.py`。"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for name in modules:
            __import__(name)
    import_warnings = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line)
                              for w in caught)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _script_child(request, import_warnings)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(serve_scripts(sys.argv[2:]) if sys.argv[1:2] == [SCRIPTS] else serve())
