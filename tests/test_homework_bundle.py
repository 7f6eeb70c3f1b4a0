"""作业包 minigpt-homework.zip（book/_ext/homework_bundle.py）：离开本仓库也能做作业。

慢测试（约 2–3 分钟）：打出作业包，在仓库之外建一个全新的虚拟环境，照 README 用 pip 装上包里的 wheel，
再用这个环境的 Python 内核运行包里的笔记本：填上参考答案时每个检查器都通过；原样运行时停在第一个检查器，
提示“还没有填写”。

全新环境是 conftest 的 fresh_venv（与读者笔记本、sdist 的测试共用）：torch 来自本机的 wheel，其余依赖
钉死与 .venv 相同的版本；这里只往里装作业包的 wheel。

轻量安装：README 给 Linux、macOS、Windows 各写四行（建虚拟环境、进入它、装只用 CPU 的 PyTorch、装本书的包）。
测试解析这些命令并核对它们；再在一个空的虚拟环境里照 Linux 那几行真的装一遍。这台机器连不到 PyTorch 的
CPU 轮子索引，那一行的 --index-url 换成本机同一个 CPU 轮子所在的目录（support.venv.torch_wheel_dir），其余依赖按
requirements.lock 的版本取（约束文件，免得下载别的版本）；别的命令原样运行。装好的环境里 torch 是 2.13.0 的 CPU 版、
没有 CUDA 库，整个环境约 1 GB，参考答案逐题通过。
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from support.book import REPO
from support.processes import clean_env
from support.venv import torch_wheel_dir

_spec = importlib.util.spec_from_file_location("homework_bundle", REPO / "book" / "_ext" / "homework_bundle.py")
bundle_ext = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bundle_ext)
_spec2 = importlib.util.spec_from_file_location("make_student_notebook", REPO / "tools" / "make_student_notebook.py")
tool = importlib.util.module_from_spec(_spec2)
_spec2.loader.exec_module(tool)

import minigpt  # noqa: E402  版本唯一的出处是 minigpt.__version__（pyproject.toml 的 version 是 dynamic）

DIST = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
VERSION = minigpt.__version__
WHEEL = f"{DIST.replace('-', '_')}-{VERSION}-py3-none-any.whl"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("bundle") / bundle_ext.BUNDLE
    return bundle_ext.build_bundle(REPO, target)


@pytest.fixture(scope="module")
def unpacked(bundle, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student")
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(out)
    return out / bundle_ext.FOLDER


@pytest.fixture(scope="module")
def fresh_kernel(unpacked, fresh_venv):
    """仓库之外的全新虚拟环境（与读者笔记本、sdist 的测试共用），装上作业包里的 wheel；返回指向它的内核规格名。"""
    assert REPO not in unpacked.parents
    fresh_venv.pip("install", "--quiet", "--force-reinstall", "--no-deps", WHEEL, cwd=unpacked)
    where = subprocess.run([str(fresh_venv.python), "-c", "import minigpt; print(minigpt.__file__)"], cwd=unpacked,
                           env=clean_env(), capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(fresh_venv.python.parent.parent), f"全新环境里的 minigpt 来自 {where}，不是装进去的 wheel"
    old = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "PYTHONPATH")}
    os.environ["JUPYTER_PATH"] = str(fresh_venv.jupyter_path)
    os.environ.pop("PYTHONPATH", None)
    yield fresh_venv.kernel
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _run(nb, kernel: str, cwd: Path):
    client = NotebookClient(nb, timeout=300, kernel_name=kernel, resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return nb


def _text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
    return "".join(parts)


def _starter(cell) -> str | None:
    return next((t[len("hw-starter-"):] for t in cell.get("metadata", {}).get("tags", [])
                 if t.startswith("hw-starter-")), None)


# ---------------------------------------------------------------- 作业包的内容

def test_bundle_holds_notebook_versioned_wheel_and_readme(bundle):
    with zipfile.ZipFile(bundle) as zf:
        names = sorted(zf.namelist())
        assert names == sorted(f"{bundle_ext.FOLDER}/{n}" for n in ("README.md", "homework_student.ipynb", WHEEL))
        notebook = zf.read(f"{bundle_ext.FOLDER}/homework_student.ipynb")
        with zf.open(f"{bundle_ext.FOLDER}/{WHEEL}") as raw, zipfile.ZipFile(raw) as wheel:
            files = wheel.namelist()
            metadata = f"{DIST.replace('-', '_')}-{VERSION}.dist-info/METADATA"
            assert metadata in files
            assert f"Name: {DIST}\nVersion: {VERSION}\n" in wheel.read(metadata).decode()
    assert notebook == (REPO / "book" / "homework_student.ipynb").read_bytes()
    for module in ("homework/__init__", "homework/exercises", "grading/judge", "grade", "data", "attention"):
        assert f"minigpt/{module}.py" in files


def test_bundle_is_byte_identical_when_nothing_changed(bundle, tmp_path):
    again = bundle_ext.build_bundle(REPO, tmp_path / "again.zip")
    assert again.read_bytes() == bundle.read_bytes()


def test_readme_and_notebook_tell_students_to_pip_install_the_wheel(unpacked):
    readme = (unpacked / "README.md").read_text(encoding="utf-8")
    assert f"pip install {WHEEL}" in readme and "Jupyter" in readme
    nb = nbformat.read(unpacked / "homework_student.ipynb", as_version=4)
    intro = nb.cells[0].source
    # 写全名：Windows 的 cmd、PowerShell 和 pip 自己都不展开 minigpt_book-*.whl 里的 *
    assert f"pip install {WHEEL}" in intro and "*" not in intro.split("pip install", 1)[1].split("`")[0]
    assert "Jupyter" in intro
    text = "\n".join(c.source for c in nb.cells)
    for maintainer_only in ("make html", "请不要手改", "tools/make_student_notebook", "book/homework.md", ".venv"):
        assert maintainer_only not in text, maintainer_only
        assert maintainer_only not in readme, maintainer_only


# ---------------------------------------------------------------- 在全新环境里运行

@pytest.mark.kernel
@pytest.mark.slow  # 建全新的虚拟环境、装 wheel、启动内核
def test_fresh_venv_with_answers_passes_every_checker(unpacked, fresh_kernel):
    nb = nbformat.read(unpacked / "homework_student.ipynb", as_version=4)
    answers = tool.solutions()
    for cell in nb.cells:
        if _starter(cell):
            cell.source = answers[_starter(cell)]
    nb.cells.append(nbformat.v4.new_code_cell("import minigpt, sys; print(minigpt.__file__); print(sys.executable)"))
    done = _run(nb, fresh_kernel, unpacked)
    seen = {}
    for cell in done.cells:
        if _starter(cell):
            seen[_starter(cell)] = _text(cell)
    from minigpt.homework import EXERCISES

    assert set(seen) == {e.key for e in EXERCISES}
    for key, text in seen.items():
        assert f"✔ 作业 {key[0]} 通过" in text, f"{key}: {text!r}"
    where = _text(done.cells[-1]).split()
    assert "site-packages" in where[0] and REPO.as_posix() not in where[0] and REPO.as_posix() not in where[1]


@pytest.mark.kernel
@pytest.mark.slow  # 建全新的虚拟环境、装 wheel、启动内核
def test_fresh_venv_with_placeholders_stops_at_the_first_checker(unpacked, fresh_kernel):
    nb = nbformat.read(unpacked / "homework_student.ipynb", as_version=4)
    with pytest.raises(CellExecutionError) as info:
        _run(nb, fresh_kernel, unpacked)
    assert info.value.ename == "HomeworkNotFilled" and "还没有填写" in info.value.evalue
    failed = [c for c in nb.cells if any(o.output_type == "error" for o in c.get("outputs", []))]
    assert len(failed) == 1 and _starter(failed[0]) == "1a", "应当停在第一个检查器"
    later = nb.cells[nb.cells.index(failed[0]) + 1:]
    assert all(not c.get("outputs") for c in later if c.cell_type == "code"), "出错后不应再往下运行"


# ---------------------------------------------------------------- 轻量安装：只用 CPU 的 PyTorch

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def readme_commands(readme: str) -> dict[str, list[str]]:
    """README 里每种系统（### Linux / macOS / Windows）那一段第一个代码块里的命令，一行一条。"""
    out = {}
    for system in ("Linux", "macOS", "Windows"):
        section = readme.split(f"### {system}\n", 1)[1].split("\n### ", 1)[0]
        block = re.search(r"^```\w*\n(.*?)^```", section, re.S | re.M)
        assert block, f"README 的 {system} 一节没有代码块"
        out[system] = [line.strip() for line in block.group(1).splitlines() if line.strip()]
    return out


