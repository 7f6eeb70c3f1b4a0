"""批改用的沙箱在哪里、以谁的身份都能用：虚拟环境放在 /tmp 下面，以及以普通用户批改。

两种情形在这台机器的默认测试里都碰不到（仓库在 /work、测试以 root 运行），所以测试自己把它们搭出来：

- /tmp 下的虚拟环境和包：在 /tmp 下的一个临时文件夹里建一个虚拟环境（``venv --without-pip``，解释器是符号链接），
  minigpt 是那里的一份副本，其余的包（torch、nbclient……）由一个 .pth 指向本项目虚拟环境的 site-packages
  （只加进 sys.path，那里的 .pth 不生效，所以可编辑安装的 minigpt 不会被导入）。沙箱的私有 /tmp 是一个 tmpfs：
  Python 要在它之后挂上，才看得见；/tmp 的其余部分（旁边的文件、别的提交）仍然看不见。
- 普通用户：测试以 root 运行时用 setpriv（没有就用 runuser）换成 nobody。沙箱要建非特权的用户命名空间；
  普通用户调不高硬上限，测试给批改程序一个比 --disk 小的文件大小硬上限（ulimit -Hf），像一台管得严的机器。
  nobody 要能运行解释器、读到包：本机的解释器在 /root（drwx------）下，nobody 进不去，所以退而用同一版本的
  系统 Python（/usr/bin/python3.X，补丁号可以不同，3.X 内 ABI 相同）在 /tmp 下建虚拟环境；测试不改教师文件的权限。
  做不到（不是 root 又换不了用户、内核不许非特权用户命名空间、nobody 读不到这些包）时跳过并写明原因。
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import pwd
import resource
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

import minigpt
from support.book import REPO

SUBMISSIONS = REPO / "tests" / "fixtures" / "submissions"
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"

_spec = importlib.util.spec_from_file_location("generate_submissions", SUBMISSIONS / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


def _bwrap_or_skip() -> str:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("没有 bubblewrap（bwrap）：tools/system_deps.sh install grade")
    return bwrap


def _blocked(path: Path) -> str | None:
    """其他用户（o）走不到 path 时，说出是哪一级目录挡住了。"""
    for p in [*reversed(path.parents), path]:
        try:
            mode = p.stat().st_mode
        except OSError:
            return None
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return f"{p}（{stat.filemode(mode)}）"
    return None


def _fingerprint(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file()}


def _venv_below_tmp(base_python: Path) -> tuple[Path, Path]:
    """在 /tmp 下的一个新文件夹里搭虚拟环境和包（见模块说明）；返回 (文件夹, 虚拟环境的 python)。
    文件夹和里面的东西其他用户可读（nobody 要用它）。"""
    root = Path(tempfile.mkdtemp(prefix="minigpt-sandbox-", dir="/tmp"))
    root.chmod(0o755)
    subprocess.run([str(base_python), "-m", "venv", "--without-pip", str(root / "venv")], check=True,
                   capture_output=True)
    shutil.copytree(Path(minigpt.__file__).parent, root / "src" / "minigpt",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # 先编译好：批改程序在沙箱外 import 包时就不会往包里写 .pyc（设不设 PYTHONDONTWRITEBYTECODE 都一样），
    # 测试比较包的指纹时，变化只可能来自沙箱里的提交
    subprocess.run([str(base_python), "-m", "compileall", "-q", str(root / "src")], check=True, capture_output=True)
    site = next((root / "venv" / "lib").glob("python*/site-packages"))
    (site / "project.pth").write_text(f"{root / 'src'}\n{sysconfig.get_paths()['purelib']}\n")
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | stat.S_IROTH | (stat.S_IXOTH if p.is_dir() else 0))
    return root, root / "venv" / "bin" / "python"


def _copy_submissions(root: Path, names: list[str]) -> list[Path]:
    folder = root / "submissions"
    folder.mkdir()
    folder.chmod(0o755)
    out = []
    for name in names:
        out.append(folder / f"{name}.ipynb")
        shutil.copy(SUBMISSIONS / f"{name}.ipynb", out[-1])
        out[-1].chmod(0o644)
    return out


def _last_cell_problem(sub: dict, name: str) -> dict:
    import nbformat

    cells = nbformat.read(SUBMISSIONS / f"{name}.ipynb", as_version=4).cells
    last = len([c for c in cells if c.cell_type == "code"])
    return next(p for p in sub["cell_problems"] if p["cell"] == last)


def _full_marks(sub: dict) -> bool:
    return sub["graded"] and {e["status"] for e in sub["exercises"].values()} == {"passed"}


# ---------------------------------------------------------------- 虚拟环境和包在 /tmp 下

@pytest.fixture(scope="module")
def venv_below_tmp():
    _bwrap_or_skip()
    root, python = _venv_below_tmp(Path(sys.base_prefix) / "bin" / f"python{VERSION}")
    (root / "sibling.txt").write_text("虚拟环境旁边的文件，沙箱里不该看见")
    try:
        yield root, python
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _top_folders_below_tmp(cmd: list[str]) -> set[str]:
    """bwrap 命令里只读挂上的路径（--ro-bind 的目标）在 /tmp 下的第一级文件夹名。"""
    out = set()
    for i, arg in enumerate(cmd[:-2]):
        if arg == "--ro-bind":
            target = Path(cmd[i + 2])
            if target.parts[:2] == ("/", "tmp") and len(target.parts) > 2:
                out.add(target.parts[2])
    return out


INSIDE = r"""
import json, os, sys, minigpt
def write(folder):
    try:
        with open(os.path.join(folder, "student_was_here"), "w"):
            return "written"
    except OSError as err:
        return err.strerror
