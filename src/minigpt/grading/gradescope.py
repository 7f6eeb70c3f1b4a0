"""在 Gradescope 上批改作业（见「教师指南」的「在 Gradescope 上批改」一节）。

Gradescope 的编程作业用一个“自动批改程序” zip：根目录里的 ``setup.sh`` 在构建镜像时运行一次（装软件），
``run_autograder`` 对每份提交运行一次（以 root，工作目录 /autograder）：学生交的文件在
``/autograder/submission/``，结果写到 ``/autograder/results/results.json``。本模块做这两件事：

- ``python -m minigpt.grading.gradescope build --wheel W --out Z``：做出自动批改程序 zip（``make dist``
  对两种语言各做一个，各带自己语言的 wheel：英文的 wheel 给出英文的说明）；
- ``python -m minigpt.grading.gradescope run``：``run_autograder`` 调用它。用与命令行批改程序相同的
  ``grade_submission``（同一个探针、同一个判分）批改那份笔记本，每道小题写成 results.json 里的一项
  （名字、得分、满分、学生看到的说明），再加上总分。

学生的代码在容器里也不被信任：容器允许时关在 bubblewrap 沙箱里（与命令行批改相同）；不允许时（Docker 通常
不让建用户命名空间）以一个普通用户号运行，它写不了 /autograder/results，也改不了批改程序和它的 Python 环境。
results.json 只由批改程序在学生的进程全部结束之后写出（先删掉旧的）。批改环境本身的问题（CUDA 版的 PyTorch、
内存上限太小，见 environment.py）不给学生打 0 分：不写 results.json，Gradescope 把这次运行记为
自动批改失败，原因写在老师看得到的输出里。
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from . import sandbox

ROOT = Path("/autograder")
VENV = "/opt/minigpt-autograder"   # setup.sh 把 Python 环境装在这里（root 所有，别人只能读）
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

SETUP_SH = """\
#!/usr/bin/env bash
# {title}：Gradescope 构建镜像时以 root 运行一次，装好批改要用的一切
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# bubblewrap：容器允许时，学生的代码关在这个沙箱里运行；不允许时换成一个普通用户号运行
apt-get install -y -q --no-install-recommends bubblewrap ca-certificates
# 本书的包要 Python 3.11 或更新（Ubuntu 22.04 自带的 python3 是 3.10）
PY=""
for candidate in python3.13 python3.12 python3.11 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    PY="$candidate"
    break
  fi
done
if [ -z "$PY" ]; then
  apt-get install -y -q --no-install-recommends python3.11
  PY=python3.11
fi
apt-get install -y -q --no-install-recommends "$(basename "$PY")-venv"
"$PY" -m venv {venv}
# 先装只用 CPU 的 PyTorch（与本书锁定的版本相同）：从 PyPI 装会带来几个 GB 的 CUDA 库。
# 不想在构建时下载它：把事先下载好的 torch {torch} CPU 版 wheel 放进 zip，这一行换成 pip install ./那个文件名
{venv}/bin/pip install --no-cache-dir --quiet "torch=={torch}" --index-url {index}
{venv}/bin/pip install --no-cache-dir --quiet "./{wheel}[grade]"
chmod -R go-w {venv}
# 核对：PyTorch 只用 CPU，本书的包和批改程序都导入得了
{venv}/bin/python -I -m minigpt.grading.gradescope check
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# {title}：Gradescope 对每份提交以 root 运行它一次
# （上传之前在本机试它：MINIGPT_AUTOGRADER_ROOT 换掉 /autograder，
#  MINIGPT_AUTOGRADER_PYTHON 换掉 setup.sh 装的 Python；
#  步骤见教师指南「在 Gradescope 上批改」）
cd /
exec "${{MINIGPT_AUTOGRADER_PYTHON:-{venv}/bin/python}}" -I -m minigpt.grading.gradescope run \\
  --root "${{MINIGPT_AUTOGRADER_ROOT:-/autograder}}"
"""

README = """\
# {title}

把这个 zip 原样上传到 Gradescope 编程作业的“配置自动批改程序”页（步骤见本书「教师指南」的
「在 Gradescope 上批改」一节）。学生交的是作业笔记本 `homework_student.ipynb`（文件名不限，只要一个 .ipynb）。

