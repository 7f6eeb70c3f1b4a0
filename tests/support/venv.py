"""仓库之外的全新虚拟环境（作业包、读者笔记本、sdist 的测试共用一个，见 conftest 的 fresh_venv）。"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.book import REPO
from support.processes import clean_env


def torch_wheel_dir() -> Path:
    """本机 torch wheel 所在的目录：环境变量 TORCH_WHEEL_DIR，或 pip 配置里的 find-links（本机是 /opt/wheels）。"""
    import torch

    pattern = f"torch-{torch.__version__}-*.whl".replace("+", "*")
    candidates = [os.environ.get("TORCH_WHEEL_DIR", "")]
    listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    candidates += [v for line in listing.splitlines() if "find-links" in line
                   for v in line.split("=", 1)[1].strip("'\" ").split()]
    candidates += os.environ.get("PIP_FIND_LINKS", "").split()
    for folder in filter(None, candidates):
        path = Path(folder.removeprefix("file://"))
        if path.is_dir() and list(path.glob(pattern)):
            return path
    pytest.fail(f"找不到本机的 torch wheel（{pattern}）：把它所在的目录设为环境变量 TORCH_WHEEL_DIR")


@dataclass
class FreshVenv:
    python: Path
    kernel: str            # 指向这个环境的内核规格名
    jupyter_path: Path     # 让 Jupyter 找到它：JUPYTER_PATH

    def pip(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(self.python), "-m", "pip", *args], cwd=cwd, env=clean_env(),
                              capture_output=True, text=True, timeout=1200)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc


def create_fresh_venv(root: Path) -> FreshVenv:
    """在 root 下建全新的虚拟环境，只装 torch（本机 wheel，与 .venv 同版本）、numpy、matplotlib、ipykernel、
    setuptools（同 .venv 的版本：测试用 --no-build-isolation 从 sdist 安装）——没有本书的包；
    再写一个指向它的内核规格。"""
    from importlib.metadata import version

    assert REPO not in root.parents
    venv = root / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", str(venv)], check=True)
    fresh = FreshVenv(venv / "bin" / "python", "book-fresh-venv", root / "jupyter")
    pins = [f"{name}=={version(name)}" for name in ("torch", "numpy", "matplotlib", "ipykernel", "setuptools")]
    # --no-compile：不预先编译几千个用不到的 .pyc（省下两三分钟）；用到的模块在第一次 import 时照常编译、写入
    fresh.pip("install", "--quiet", "--no-compile", "--find-links", str(torch_wheel_dir()), *pins)
    spec = fresh.jupyter_path / "kernels" / fresh.kernel
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(fresh.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "fresh venv", "language": "python",
        "env": {"PYTHONDONTWRITEBYTECODE": ""}}))  # 空值即没有设：用到的模块第一次 import 时编译、写入（见 DIRTY）
    return fresh