root = sys.argv[1]
print(json.dumps({"prefix": sys.prefix, "package": minigpt.__file__, "tmp": sorted(os.listdir("/tmp")),
                  "root": sorted(os.listdir(root)), "venv": write(sys.prefix),
                  "package_dir": write(os.path.dirname(minigpt.__file__)), "private_tmp": write("/tmp")}))
"""


def test_a_venv_and_package_below_tmp_are_visible_read_only_and_the_rest_of_tmp_is_not(venv_below_tmp):
    root, python = venv_below_tmp
    before = _fingerprint(root)
    made = subprocess.run([str(python), "-c", "import json, os; from minigpt.grading import sandbox; "
                           "print(json.dumps(sandbox.bwrap_command(sandbox.Limits(), os.getuid() == 0)))"],
                          capture_output=True, text=True, check=True, cwd=root)
    cmd = json.loads(made.stdout)
    # 沙箱的 /tmp 里该看见的，正是沙箱为 Python 挂上的那些路径在 /tmp 下的第一级文件夹：这个虚拟环境的文件夹，
    # 以及（仓库本身在 /tmp 下时）.pth 指向的项目虚拟环境所在的文件夹。测试不假定仓库在哪里
    needed = _top_folders_below_tmp(cmd)
    assert root.name in needed, cmd
    decoy = Path(tempfile.mkdtemp(prefix="minigpt-decoy-", dir="/tmp"))
    try:
        proc = subprocess.run(cmd + [str(python), "-c", INSIDE, str(root)], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
    finally:
        decoy.rmdir()
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["prefix"] == str(root / "venv")
    assert seen["package"] == str(root / "src" / "minigpt" / "__init__.py")
    assert seen["tmp"] == sorted(needed), "沙箱的 /tmp 里只该有为 Python 挂上的路径所在的文件夹"
    assert decoy.name not in seen["tmp"]
    assert seen["root"] == ["src", "venv"], "虚拟环境旁边的文件不该看得见"
    assert seen["venv"] == seen["package_dir"] == "Read-only file system"
    assert seen["private_tmp"] == "written"
    assert _fingerprint(root) == before and not Path("/tmp/student_was_here").exists()


@pytest.mark.kernel
def test_grading_from_a_venv_below_tmp_works_and_hostile_submissions_stay_inside(venv_below_tmp, tmp_path):
    """从 /tmp 下的虚拟环境批改：对的满分；写包、找别的提交（就在虚拟环境旁边）、读 /tmp 里的文件都不成。"""
    root, python = venv_below_tmp
    names = ["correct", "hostile_write_package", "hostile_list_submissions", "hostile_read_outside"]
    files = _copy_submissions(root, names)
    package = _fingerprint(root / "src")
    report = tmp_path / "report.json"
    with generate.secret_on_host() as secret:
        proc = subprocess.run([str(python), "-m", "minigpt.grade", *map(str, files), "--json", str(report),
                               "--jobs", "2", "--timeout", "30"],
                              capture_output=True, text=True, timeout=900, cwd=tmp_path,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        assert secret.exists()
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    subs = {Path(s["path"]).stem: s for s in json.loads(report.read_text(encoding="utf-8"))["submissions"]}
    assert all(_full_marks(subs[n]) for n in names), subs
    wrote = _last_cell_problem(subs["hostile_write_package"], "hostile_write_package")
    assert "Read-only file system" in wrote["message"] and str(root / "src" / "minigpt") in wrote["message"]
    listed = _last_cell_problem(subs["hostile_list_submissions"], "hostile_list_submissions")
    assert "没有找到别的提交" in listed["message"]
    read = _last_cell_problem(subs["hostile_read_outside"], "hostile_read_outside")
    assert read["exception"] == "FileNotFoundError" and generate.SECRET_PREFIX + "* 一个也没有" in read["message"]
    assert _fingerprint(root / "src") == package


# ---------------------------------------------------------------- 以普通用户批改

def _as_ordinary_user() -> tuple[list[str], pwd.struct_passwd]:
    """换成普通用户的命令前缀和那个用户；本来就不是 root 时前缀为空。做不到就跳过，写明原因。"""
    bwrap = _bwrap_or_skip()
    if os.geteuid() != 0:
        prefix, user = [], pwd.getpwuid(os.geteuid())
    else:
        try:
            user = pwd.getpwnam("nobody")
        except KeyError:
            pytest.skip("以 root 运行，但没有用户 nobody 可以换成")
        if shutil.which("setpriv"):
            prefix = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
        elif shutil.which("runuser"):
            prefix = ["runuser", "-u", "nobody", "--"]
        else:
            pytest.skip("以 root 运行，但没有 setpriv 或 runuser，换不成普通用户")
    for knob, bad in (("/proc/sys/kernel/unprivileged_userns_clone", "0"),
                      ("/proc/sys/user/max_user_namespaces", "0")):
        try:
            if Path(knob).read_text().strip() == bad:
                pytest.skip(f"内核不许普通用户建用户命名空间：{knob} = {bad}")
        except OSError:
            pass
    probe = subprocess.run(prefix + [bwrap, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/",
                                     "--proc", "/proc", "true"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"普通用户 {user.pw_name} 起不了 bubblewrap：{probe.stderr.strip()[-200:]}")
    return prefix, user


def _python_for(prefix: list[str], user) -> Path:
    """一个这个用户能运行的、与本解释器同为 Python 3.X 的解释器。只能执行还不够：读不到自己的前缀时，
    解释器照样启动，却去 /usr 下找标准库（本机 /root 下的解释器就是这样），所以要它看到的前缀与我们看到的相同。"""
    candidates = [Path(sys.base_prefix) / "bin" / f"python{VERSION}", Path(f"/usr/bin/python{VERSION}")]
    show = ["-c", "import sys; print(sys.base_prefix)"]
    reasons = []
    for cand in candidates:
        if cand.exists():
            ours = subprocess.run([str(cand), *show], capture_output=True, text=True).stdout
            theirs = subprocess.run(prefix + [str(cand), *show], capture_output=True, text=True).stdout
            if ours == theirs != "":
                return cand
        where = _blocked(cand)
        reasons.append(f"{cand}：被 {where} 挡住" if where else f"{cand}：不存在或运行不了")
    pytest.skip(f"用户 {user.pw_name} 运行不了 Python {VERSION}（" + "；".join(reasons) + "）")


@pytest.fixture(scope="module")
def ordinary_user():
    prefix, user = _as_ordinary_user()
    root, python = _venv_below_tmp(_python_for(prefix, user))
    try:
        check = subprocess.run(prefix + [str(python), "-c", "import torch, nbclient, ipykernel, minigpt"],
                               capture_output=True, text=True, timeout=300)
        if check.returncode != 0:
            site = Path(sysconfig.get_paths()["purelib"])
            where = _blocked(site)
            pytest.skip(f"用户 {user.pw_name} 读不到本项目虚拟环境里的包"
                        + (f"：{where} 对其他用户不可进入（给它 o+rx 才行）" if where else "")
                        + f"：{check.stderr.strip()[-200:]}")
        yield prefix, user, root, python
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _lower_file_size_hard_limit():
    resource.setrlimit(resource.RLIMIT_FSIZE, (2**29, 2**29))


@pytest.mark.kernel
def test_an_ordinary_user_grades_in_the_sandbox_even_with_a_lower_hard_limit(ordinary_user):
    """以普通用户、在 0.5 GiB 的文件大小硬上限（比默认的 --disk 1 小）下批改：对的满分，往外写和开 300 个进程都被挡住，
    批改程序说明它按 0.5 GiB 算，没有一份因为调不高上限而“出错”。"""
    prefix, user, root, python = ordinary_user
    names = ["correct", "hostile_write_outside", "hostile_processes_300"]
    files = _copy_submissions(root, names)
    out = root / "out"
    out.mkdir()
    os.chown(out, user.pw_uid, user.pw_gid)
    for f in generate.ESCAPE_FILES:
        Path(f).unlink(missing_ok=True)
    report = out / "report.json"
    proc = subprocess.run(prefix + [str(python), "-m", "minigpt.grade", *map(str, files), "--json", str(report),
                                    "--jobs", "2", "--timeout", "30"],
                          capture_output=True, text=True, timeout=900, cwd=out,
                          env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
                          preexec_fn=_lower_file_size_hard_limit)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "ulimit -Hf" in proc.stderr and "按 0.5 GiB 算" in proc.stderr
    assert report.stat().st_uid == user.pw_uid, "报告不是那个普通用户写的"
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["disk_bytes"] == 2**29 and data["sandboxed"] is True
    subs = {Path(s["path"]).stem: s for s in data["submissions"]}
    assert all(_full_marks(subs[n]) for n in names), subs
    outside = _last_cell_problem(subs["hostile_write_outside"], "hostile_write_outside")
    assert outside["exception"] == "FileNotFoundError" and "/var/tmp" in outside["message"]
    assert [f for f in generate.ESCAPE_FILES if Path(f).exists()] == []
    procs = _last_cell_problem(subs["hostile_processes_300"], "hostile_processes_300")
    assert procs["kind"] == "limit" and "超出进程数上限（256 个）" in procs["message"]


# ---------------------------------------------------------------- 调不高的硬上限（不启动内核）

LIMITS_SEEN = """
import json, resource
from minigpt.grading import runner, sandbox
limits, notes = sandbox.within_hard_limits(sandbox.Limits())
runner.apply_limits(2 * 2**30, None, 2**30, 10**6)
print(json.dumps({"disk": limits.disk, "memory": limits.memory, "notes": notes,
                  "file_size": resource.getrlimit(resource.RLIMIT_FSIZE)}))