def test_readme_installs_cpu_only_pytorch_before_the_wheel_on_linux_macos_and_windows(unpacked):
    readme = (unpacked / "README.md").read_text(encoding="utf-8")
    commands = readme_commands(readme)
    for system, lines in commands.items():
        assert len(lines) == 4, (system, lines)
        make, enter, torch, book = lines
        assert re.fullmatch(r"(python3|py) -m venv minigpt-env", make), (system, make)
        # torch 钉在 requirements.lock 的版本上：学生、命令行批改和 Gradescope 用同一个 PyTorch
        assert shlex.split(torch)[:3] == ["pip", "install", f"torch=={bundle_ext.torch_pin(REPO)}"], (system, torch)
        assert book == f"pip install {WHEEL}", (system, book)   # 全名：cmd、PowerShell 和 pip 都不展开 *
        extra = shlex.split(torch)[3:]
        if system == "macOS":   # PyPI 上给 macOS 的 torch 本来就只有 CPU（和 MPS）
            assert extra == [], torch
        else:                   # --index-url 换掉 PyPI；--extra-index-url 还会让 pip 挑中 PyPI 上带 CUDA 的版本
            assert extra == ["--index-url", CPU_INDEX], (system, torch)
    assert commands["Linux"][1] == commands["macOS"][1] == "source minigpt-env/bin/activate"
    assert commands["Windows"][1] == "minigpt-env\\Scripts\\activate.bat"
    assert "minigpt-env\\Scripts\\Activate.ps1" in readme   # PowerShell 的那一行写在代码块下面
    assert "约 1 GB" in readme and "CUDA" in readme


