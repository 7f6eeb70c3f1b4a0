"""测试起的子进程：Ctrl-C 照常送到，仓库之外的环境不带本仓库的痕迹。"""

from __future__ import annotations

import os
import signal

# 仓库之外的全新环境里不该有的变量。PYTHONDONTWRITEBYTECODE：这台机器的环境里设了它，全新环境又是
# --no-compile 装的，于是每个内核都要把 torch 的几千个 .py 从头编译一遍（每次约 5 秒）；读者的 pip 默认会编译
DIRTY = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")


def ctrl_c_reaches_it() -> None:
    """subprocess.Popen 的 preexec_fn：子进程的 SIGINT 恢复默认处理，和在终端前台运行时一样。

    不在终端前台启动的 make test（例如 `make test &`，或 nohup 之下）继承的是“忽略 SIGINT”，
    Python 看到被忽略的 SIGINT 就不装 KeyboardInterrupt：发 SIGINT 模拟 Ctrl-C 的测试便会失败，
    失败与否取决于测试是怎样被启动的。给要被按 Ctrl-C 的子进程用它。"""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def clean_env() -> dict[str, str]:
    """不带本仓库痕迹的环境变量（没有 PYTHONPATH、VIRTUAL_ENV），第一次 import 时照常写 .pyc。"""
    return {k: v for k, v in os.environ.items() if k not in DIRTY}