"""


def test_limits_above_a_hard_limit_that_cannot_be_raised_are_lowered_to_it_and_said():
    """硬上限 0.5 GiB 的文件大小、没有 CAP_SYS_RESOURCE（普通用户，或 root 去掉这项能力）：
    --disk 默认的 1 GiB 按 0.5 GiB 算并说明；runner 设上限时不抛 ValueError（以前因此每份都“出错”）。"""
    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("以 root 运行，但没有 setpriv，去不掉 CAP_SYS_RESOURCE（root 本来调得高硬上限）")
        prefix = ["setpriv", "--bounding-set=-sys_resource", "--inh-caps=-sys_resource"]
    proc = subprocess.run(prefix + [sys.executable, "-c", LIMITS_SEEN], capture_output=True, text=True,
                          timeout=120, preexec_fn=_lower_file_size_hard_limit)
    assert proc.returncode == 0, proc.stderr[-1500:]
    seen = json.loads(proc.stdout)
    assert seen["disk"] == 2**29 and seen["memory"] == 2 * 2**30
    assert seen["file_size"] == [2**29, 2**29]
    assert len(seen["notes"]) == 1 and "--disk 要的是 1 GiB" in seen["notes"][0]
    assert "ulimit -Hf" in seen["notes"][0] and "0.5 GiB" in seen["notes"][0]


# ---------------------------------------------------------------- 用户号不与别的批改共用

HELD_UID = 61234   # 测试自己占用的用户号（不是任何批改会用的）
GRADE_WITH_OLD_UID = """
import sys
from minigpt.grading import sandbox, cli
sandbox.BASE_UID = %d   # 以前的批改程序给第一个并行的沙箱用 BASE_UID（62000）；这里换成测试占用的号，不碰别人的
sys.exit(cli.main(sys.argv[1:]))
""" % HELD_UID


@pytest.mark.kernel
def test_processes_of_another_run_under_a_sandbox_uid_do_not_stop_a_correct_submission(tmp_path):
    """以 root 批改时，进程数上限（256）按用户号计、且是全机的。以前每次批改的第一个沙箱都用同一个用户号，
    另一次批改里开满进程的提交（这里：测试以那个用户号开 256 个 sleep）让这份正确的提交连内核都起不来（“出错”，
    退出码 2）。现在每个沙箱用一个随机的、没有进程在用的用户号：满分。"""
    bwrap = _bwrap_or_skip()
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("要以 root 运行（沙箱换用户号只在以 root 批改时发生）并有 setpriv")
    del bwrap
    held = [subprocess.Popen(["setpriv", f"--reuid={HELD_UID}", f"--regid={HELD_UID}", "--clear-groups",
                              "sleep", "600"]) for _ in range(256)]
    try:
        proc = subprocess.run([sys.executable, "-c", GRADE_WITH_OLD_UID, str(SUBMISSIONS / "correct.ipynb"),
                               "--json", str(tmp_path / "r.json"), "--jobs", "1"],
                              capture_output=True, text=True, timeout=600, cwd=tmp_path,
                              env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    finally:
        for p in held:
            p.kill()
        for p in held:
            p.wait()
    assert proc.returncode == 0, proc.stdout[-1500:] + proc.stderr[-1500:]
    sub = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["submissions"][0]
    assert _full_marks(sub), sub


def test_each_sandbox_gets_a_uid_no_process_holds():
    from minigpt.grading import sandbox

    used = sandbox._uids_in_use()
    assert 0 in used and os.getuid() in used
    uids = {sandbox.fresh_uid() for _ in range(50)}
    assert len(uids) == 50 and not uids & used
    assert all(sandbox.UID_RANGE[0] <= u < sandbox.UID_RANGE[1] for u in uids)


# ---------------------------------------------------------------- 能写的只有 /tmp（不启动内核）

WRITABLE = r"""
import json, os, sys
if len(sys.argv) > 1:   # 以 root 批改时 runner 做的事：把 /tmp 交给一个普通用户号，再换成它
    uid = int(sys.argv[1])
    os.chown("/tmp", uid, uid)
    os.setgroups([]); os.setgid(uid); os.setuid(uid)