- `setup.sh`：构建镜像时装 Python、只用 CPU 的 PyTorch {torch} 和本书的包 `{wheel}`（PyTorch 从它的 CPU 轮子
  索引下载；不想下载时，把事先下载好的 torch {torch} CPU 版 wheel 放进 zip，`setup.sh` 里装 PyTorch 的那一行
  换成 `pip install ./` 加它的文件名）；
- `run_autograder`：批改一份提交，每道小题的得分和说明写进 results.json；
- `{wheel}`：本书的包（检查器与批改程序）。
"""

TITLE = "《Attention 机制与 Transformer Block》的作业自动批改"


# ---------------------------------------------------------------- 做出 zip

def autograder_files(wheel_name: str, torch_version: str) -> dict[str, str]:
    """zip 根目录里的三个文本文件：{文件名: 内容}。"""
    fields = {"title": TITLE, "venv": VENV, "torch": torch_version, "index": CPU_INDEX, "wheel": wheel_name}
    return {"setup.sh": SETUP_SH.format(**fields), "run_autograder": RUN_AUTOGRADER.format(**fields),
            "README.md": README.format(**fields)}


def build_zip(wheel: Path, torch_version: str, out: Path, stamp: tuple = (2026, 1, 1, 0, 0, 0)) -> Path:
    """写出自动批改程序 zip：setup.sh、run_autograder、README.md 和 wheel，都在 zip 的根目录
    （Gradescope 只在根目录找 setup.sh 与 run_autograder）。时间戳固定，同样的输入得到同样的 zip。"""
    entries = {name: (text.encode(), 0o755 if name != "README.md" else 0o644)
               for name, text in autograder_files(wheel.name, torch_version).items()}
    entries[wheel.name] = (wheel.read_bytes(), 0o644)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, (data, mode) in entries.items():
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = mode << 16
            zf.writestr(info, data)
    return out


# ---------------------------------------------------------------- 批改一份提交

def find_notebook(submission: Path) -> tuple[Path | None, str]:
    """提交文件夹里唯一的笔记本；没有、或者不止一个时返回 (None, 给学生的说明)。"""
    found = sorted(p for p in submission.rglob("*.ipynb")
                   if p.is_file() and ".ipynb_checkpoints" not in p.parts) if submission.is_dir() else []
    if len(found) == 1:
        return found[0], ""
    if not found:
        return None, "提交里没有 .ipynb 笔记本：请交作业笔记本（homework_student.ipynb）"
    names = "、".join(p.relative_to(submission).as_posix() for p in found[:5])
    return None, f"提交里有 {len(found)} 个笔记本（{names}）：请只交一个，批改程序不替你挑"


def account_problem(uid: int) -> str | None:
    """给学生代码用的普通用户号能不能运行批改要用的 Python（读得到解释器、虚拟环境和本书的包）。"""
    code = "import minigpt.grading.runner, nbclient, ipykernel"
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", code], user=uid, group=uid, extra_groups=[],
                              capture_output=True, text=True, timeout=120, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{type(err).__name__}: {err}"
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or ["?"])[-1][:200]
    return None


def _account_pids(uid: int) -> list[int]:
    """这个用户号还活着的进程（已经结束、只等父进程收尸的僵尸不算：它们什么也做不了）。"""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid != uid:
                    continue
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                pids.append(int(entry))
    return pids


def end_account(uid: int) -> int:
    """结束这个用户号的所有进程（学生留在后台的）：以它的身份 kill(-1)，直到一个不剩。返回结束前有几个。"""
    before = len(_account_pids(uid))
    for _ in range(20):
        if not _account_pids(uid):
            break
        pid = os.fork()
        if pid == 0:   # 子进程：换成那个用户号，向它能发信号的所有进程（就是它自己的）发 SIGKILL
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        time.sleep(0.05)
    return before


# 谁都能写的临时文件夹：换用户号运行时（没有沙箱）学生的代码也能在这里留下文件
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm")


def remove_account_files(uid: int, roots=SHARED_TMP) -> int:
    """删掉这个用户号在共享的临时文件夹里留下的文件和文件夹（它的进程都结束之后调用），返回删了几个。
    同一台机器上接着批改的下一份提交就看不到它们（r36t2 第 3 条：上一份留下的 /tmp/fill 让下一份的单元出错）。
    只走进别人也能写的文件夹（学生的代码只能在那里建东西），不跟随符号链接。"""
    removed = 0
    for root in roots:
        stack = [root]
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:
                continue
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if info.st_uid == uid:
                    if stat.S_ISDIR(info.st_mode):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        try:
                            os.unlink(entry.path)
                        except OSError:
                            continue
                    removed += 1
                elif stat.S_ISDIR(info.st_mode) and info.st_mode & 0o002:
                    stack.append(entry.path)
    return removed


def isolation(mode: str) -> tuple[bool, int | None, str | None]:
    """学生的代码怎样隔离：(在沙箱里, 沙箱外所用的用户号, 做不到时的原因)。
    mode 是 auto（有沙箱用沙箱，否则换用户号）、sandbox 或 account。"""
    if mode in ("auto", "sandbox"):
        reason = sandbox.unavailable()
        if reason is None:
            return True, None, None
        if mode == "sandbox":
            return True, None, reason
    if os.getuid() != 0:
        return False, None, "容器里没有可用的沙箱，批改程序也不是 root，没法换一个普通用户号运行学生的代码"
    uid = sandbox.fresh_uid()
    problem = account_problem(uid)
    if problem:
        return False, uid, (f"普通用户号 {uid} 运行不了批改用的 Python（{problem}）：解释器和虚拟环境要让所有用户"
                            f"读得到（setup.sh 把它们装在 {VENV}）")
    return False, uid, None


def test_entry(e, worth: int) -> dict:
    """results.json 里一道小题的一项：名字、得分、满分、学生看到的说明。"""
    from .report import visible
    from .results import STATUS_TEXT, short_name

    passed = e.status == "passed"
    output = STATUS_TEXT[e.status] + (f"：{visible(e.message)}" if e.message else "")
    return {"name": e.title, "number": short_name(e.key), "score": worth if passed else 0,
            "max_score": worth, "output": output,
            "visibility": "visible", "extra_data": {"key": e.key, "result": e.status}}


def results_json(result, seconds: float, account: bool = False, chosen: bool = False) -> dict:
    """一份提交的 results.json（Gradescope 的格式：score、output、tests[name, score, max_score, output]……）。"""
    from .report import details
    from .results import exercises, total_points

    worth = {e.key: e.points for e in exercises()}
    tests = [test_entry(e, worth[e.key]) for e in result.exercises]
    score = sum(t["score"] for t in tests)
    lines = [f"得分 {score}/{total_points()}，通过 {result.passed}/{len(tests)} 道小题。"
             "批改看的是笔记本从头运行到结束时每个答案变量的值。"]
    lines += [n.strip() for n in details(result, account, chosen)]
    return {"score": score, "execution_time": round(seconds, 1), "output": "\n".join(lines),
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"graded": result.graded, "sandboxed": result.sandboxed}}


def unreadable(message: str):
    """没有可批改的笔记本时的结果：每道题 0 分，说明写在每一项里。"""
    from .results import ExerciseResult, SubmissionResult, exercises

    return SubmissionResult("", graded=False, problem=message,
                            exercises=[ExerciseResult(e.key, e.title, "error", message, "NoNotebook")
                                       for e in exercises()])


def write_results(results_dir: Path, data: dict) -> Path:
    """写 results.json（先写临时文件再改名；文件与文件夹属于 root，别人只能读）。"""
    from .report import write_atomic

    results_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(results_dir, 0o755)
    target = results_dir / "results.json"
    write_atomic(target, json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    os.chmod(target, 0o644)
    return target


def run(root: Path, mode: str, limits: sandbox.Limits) -> int:
    """批改 root/submission 里的笔记本，写 root/results/results.json。返回退出码：0 写好了结果，
    1 批改环境有问题（没有写结果，原因打印在 Gradescope 给老师看的输出里）。"""
    from .environment import SetupCheck
    from .judge import INTERNAL_NOTE, grade_submission, internal_error

    started = time.monotonic()
    os.chdir("/")
    results_dir = root / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "results.json").unlink(missing_ok=True)   # 谁也不能事先放一份进来
    if os.getuid() == 0:
        os.chown(results_dir, 0, 0)
    os.chmod(results_dir, 0o755)
    notebook, message = find_notebook(root / "submission")
    uid = None
    if notebook is None:
        result = unreadable(message)
    else:
        sandboxed, uid, problem = isolation(mode)
        if problem:
            print(f"批改环境的问题：{problem}。这份提交没有批改。", flush=True)
            return 1
        if uid is not None:
            import resource

            sandbox.use_account(uid)
            # 进程数按用户号计：学生的进程继承这个上限（root 自己不受它限制）
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        setup = SetupCheck(limits, sandboxed)
        try:
            result = setup.blame(grade_submission(notebook, limits, sandboxed=sandboxed))
        except Exception as err:   # 批改程序自己的错，不是学生的：不给分，写给老师看
            result = internal_error(notebook, err)
        finally:
            if uid is not None:
                end_account(uid)
                remove_account_files(uid)
        if INTERNAL_NOTE in result.notes:
            # 不写 results.json：Gradescope 记为自动批改失败，老师修好后重新批改；不给学生记 0 分
            print(f"无法批改：{result.problem}", flush=True)
            return 1
        if setup.problem is not None:
            print(setup.problem, flush=True)
            return 1
        where = "在沙箱里运行" if sandboxed else f"以用户号 {uid} 运行"
        print(f"{notebook.name}：{result.points} 分，{where}", flush=True)
    write_results(results_dir, results_json(result, time.monotonic() - started, account=uid is not None,
                                            chosen=mode == "account"))
    return 0


def check() -> int:
    """setup.sh 的最后一步：PyTorch 只用 CPU、批改要用的包都导入得了。"""
    from .environment import cpu_torch_advice, torch_build

    version, cuda = torch_build()
    import ipykernel  # noqa: F401
    import nbclient  # noqa: F401

    if cuda is not None:
        print(f"装上的是 CUDA 版的 PyTorch（torch {version}）：{cpu_torch_advice()}", file=sys.stderr)
        return 1
    reason = sandbox.unavailable()
    sandbox_text = "沙箱 bubblewrap 可用" if reason is None else "沙箱 bubblewrap 在构建时不可用，批改时再看一次"
    print(f"torch {version}（只用 CPU）；{sandbox_text}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minigpt.grading.gradescope",
                                description="Gradescope 上的作业自动批改：做 zip、批改一份提交")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="做出自动批改程序 zip")
    b.add_argument("--wheel", type=Path, required=True, help="本书的 wheel（哪种语言的 wheel，说明就是哪种语言）")
    b.add_argument("--torch", default=None, help="PyTorch 的版本（默认与当前环境的相同，去掉 +cpu 之类的标签）")
    b.add_argument("--out", type=Path, required=True, help="写出的 zip")
    r = sub.add_parser("run", help="批改 ROOT/submission 里的笔记本（run_autograder 调用）")
    r.add_argument("--root", type=Path, default=ROOT, help="默认 /autograder")
    r.add_argument("--isolation", choices=["auto", "sandbox", "account"], default="auto",
                   help="auto：有沙箱用沙箱，否则换一个普通用户号运行学生的代码")
    r.add_argument("--timeout", type=float, default=sandbox.Limits.timeout)
    r.add_argument("--notebook-timeout", type=float, default=sandbox.Limits.notebook_timeout)
    r.add_argument("--memory", type=float, default=sandbox.Limits.memory / 2**30, help="GiB")
    sub.add_parser("check", help="核对批改环境（setup.sh 的最后一步）")
    args = p.parse_args(argv)
    if args.command == "build":
        torch_version = args.torch
        if torch_version is None:
            import torch

            torch_version = torch.__version__.split("+")[0]
        print(build_zip(args.wheel, torch_version, args.out))
        return 0
    if args.command == "check":
        return check()
    limits = sandbox.Limits(timeout=args.timeout, notebook_timeout=args.notebook_timeout,
                            memory=int(args.memory * 2**30))
    return run(args.root.resolve(), args.isolation, limits)


if __name__ == "__main__":
    sys.exit(main())
