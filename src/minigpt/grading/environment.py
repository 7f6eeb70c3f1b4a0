"""批改环境的问题是老师的问题，不是学生的（见「教师指南」的「批改」一节）。

学生的代码碰到资源上限，是这份提交的事；可是老师装了 CUDA 版的 PyTorch（Linux 上直接 ``pip install`` 就是它），
或者给的 ``--memory`` 太小，内核连 ``import torch`` 都做不完，那么每份提交都会“碰到上限”或“内核崩溃”，
而错不在学生。这里分辨两者：一份提交出了这类问题（内核起不来、碰到上限、内核崩溃）时，在同样的上限下
再运行一份只做正确答案也要做的事的小笔记本（``CALIBRATION``）。它也出问题，就是批改环境的问题：这份提交
不给成绩（CSV 里那一行留空），原因和怎么办写在状态里；它没问题，问题就在学生的代码里，照常判分。
"""

from __future__ import annotations

import dataclasses
import tempfile
import threading
from pathlib import Path

from . import sandbox

# 一份正确的笔记本也要做的事：导入 torch 和本包、生成题目数据、做几次注意力与 LayerNorm 的计算
CALIBRATION = [
    "import torch\nimport minigpt.homework, minigpt.attention, minigpt.layers",
    "from minigpt.homework import exercise_inputs\ndata = exercise_inputs()",
    "q = k = v = torch.randn(2, 4, 8, 16)\n"
    "out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)\n"
    "weights = torch.softmax(q @ k.transpose(-2, -1) / 4, dim=-1)\n"
    "normed = torch.nn.LayerNorm(16)(out)",
]
# 这类问题可能是批改环境造成的：内核起不来、碰到上限、内核崩溃
SUSPECT_KINDS = ("limit", "crash")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CALIBRATION_SECONDS = 120       # 校准笔记本每个单元与整份的时限至少这么多秒
SETUP_NOTE = "setup_problem"   # 写在 SubmissionResult.notes 里：这一行因批改环境的问题留空


def torch_build() -> tuple[str, str | None]:
    """批改用的 PyTorch：(版本, CUDA 版本)；只用 CPU 的版本 CUDA 版本是 None。"""
    import torch

    return torch.__version__, torch.version.cuda


def cpu_torch_advice() -> str:
    """怎样换成只用 CPU 的 PyTorch（Linux 与 Windows；macOS 上 PyPI 的 PyTorch 本来就只用 CPU）。"""
    version, _ = torch_build()
    plain = version.split("+")[0]
    return (f"在批改用的虚拟环境里先 pip uninstall torch，再 pip install torch=={plain} --index-url {CPU_INDEX}"
            "（Linux 与 Windows；macOS 上 pip install torch 本来就是只用 CPU 的版本）")


def calibration_notebook(folder: Path) -> Path:
    """在 folder 里写出校准用的小笔记本（只有代码单元），返回它的路径。"""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in CALIBRATION])
    path = folder / "calibration.ipynb"
    nbformat.write(nb, path)
    return path


def _trouble(result) -> str | None:
    """校准笔记本的结果里出了什么问题（没有问题时 None）。"""
    if not result.graded or "kernel_failed" in result.notes:
        return result.problem or "内核起不来"
    if result.cell_problems:
        p = result.cell_problems[0]
        return f"代码单元 {p.cell}：{p.exception or ''} {p.message}".strip()
    return None


def calibrate(limits: sandbox.Limits, sandboxed: bool) -> str | None:
    """在这组上限下运行校准笔记本：一份正确的笔记本能运行就返回 None，否则返回出了什么问题。
    时限放宽到至少 CALIBRATION_SECONDS：要查的是内存与安装，机器一时忙不算批改环境的问题。"""
    from .judge import grade_submission

    roomy = dataclasses.replace(limits, timeout=max(limits.timeout, CALIBRATION_SECONDS),
                                notebook_timeout=max(limits.notebook_timeout, CALIBRATION_SECONDS))
    with tempfile.TemporaryDirectory(prefix="minigpt-calibrate-") as tmp:
        return _trouble(grade_submission(calibration_notebook(Path(tmp)), roomy, sandboxed=sandboxed))


def setup_problem(limits: sandbox.Limits, sandboxed: bool) -> str | None:
    """批改环境的问题（给老师看的一段话：出了什么事、怎么办）；环境没问题时 None。"""
    trouble = calibrate(limits, sandboxed)
    if trouble is None:
        return None
    version, cuda = torch_build()
    gib = f"{limits.memory / 2**30:g}"
    what = (f"批改环境的问题，不是学生的：在这组上限下（--memory {gib} GiB），一份只做正确答案也要做的事的"
            f"笔记本也运行不了（{trouble}）。")
    if cuda is not None:
        what += (f"批改用的 PyTorch 是 CUDA 版（torch {version}，CUDA {cuda}）：它的库很大，"
                 f"每个进程 {gib} GiB 的地址空间装不下。批改只用 CPU：{cpu_torch_advice()}。")
    bigger = dataclasses.replace(limits, memory=limits.memory * 4)
    if calibrate(bigger, sandboxed) is None:
        what += f"或者调高内存上限：--memory {bigger.memory / 2**30:g} 时可以运行。"
    else:
        what += (f"调高到 --memory {bigger.memory / 2**30:g} 也不行：请检查批改用的 Python 环境"
                 "（python -m minigpt.grade 用的就是它）能否 import torch 和 minigpt。")
    return what + "这份提交没有成绩（成绩册里留空）；解决之后重新批改它。"


class SetupCheck:
    """一次批改里的环境检查：第一份出了可疑问题的提交触发一次校准，结论之后共用（线程安全）。"""

    def __init__(self, limits: sandbox.Limits, sandboxed: bool):
        self.limits, self.sandboxed = limits, sandboxed
        self._lock = threading.Lock()
        self._checked = False
        self.problem: str | None = None

    def blame(self, result):
        """result 出了可疑的问题、而批改环境连校准笔记本都运行不了时，把它改成“无法批改”
        （各题“出错”、CSV 里留空），原因写在 problem 里；否则原样返回。"""
        suspect = "kernel_failed" in result.notes or any(
            p.kind in SUSPECT_KINDS for p in result.cell_problems)
        if not suspect:
            return result
        with self._lock:
            if not self._checked:
                self.problem = setup_problem(self.limits, self.sandboxed)
                self._checked = True
        if self.problem is None:
            return result
        from .results import ExerciseResult

        result.graded = False
        result.problem = self.problem
        result.exercises = [ExerciseResult(e.key, e.title, "error", self.problem, "SetupProblem")
                            for e in result.exercises]
        result.notes = [n for n in result.notes if n != "kernel_failed"] + [SETUP_NOTE]
        result.sha256 = ""   # 不记哈希：以后加 --resume 时它会重新批改，不沿用这一行
        return result
