"""测试用的分叉运行器：一个预先 import 好 torch 的 Python 进程，替测试“用全新的 Python 运行一个程序”。

抄下来的页面程序（test_code_cells）和练习的起始代码（test_exercise_code）每个都要一个全新的 Python 进程，
每个进程先 import torch（本机约 1.7 CPU 秒），二十来个程序就是半分钟多的 CPU。这里与构建的内核母体
（tools/zygote.py）同一个办法：母体只 import 一次 torch 和 numpy，每个程序由它 fork 出一个子进程来运行。
子进程看到的和 `python 程序.py` 一样：
- `__name__ == "__main__"`、`sys.argv == [程序]`、`sys.path[0]` 是程序所在的目录、工作目录和环境变量是请求给的；
- 标准输出、标准错误各写进一个文件（文件描述符 1、2 本身被换掉，C 代码写的也在里面），标准输入是 /dev/null；
- 没接住的异常照常打印回溯、退出码 1；`sys.exit(n)` 的退出码照常；atexit 注册的函数照常运行；
- 母体 import torch、numpy 时发出的警告（全新的进程 import 时也会打印到标准错误）算在每个程序的标准错误里，
  不会因为母体已经 import 过而被吞掉。
用户命名空间是空的：程序没写 `import torch` 就用不了 torch。测试 tests/test_forkrun.py 拿同一批程序
对照真正的全新 Python。

协议：标准输入每行一个 JSON 请求 {"script", "cwd", "env", "stdout", "stderr"}，标准输出先回 {"pid"}，
程序结束后回 {"returncode"}（被信号结束时是负的信号编号，同 subprocess）。标准输入关闭时退出。
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

PRELOAD = ("torch", "numpy")


# ---------------------------------------------------------------- 母体（python tests/forkrun.py）

def _child(request: dict) -> None:
    """在 fork 出的子进程里运行一个程序，然后以它的退出码结束（不回到母体的循环）。"""
    import atexit
    import runpy
    import traceback

    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, key in ((1, "stdout"), (2, "stderr")):
            target = os.open(request[key], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        sys.stderr.write(request["import_warnings"])
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


def serve() -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for name in PRELOAD:
            __import__(name)
    import_warnings = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line)
                              for w in caught)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        request["import_warnings"] = import_warnings
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)
    return 0


# ---------------------------------------------------------------- 测试这一边

class ForkRunner:
    """母体的客户端：run() 的用法和结果同 subprocess.run([sys.executable, script], capture_output=True, text=True)。

    env 是启动母体的环境：sys.path 在母体启动时由它的 PYTHONPATH 定下，所以每个请求的 PYTHONPATH 必须与它相同。
    程序的输出先写在母体自己的临时目录里（不写进程序的工作目录）。"""

    def __init__(self, env: dict[str, str]):
        self.env = dict(env)
        self.outputs = Path(tempfile.mkdtemp(prefix="forkrun-"))
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=self.env)
        self._pending = b""
        if self._reply(timeout=300) != {"ready": True}:
            raise RuntimeError("分叉运行器没能启动")

    def _reply(self, timeout: float) -> dict | None:
        """母体回的下一行（JSON）；timeout 秒内没有回就是 None。"""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"分叉运行器意外结束（退出码 {self.proc.wait()}）")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def run(self, script: Path, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        if env.get("PYTHONPATH") != self.env.get("PYTHONPATH"):
            raise ValueError("请求的 PYTHONPATH 与母体的不同：母体的 sys.path 已按它自己的 PYTHONPATH 定下")
        out, err = self.outputs / "stdout", self.outputs / "stderr"
        request = {"script": str(script), "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err)}
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        pid = self._reply(timeout=60)["pid"]
        done = self._reply(timeout)
        if done is None:
            os.kill(pid, signal.SIGKILL)
            self._reply(timeout=60)
            raise subprocess.TimeoutExpired([str(script)], timeout)
        return subprocess.CompletedProcess([str(script)], done["returncode"], out.read_text(encoding="utf-8"),
                                           err.read_text(encoding="utf-8", errors="replace"))

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        shutil.rmtree(self.outputs, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(serve())
