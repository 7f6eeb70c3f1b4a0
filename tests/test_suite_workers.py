"""make test 的两个工作进程（pytest-xdist）：仓库里的整本书与 PDF 只构建一次，两个进程都用这一次的结果；
该在同一个进程里依次运行的模块被分到同一组。"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import pytest

from support.book import REPO
from support.scheduler import LONGEST_FIRST, SHARED_GROUPS

pytestmark = pytest.mark.slow  # 起一次带两个工作进程的 pytest

SHARING_CONFTEST = f'''
import json, os, sys
import pytest

sys.path.insert(0, {str(REPO / "tests")!r})  # 本书测试的 support 包
from support.scheduler import once_per_run


@pytest.fixture(scope="session")
def shared(tmp_path_factory):
    def make():
        with open(os.environ["MAKE_LOG"], "a") as log:
            log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
        return {{"made_by": os.environ["PYTEST_XDIST_WORKER"], "pid": os.getpid()}}
    return once_per_run(tmp_path_factory, "shared", make)
'''

SHARING_TEST = '''
import json, os

def test_{name}(shared):
    with open(os.environ["SEEN_LOG"], "a") as log:
        log.write(json.dumps([os.environ["PYTEST_XDIST_WORKER"], shared]) + "\\n")
'''


def test_two_workers_make_a_shared_build_once_and_both_get_its_result(tmp_path):
    """两个工作进程各有一个要用它的测试：make() 只运行一次，两个进程拿到的是同一个结果。"""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(SHARING_CONFTEST, encoding="utf-8")
    for name in ("a", "b"):
        (suite / f"test_{name}.py").write_text(SHARING_TEST.format(name=name), encoding="utf-8")
    make_log, seen_log = tmp_path / "made.txt", tmp_path / "seen.jsonl"
    env = {**os.environ, "MAKE_LOG": str(make_log), "SEEN_LOG": str(seen_log)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                           "--basetemp", str(tmp_path / "tmp"), str(suite)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=suite)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    seen = [json.loads(line) for line in seen_log.read_text().splitlines()]
    assert sorted(worker for worker, _ in seen) == ["gw0", "gw1"], seen   # 两个进程各跑了一个
    assert len(make_log.read_text().splitlines()) == 1, make_log.read_text()  # 只做了一次
    assert seen[0][1] == seen[1][1], seen                                    # 拿到的是同一个结果


GROUPING_CONFTEST = f"""
import importlib.util, sys
sys.path.insert(0, {str(REPO / "tests")!r})  # 本书的 conftest 从 support 包 import
spec = importlib.util.spec_from_file_location("book_conftest", {str(REPO / "tests" / "conftest.py")!r})
book_conftest = importlib.util.module_from_spec(spec)
sys.modules["book_conftest"] = book_conftest
spec.loader.exec_module(book_conftest)
pytest_xdist_make_scheduler = book_conftest.pytest_xdist_make_scheduler  # 本书的分组
pytest_collection_modifyitems = book_conftest.pytest_collection_modifyitems  # 本书的先后（LONGEST_FIRST）
"""

GROUPED_TEST = """
import json, os, pytest

@pytest.mark.parametrize("i", range({count}))
def test_where(i):
    with open(os.environ["SEEN_LOG"], "a") as log:
        log.write(json.dumps([__name__, os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")
"""


def _run_grouped_suite(tmp_path, tests_per_module: dict[str, int], workers: int) -> list[tuple[str, str]]:
    """用本书 conftest 的调度器和 make test 的跑法（--dist loadscope）跑一个小测试集；
    返回每个测试按运行先后记下的 (模块, 工作进程)。"""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(GROUPING_CONFTEST, encoding="utf-8")
    for module, count in tests_per_module.items():
        (suite / f"{module}.py").write_text(GROUPED_TEST.format(count=count), encoding="utf-8")
    seen_log = tmp_path / "seen.jsonl"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers),
                           "--dist", "loadscope", "--basetemp", str(tmp_path / "tmp"), str(suite)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SEEN_LOG": str(seen_log)}, cwd=suite)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [tuple(json.loads(line)) for line in seen_log.read_text().splitlines()]


def test_under_loadscope_a_group_runs_in_one_worker(tmp_path):
    """make test 的命令行（-n 2 --dist loadscope）加上本书 conftest 的调度器：批改程序的两个模块的 6 个测试
    都在同一个工作进程里，另一个模块的 3 个测试也都在一个进程里。调度器若没起作用，xdist 按模块分组，
    两个批改模块会先后派给两个进程。"""
    seen = _run_grouped_suite(tmp_path, dict.fromkeys(
        ("test_homework_grade", "test_grading_sandbox", "test_something_else"), 3), workers=2)
    workers: dict[str, set[str]] = {}
    for module, worker in seen:
        group = "grader" if module in ("test_homework_grade", "test_grading_sandbox") else module
        workers.setdefault(group, set()).add(worker)
    assert sorted(workers) == ["grader", "test_something_else"], workers
    assert all(len(w) == 1 for w in workers.values()), workers


def test_modules_that_share_sandbox_users_or_a_fresh_venv_are_grouped():
    """批改程序的模块同在一组（都在沙箱用户下起进程，又都从 /proc 里找剩下的进程）；用全新虚拟环境的模块
    同在一组（往同一个环境里装包）。每个被点名的模块都真的存在、也真的用到那样东西。"""
    uses = {"grader": "minigpt.grad", "fresh-venv": "fresh_venv"}
    for module, group in SHARED_GROUPS.items():
        path = REPO / "tests" / f"{module}.py"
        assert path.is_file(), path
        assert uses[group] in path.read_text(encoding="utf-8"), f"{module} 没有用到 {uses[group]}"
    takes_fresh_venv = re.compile(r"def \w+\([^)]*\bfresh_venv\b")  # 测试或夹具的参数里有 fresh_venv
    users = {p.stem for p in (REPO / "tests").glob("test_*.py") if takes_fresh_venv.search(p.read_text(encoding="utf-8"))}
    assert users == {m for m, g in SHARED_GROUPS.items() if g == "fresh-venv"}


def test_under_loadscope_the_longest_group_is_handed_out_first(tmp_path):
    """LONGEST_FIRST 里的组先派出去，即使它的测试比别的组少：xdist 默认按测试个数重排，本书的调度器关掉了它。
    一个工作进程时，组按派出的先后依次运行。"""
    assert "test_build_is_a_test" in LONGEST_FIRST
    seen = _run_grouped_suite(tmp_path, {"test_many_quick_ones": 8, "test_build_is_a_test": 1}, workers=1)
    order = [module for module, _ in seen]
    assert order == ["test_build_is_a_test"] + ["test_many_quick_ones"] * 8, order
