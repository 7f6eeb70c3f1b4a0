"""环境的锁：requirements.txt 是直接依赖，requirements.lock 是解析出的全部包；make setup 按锁安装。

快的检查（make unit 也跑）：锁的格式、锁与 requirements.txt 一致、pyproject.toml 声明了 minigpt 运行时
import 的每个第三方包。慢的检查（标记 slow，make test 里跑）：从锁建一个全新的虚拟环境（不继承系统的
site-packages），装上的包与锁一个不多、一个不少、版本相同。
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

import lock
from support.book import REPO


def test_lock_pins_every_package_exactly_once_and_holds_no_editable_line():
    lines = [line for line in lock.LOCK.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    assert len(lines) > 50, "锁里的包太少，不像是整个环境"
    assert all(lock._PIN.match(line) for line in lines), [line for line in lines if not lock._PIN.match(line)]
    names = [lock.canonical(line.split("==")[0]) for line in lines]
    assert len(names) == len(set(names)), "锁里有重复的包"
    for needed in ("torch", "sphinx", "myst-nb", "jupyter-cache", "sphinx-external-toc",
                   "sphinx-togglebutton", "sphinx-thebe", "nbformat", "pyyaml", "beautifulsoup4", "pip"):
        assert needed in names, f"锁里没有 {needed}"
    assert "minigpt" not in names and "minigpt-book" not in names


def test_lock_agrees_with_the_direct_requirements():
    assert lock.stale_pins() == [], "requirements.txt 改了而锁没有刷新：运行 make lock"


def test_stale_lock_is_detected(tmp_path):
    req, lck = tmp_path / "requirements.txt", tmp_path / "requirements.lock"
    req.write_text("torch==2.13.0\nfoo==1.0\nbar==2.0\n-e .\n")
    lck.write_text("# 注释\ntorch==2.13.0+cpu\nfoo==1.1\n")
    assert lock.stale_pins(req, lck) == ["foo==1.0（锁里是 1.1）", "bar==2.0（锁里是 没有）"]


def _third_party_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in ("minigpt", "__future__")}


def _names(requirements: list[str]) -> set[str]:
    return {lock.canonical(re.split(r"[\s;<>=!~\[]", r.strip(), maxsplit=1)[0]) for r in requirements}


def test_pyproject_declares_what_minigpt_imports_at_runtime():
    """每个模块 import 的第三方包都在 dependencies 里；与某个可选依赖组同名的模块
    （如 grade 对应 minigpt[grade]）还可以用那一组里的包；批改的子包 minigpt/grading/ 里的模块用 grade 组。"""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    core = _names(project["dependencies"])
    extras = {name: _names(reqs) for name, reqs in project.get("optional-dependencies", {}).items()}
    dists = packages_distributions()
    missing, seen = {}, set()
    for path in sorted((REPO / "src" / "minigpt").rglob("*.py")):
        imports = _third_party_imports(path)
        seen |= imports
        group = "grade" if "grading" in path.relative_to(REPO / "src" / "minigpt").parts else path.stem
        allowed = core | extras.get(group, set())
        needed = {lock.canonical(dists[name][0]) for name in imports}
        if needed - allowed:
            missing[path.name] = sorted(needed - allowed)
    assert {"torch", "numpy", "matplotlib"} <= seen
    assert not missing, f"pyproject.toml 没有声明：{missing}"


def _venv_from_the_lock(tmp_path) -> Path:
    """一个按 make setup 的做法（tools/lock.py install）从空目录新建的环境。

    跑测试的 .venv 若正是这样建出来的（全新的 clone 上 make test 先做 make setup，lock.py 在环境里记下了这一点，
    并记下锁的 SHA-256），就直接检查它：再建一个一模一样的只是多花一两分钟。否则（开发者的 .venv 是增量装的，
    或锁已经改了）在临时目录里新建一个。"""
    here = Path(sys.prefix)
    if lock.fresh_from_lock(here):
        return here
    venv = tmp_path / "venv"
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "lock.py"), "install", "--venv", str(venv)],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert lock.fresh_from_lock(venv), "lock.py install 新建的环境没有记下它是从空目录按当前的锁建的"
    return venv


@pytest.mark.slow
def test_fresh_venv_from_the_lock_has_exactly_the_locked_set(tmp_path):
    """从锁新建的环境（见 _venv_from_the_lock）与锁逐行比较：一个不多、一个不少、版本相同；
    不继承系统的 site-packages；minigpt 是仓库里 src/ 的可编辑安装。"""
    venv = _venv_from_the_lock(tmp_path)
    python = venv / "bin" / "python"
    cfg = (venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in cfg
    installed = sorted(lock.freeze(python).splitlines(), key=str.lower)
    locked = sorted((line for line in lock.LOCK.read_text(encoding="utf-8").splitlines()
                     if line.strip() and not line.startswith("#")), key=str.lower)
    assert installed == locked
    where = subprocess.run([str(python), "-c", "import minigpt, sys; print(minigpt.__file__)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).resolve() == (REPO / "src" / "minigpt" / "__init__.py").resolve()


def test_provenance_says_fresh_only_for_a_venv_created_from_empty_with_this_lock(tmp_path, monkeypatch):
    venv = tmp_path / "venv"
    venv.mkdir()
    assert not lock.fresh_from_lock(venv)                      # 没有记录
    lock.record_provenance(venv, fresh=False)
    assert not lock.fresh_from_lock(venv)                      # 在已有的环境上增量安装
    lock.record_provenance(venv, fresh=True)
    assert lock.fresh_from_lock(venv)
    other = tmp_path / "other.lock"
    other.write_text("torch==2.13.0+cpu\n")
    monkeypatch.setattr(lock, "LOCK", other)
    assert not lock.fresh_from_lock(venv)                      # 锁之后又改了
    (venv / lock.PROVENANCE).write_text("不是 JSON")
    assert not lock.fresh_from_lock(venv)


def test_parallel_install_puts_pip_first_torch_alone_and_every_pin_in_exactly_one_part(tmp_path):
    """make setup 在新环境里分几份同时装锁（lock.split_lock）：pip、setuptools、wheel 那一份先单独装；其余每个包正好在一份里。"""
    pins = [f"{name}=={version}" for name, version in lock.read_pins(lock.LOCK).items()]
    first, parts = lock.split_lock(tmp_path, 3)
    lines = {path: path.read_text(encoding="utf-8").split() for path in [first, *parts]}
    assert sorted(lines[first]) == sorted(p for p in pins if p.split("==")[0] in ("pip", "setuptools", "wheel"))
    assert lines[first] and lines[parts[0]] == [next(p for p in pins if p.startswith("torch=="))]
    assert len(parts) == 3 and all(lines[part] for part in parts)
    assert sorted(line for group in lines.values() for line in group) == sorted(pins)