seen = {}
for d in ["/", "/dev", "/dev/shm", "/tmp"] + sorted({os.path.dirname(p) for p in sys.path if p.startswith("/")}):
    try:
        with open(os.path.join(d, "student_was_here"), "w") as f:
            f.write("x")
        seen[d] = "written"
    except OSError as err:
        seen[d] = err.strerror
with open("/dev/null", "w") as f:
    f.write("x")
print(json.dumps(seen))
"""


def _writable_places(cmd: list[str], prefix: list[str], python: str, *args: str) -> dict:
    proc = subprocess.run(prefix + cmd + [python, "-c", WRITABLE, *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-1500:]
    return json.loads(proc.stdout)


def test_as_an_ordinary_user_only_tmp_is_writable_in_the_sandbox(ordinary_user):
    """以普通用户批改时，bwrap 建的 tmpfs（沙箱的根 /、--dir 建的文件夹、/dev、/dev/shm）都属于沙箱里的用户。
    以前它们可写，而且除了 /dev/shm 都没有大小上限（默认是内存的一半）：一份提交能绕过 --disk 写满宿主一半的内存。"""
    prefix, _, root, python = ordinary_user
    made = subprocess.run(prefix + [str(python), "-c", "import json; from minigpt.grading import sandbox; "
                                    "print(json.dumps(sandbox.bwrap_command(sandbox.Limits(), False)))"],
                          capture_output=True, text=True, timeout=120, cwd=root)
    assert made.returncode == 0, made.stderr[-1500:]
    seen = _writable_places(json.loads(made.stdout), prefix, str(python))
    assert seen.pop("/tmp") == "written"
    # 虚拟环境在 /tmp 下面：通往它的文件夹在私有的 /tmp 里（算进 --disk 和文件数），可写无妨
    assert {d: why for d, why in seen.items()
            if why != "Read-only file system" and not d.startswith("/tmp/")} == {}
    assert "/" in seen and "/dev/shm" in seen and any(d.startswith(str(REPO)) for d in seen)


def test_as_root_only_tmp_is_writable_in_the_sandbox():
    _bwrap_or_skip()
    if os.geteuid() != 0:
        pytest.skip("以 root 批改的情形要以 root 运行")
    from minigpt.grading import sandbox

    seen = _writable_places(sandbox.bwrap_command(sandbox.Limits(), True), [], sys.executable,
                            str(sandbox.fresh_uid()))
    assert seen.pop("/tmp") == "written"
    assert {d: why for d, why in seen.items() if why not in ("Read-only file system", "Permission denied")} == {}


def test_no_shared_memory_in_the_sandbox_as_the_teachers_guide_says():
    """「教师指南」说 /dev/shm 只读，所以 multiprocessing 的锁这类要共享内存的东西在沙箱里报错。"""
    _bwrap_or_skip()
    from minigpt.grading import sandbox

    code = ("import multiprocessing as mp\ntry:\n    mp.Lock()\n    print('made a lock')\n"
            "except OSError as err:\n    print(err.strerror)")
    proc = subprocess.run(sandbox.bwrap_command(sandbox.Limits(), os.geteuid() == 0) + [sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.stdout.strip() == "Read-only file system", (proc.stdout, proc.stderr[-800:])
    page = (REPO / "book" / "teacher_guide.md").read_text(encoding="utf-8")
    assert "`/dev/shm` 都是只读的" in page and "用不了共享内存" in page


@pytest.mark.kernel
def test_the_grading_bench_still_calls_the_sandbox_the_way_it_is_built():
    """make bench 的 tools/bench_grade.py 直接调用 sandbox.run；沙箱的参数一改，基准就会坏掉而没有测试发现
    （去掉 slot 参数后就坏过一次）。这里量一次下限：沙箱里启动内核、运行 import torch。"""
    _bwrap_or_skip()
    spec = importlib.util.spec_from_file_location("bench_grade", REPO / "tools" / "bench_grade.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.floor_seconds(repeat=1) > 0


def test_the_sandbox_starts_when_the_grader_was_run_through_a_path_with_dotdot(monkeypatch, tmp_path):
    """r36b F7：``cd submissions && ../venv/bin/python -m minigpt.grade`` 让沙箱起不来（沙箱里没有
    submissions/..），说明还怪到用户命名空间头上、叫教师加 --no-sandbox。现在沙箱里用的是所在目录的真实路径。"""
    from minigpt.grading import sandbox

    if sandbox.unavailable():
        pytest.skip("这台机器上沙箱起不来")
    exe = Path(sys.executable)
    (tmp_path / "sub").mkdir()
    detour = os.path.relpath(exe.parent, tmp_path / "sub")
    monkeypatch.chdir(tmp_path / "sub")
    monkeypatch.setattr(sys, "executable", os.path.join(detour, exe.name))
    assert ".." in sys.executable
    assert ".." not in sandbox.interpreter() and Path(sandbox.interpreter()).name == exe.name
    assert sandbox.unavailable() is None
