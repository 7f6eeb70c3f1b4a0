"""测试用的分叉运行器：替测试“用全新的 Python 运行一个程序”，但不必每次都 import torch。

抄下来的页面程序（test_code_cells）和练习的起始代码（test_exercise_code）每个都要一个全新的 Python 进程，
每个进程先 import torch（本机约 1.7 CPU 秒），二十来个程序就是半分钟多的 CPU。母体就是构建用的那一个
（tools/zygote.py 的程序模式：`python tools/zygote.py --scripts torch numpy`）：它只 import 一次 torch 和 numpy，
每个程序由它 fork 出一个子进程来运行，子进程看到的和 `python 程序.py` 一样（见 tools/zygote.py 的说明）。
这里只是测试这一边的客户端。测试 tests/test_forkrun.py 拿同一批程序对照真正的全新 Python。
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
from pathlib import Path

from support.book import REPO

ZYGOTE = REPO / "tools" / "zygote.py"
PRELOAD = ("torch", "numpy")


class ForkRunner:
    """母体的客户端：run() 的用法和结果同 subprocess.run([sys.executable, script], capture_output=True, text=True)。

    env 是启动母体的环境：sys.path 在母体启动时由它的 PYTHONPATH 定下，所以每个请求的 PYTHONPATH 必须与它相同。
    程序的输出先写在母体自己的临时目录里（不写进程序的工作目录）。"""

    def __init__(self, env: dict[str, str]):
        self.env = dict(env)
        self.outputs = Path(tempfile.mkdtemp(prefix="forkrun-"))
        self.proc = subprocess.Popen([sys.executable, str(ZYGOTE), "--scripts", *PRELOAD], stdin=subprocess.PIPE,
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
