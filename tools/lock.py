"""整个 Python 环境的锁：requirements.txt 是直接依赖，requirements.lock 是解析出的全部包（每个都是 ==）。

用法：
  python tools/lock.py            # 刷新锁（make lock）：在临时目录里建全新的虚拟环境，
                                  # 按 requirements.txt 安装，再把装上的每个包连同版本写进 requirements.lock
  python tools/lock.py install --venv .venv
                                  # 按锁安装（make setup）：锁里的包一个不多一个不少（--no-deps），
                                  # 并以可编辑方式装上本书的包 minigpt，最后 pip check 确认依赖自洽；
                                  # 新建的环境分几份同时装（见 install）

改了 requirements.txt（加一个依赖、换一个版本）之后运行 `make lock`，把 requirements.txt 与
requirements.lock 一起提交。tests/test_lock.py 检查两者一致，并从锁建一个全新的环境核对它。
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REQUIREMENTS = REPO / "requirements.txt"
LOCK = REPO / "requirements.lock"

HEADER = """\
# 整个 Python 环境的锁：由 `make lock`（tools/lock.py）从 requirements.txt 在全新的虚拟环境里解析生成，
# 不要手改。make setup 按它安装（--no-deps：锁里有什么就装什么），本书的包 minigpt 另以 `pip install -e .` 安装。
# 改了 requirements.txt 之后运行 make lock，把两个文件一起提交。
"""

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)$")


def canonical(name: str) -> str:
    """包名的规范形式（PEP 503）：大小写、-、_、. 都不区分。"""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> dict[str, str]:
    """读 name==version 行（跳过注释、空行和 -e），返回 {规范包名: 版本}。"""
    pins: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-e"):
            continue
        m = _PIN.match(line)
        if not m:
            raise SystemExit(f"{path.name}: 不是 name==version 形式的一行：{raw!r}")
        pins[canonical(m.group(1))] = m.group(2)
    return pins


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    print("[lock] " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def site_packages(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()


def freeze(python: Path) -> str:
    """环境里的全部包（含 pip 自己），不含可编辑安装的 minigpt。

    只看环境自己的 site-packages（--path）：可编辑安装把仓库的 src/ 放上了 sys.path，那里留着的旧元数据
    （比如改名之前的 src/minigpt.egg-info）会被当成一个装好的包，写进锁里。"""
    return run([str(python), "-m", "pip", "freeze", "--all", "--exclude-editable", "--path", site_packages(python)],
               capture_output=True, text=True).stdout


def new_venv(path: Path) -> Path:
    base = getattr(sys, "_base_executable", sys.executable)
    run([base, "-m", "venv", str(path)])
    return path / "bin" / "python"


def run_together(cmds: list[list[str]], **kw) -> None:
    """同时运行几条命令，等它们都结束；有一条失败就报告它（按 Ctrl-C 时结束全部）。"""
    for cmd in cmds:
        print("[lock] " + " ".join(cmd), flush=True)
    procs = [subprocess.Popen(cmd, **kw) for cmd in cmds]
    try:
        codes = [proc.wait() for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for cmd, code in zip(cmds, codes):
        if code:
            raise subprocess.CalledProcessError(code, cmd)


# 装包的工具：pip 自己、venv 随它装上的 setuptools，以及 wheel。新环境里已有旧版的 pip 与 setuptools，按锁换版本时
# pip 要先卸掉旧的（这时别的 pip 进程会看到半卸载的包）；换 pip 本身时，别的 pip 进程正从它 import。所以它们先单独装
INSTALLER = ("pip", "setuptools", "wheel")


def split_lock(folder: Path, parts: int) -> tuple[Path, list[Path]]:
    """把锁写成 folder 下的几个 requirements 文件：先装的 INSTALLER 一份，其余分成 parts 份（torch 单独一份：
    它一个就要解压 700 多 MB），可以同时装。"""
    pins = {name: f"{name}=={version}" for name, version in read_pins(LOCK).items()}
    first = [pins.pop(name) for name in INSTALLER if name in pins]
    groups = [[pins.pop("torch")]] if "torch" in pins and parts > 1 else []
    rest = list(pins.values())
    left = parts - len(groups)
    groups += [rest[i::left] for i in range(left)]

    def write(name: str, lines: list[str]) -> Path:
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        return folder / name

    return write("installer.txt", first), [write(f"part-{i}.txt", g) for i, g in enumerate(groups) if g]


def compile_all(python: Path) -> None:
    """把环境的 site-packages 编译成 .pyc（-j 0：用上所有的核）。个别包自带的、别的 Python 版本才能读的文件
    编译不了，pip 自己编译时也是跳过它们不报错，这里同样不看 compileall 的退出码。"""
    site = site_packages(python)
    print(f"[lock] {python} -m compileall -q -j 0 {site}", flush=True)
    subprocess.run([str(python), "-m", "compileall", "-qq", "-j", "0", site],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def refresh_lock() -> None:
    with tempfile.TemporaryDirectory(prefix="lock-") as tmp:
        python = new_venv(Path(tmp) / "venv")
        run([str(python), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)], cwd=REPO)
        frozen = freeze(python)
    lines = sorted((line for line in frozen.splitlines() if line.strip()), key=str.lower)
    LOCK.write_text(HEADER + "\n".join(lines) + "\n", encoding="utf-8")
    stale = stale_pins()
    if stale:
        raise SystemExit("新写的锁与 requirements.txt 不一致：" + "；".join(stale))
    print(f"[lock] 写入 {LOCK.relative_to(REPO)}：{len(lines)} 个包")


def stale_pins(requirements: Path = REQUIREMENTS, lock: Path = LOCK) -> list[str]:
    """requirements.txt 里钉的版本与锁不一致的包（锁里没有、或版本不同）；一致时为空。

    torch 这类带本地版本号的包（锁里是 2.13.0+cpu）按公开版本号比较。
    """
    locked = read_pins(lock)
    problems = []
    for name, wanted in read_pins(requirements).items():
        have = locked.get(name)
        if have is None or have.split("+", 1)[0] != wanted.split("+", 1)[0]:
            problems.append(f"{name}=={wanted}（锁里是 {have or '没有'}）")
    return problems


def install(venv: Path) -> None:
    """按锁安装到 venv（不存在就新建）。requirements.txt 改了而锁没有刷新时停下。"""
    stale = stale_pins()
    if stale:
        raise SystemExit("requirements.lock 与 requirements.txt 不一致：" + "；".join(stale)
                         + "。请运行 make lock 刷新锁，再把两个文件一起提交。")
    python = venv / "bin" / "python"
    fresh = not python.exists()
    if fresh:
        new_venv(venv)
    (venv / PROVENANCE).unlink(missing_ok=True)
    # pip 默认逐个文件、单进程地编译 .pyc（torch 的几千个文件要几分钟）；改为装完后用 compileall 在所有核上一起编译，
    # 结果一样（每个 .py 都有 .pyc：沙箱里只读的环境无法在 import 时补写），只是快得多
    pip = [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile"]
    if fresh:
        # 新环境里只有 venv 装上的 pip 与 setuptools；锁里的包各装各的（--no-deps），彼此没有一个共用的文件：先装 INSTALLER，
        # 其余分成三份同时装，本书的包也同时装（可编辑安装在隔离的构建环境里打包，不用这个环境里的任何东西）。
        # 一个 pip 逐个查索引、逐个解压，一半时间在等网络和磁盘，也只用一个核：在 2 核的机器上，一个 pip 装完整个锁
        # 要 45–55 秒，这样 25–35 秒。已有的环境不这样装：换版本要先卸载旧版，旧版的文件可能正是另一个 pip 在写的
        with tempfile.TemporaryDirectory(prefix="lock-install-") as tmp:
            first, parts = split_lock(Path(tmp), 3)
            run(pip + ["-r", str(first)], cwd=REPO)
            run_together([pip + ["-r", str(part)] for part in parts] + [pip + ["-e", str(REPO)]], cwd=REPO)
    else:
        run(pip + ["-r", str(LOCK)], cwd=REPO)
        run(pip + ["-e", str(REPO)], cwd=REPO)
    compile_all(python)
    run([str(python), "-m", "pip", "check"], cwd=REPO, stdout=subprocess.DEVNULL)
    record_provenance(venv, fresh)


# 这个环境是怎么来的：是否由这一次 install 从空目录新建，按的是哪一版锁（内容的 SHA-256）。
# 测试据此判断 .venv 本身是否就是“从锁新建的环境”，是的话直接检查它，不必再建一个（见 tests/test_lock.py）
PROVENANCE = ".lock-provenance.json"


def lock_digest() -> str:
    return hashlib.sha256(LOCK.read_bytes()).hexdigest()


def record_provenance(venv: Path, fresh: bool) -> None:
    (venv / PROVENANCE).write_text(json.dumps({"created_from_empty": fresh, "lock_sha256": lock_digest()}) + "\n",
                                   encoding="utf-8")


def fresh_from_lock(venv: Path) -> bool:
    """venv 是否由 install 从空目录新建、且按的就是当前的锁。"""
    try:
        info = json.loads((venv / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return info.get("created_from_empty") is True and info.get("lock_sha256") == lock_digest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", default="refresh", choices=["refresh", "install"])
    parser.add_argument("--venv", type=Path, default=REPO / ".venv")
    args = parser.parse_args(argv)
    if args.action == "install":
        install(args.venv.resolve())
    else:
        refresh_lock()


if __name__ == "__main__":
    main()