def test_readme_says_under_each_systems_commands_that_a_downloaded_torch_wheel_can_be_installed_from_a_file():
    """r36t2 第 1 条：README 的每种系统下面都说，连不上 PyTorch 的网站时，装 PyTorch 的那一行可以换成
    pip install 一个事先下载好的 torch wheel 文件（版本与 requirements.lock 钉的相同）。只看说明文字，不下载任何东西。"""
    pin = bundle_ext.torch_pin(REPO)
    readme = bundle_ext.README.format(wheel=WHEEL, version=VERSION, torch=pin)
    for system in ("Linux", "macOS", "Windows"):
        section = readme.split(f"### {system}\n", 1)[1].split("\n### ", 1)[0]
        after = section.split("```", 2)[2].split("```", 1)[-1]   # 代码块之后的文字
        assert "第三行" in after and "`pip install`" in after and f"torch {pin}" in after, (system, after)
    assert f"`torch-{pin}+cpu-cp311-cp311-manylinux_2_28_x86_64.whl`" in readme


def _wheel_metadata(bundle) -> str:
    with zipfile.ZipFile(bundle) as zf, zf.open(f"{bundle_ext.FOLDER}/{WHEEL}") as raw, zipfile.ZipFile(raw) as wheel:
        return wheel.read(f"{DIST.replace('-', '_')}-{VERSION}.dist-info/METADATA").decode()


