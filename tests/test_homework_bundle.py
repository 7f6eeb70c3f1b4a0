"""作业包 minigpt-homework.zip（book/_ext/homework_bundle.py）：离开本仓库也能做作业。

慢测试（约 2–3 分钟）：打出作业包，在仓库之外建一个全新的虚拟环境，照 README 用 pip 装上包里的 wheel，
再用这个环境的 Python 内核运行包里的笔记本：填上参考答案时每个检查器都通过；原样运行时停在第一个检查器，
提示“还没有填写”。

全新环境是 conftest 的 fresh_venv（与读者笔记本、sdist 的测试共用）：torch 来自本机的 wheel，其余依赖
钉死与 .venv 相同的版本；这里只往里装作业包的 wheel。
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import tomllib
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from conftest import REPO, clean_env

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