def test_wheel_requires_no_cuda_package_and_admits_the_cpu_build_of_torch(bundle):
    from packaging.requirements import Requirement

    required = [Requirement(line.split(":", 1)[1].strip()) for line in _wheel_metadata(bundle).splitlines()
                if line.startswith("Requires-Dist:")]
    plain = [r for r in required if r.marker is None]
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert sorted(r.name for r in plain) == sorted(Requirement(d).name for d in project["dependencies"])
    assert not [r.name for r in required if r.name.startswith(("nvidia", "triton", "cuda"))]
    torch = next(r for r in plain if r.name == "torch")
    from importlib.metadata import version

    assert torch.specifier.contains(version("torch"), prereleases=False), (torch, version("torch"))
    assert version("torch").endswith("+cpu")


def _size(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _solutions_program(unpacked: Path) -> str:
    """学生版笔记本的代码单元依次连起来、初始代码换成参考答案：一个能用 python 直接运行的程序。"""
    nb = nbformat.read(unpacked / "homework_student.ipynb", as_version=4)
    answers = tool.solutions()
    return "\n\n".join(answers[_starter(c)] if _starter(c) else c.source
                        for c in nb.cells if c.cell_type == "code")


@pytest.mark.slow  # 建一个空的虚拟环境、照 README 装 torch 与本书的包（约一分钟）
def test_a_venv_set_up_per_the_readme_has_cpu_torch_2_13_weighs_about_1_gb_and_passes_every_checker(
        unpacked, tmp_path):
    student = tmp_path / "student"
    student.mkdir()
    for item in unpacked.iterdir():
        (student / item.name).write_bytes(item.read_bytes())
    make, enter, torch, book = readme_commands((student / "README.md").read_text(encoding="utf-8"))["Linux"]
    assert make == "python3 -m venv minigpt-env" and enter == "source minigpt-env/bin/activate"
    subprocess.run([sys._base_executable, "-m", "venv", "minigpt-env"], cwd=student, check=True)
    venv = student / "minigpt-env"
    # 进入虚拟环境（source …/activate 做的事）：它的 bin 排在 PATH 最前面
    env = clean_env()
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    # 本机已有的版本：torch 2.13.0+cpu 与 .venv 同版本的依赖。pip 把 PIP_CONSTRAINT 按空白拆成几个文件名，
    # 仓库所在的文件夹名里有空格时就找不到：先复制到学生的文件夹（tmp_path 之下，名字里没有空格）
    lock = student / "requirements.lock"
    shutil.copyfile(REPO / "requirements.lock", lock)
    assert " " not in str(lock)
    env["PIP_CONSTRAINT"] = str(lock)
    args = shlex.split(torch)
    at = args.index("--index-url")
    assert args[at + 1] == CPU_INDEX
    args[at:at + 2] = ["--find-links", str(torch_wheel_dir())]   # 本机的 CPU 轮子代替 PyTorch 的 CPU 索引
    for command in (args, shlex.split(book)):
        proc = subprocess.run(command + ["--quiet"], cwd=student, env=env, capture_output=True, text=True,
                              timeout=1500)
        assert proc.returncode == 0, (command, proc.stdout[-2000:], proc.stderr[-2000:])
    python = venv / "bin" / "python"
    probe = ("import json, torch, importlib.metadata as m; print(json.dumps([torch.__version__, torch.version.cuda, "
             "torch.cuda.is_available(), sorted(d.metadata['Name'].lower() for d in m.distributions())]))")
    version, cuda, available, installed = json.loads(subprocess.run(
        [str(python), "-c", probe], cwd=student, env=env, capture_output=True, text=True, check=True).stdout)
    assert (version, cuda, available) == ("2.13.0+cpu", None, False)
    assert not [n for n in installed if n.startswith(("nvidia", "triton"))], installed
    assert {"minigpt-book", "numpy", "matplotlib"} <= set(installed)
    size = _size(venv)
    assert 0.5e9 < size < 1.5e9, f"虚拟环境有 {size / 1e9:.2f} GB，README 说约 1 GB"
    run = subprocess.run([str(python), "-"], input=_solutions_program(student), cwd=student, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    from minigpt.homework import EXERCISES

    for n in sorted({re.match(r"\d+", e.key).group(0) for e in EXERCISES}, key=int):
        assert f"✔ 作业 {n} 通过" in run.stdout, (n, run.stdout[-2000:])
