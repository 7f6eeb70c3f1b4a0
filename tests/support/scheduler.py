"""make test 的两个工作进程（pytest-xdist：-n 2 --dist loadscope）：测试怎样分组、先派哪一组，
以及几个工作进程怎样共用只能做一次的事（整本书与 PDF 的构建、字体缓存）。conftest.py 的钩子调用这里。"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from support.book import REPO, BuildResult, run_build

# 同一组的测试在同一个工作进程里依次运行。默认一个模块一组：模块级的夹具（浏览器、批改结果）只建一次。
# 几个模块要合成一组：批改程序的三个模块都在沙箱用户下起进程、又从 /proc 查剩下的进程，同时跑会看见彼此；
# 用全新虚拟环境（fresh_venv）的三个模块往同一个环境里装各自那一份本书的包，必须一个接一个
SHARED_GROUPS = {
    "test_homework_grade": "grader", "test_grading_sandbox": "grader", "test_grading_threads": "grader",
    "test_notebooks": "fresh-venv", "test_homework_bundle": "fresh-venv", "test_release": "fresh-venv",
}
# 先派最久的组（make test 的 --durations 与每个工作进程的时间线，按组相加），免得最后只剩一个进程在跑一个长组；
# 其余按收集顺序。整本书由第一个要它的组构建（约 40 秒），所以要它的浏览器检查排在不要它的两个长组之后
LONGEST_FIRST = ("grader", "test_build_is_a_test", "test_browser", "fresh-venv", "test_pdf", "test_interactive_browser",
                 "test_code_cells", "test_exercise_code", "test_glossary", "test_stale_output", "test_plots",
                 "test_serve")


def group_of(nodeid: str) -> str:
    """测试所在的组：tests/test_x.py::test_y[...] → SHARED_GROUPS 里它的模块所在的组，否则就是模块名。"""
    module = Path(nodeid.split("::", 1)[0]).stem
    return SHARED_GROUPS.get(module, module)


def make_scheduler(config, log):
    """--dist loadscope 时按 group_of 分组（xdist 的 loadscope 只认模块）。

    没有用 xdist 自带的 --dist loadgroup 加 xdist_group 标记：xdist 3.8 靠改写测试的 nodeid 传递分组，
    pytest 9.2 的 nodeid 改不动了，分组悄悄失效（pytest-xdist issue #1386）。loadscope 的调度器只通过
    _split_scope 决定分组，xdist 自己的 loadgroup、loadfile 也是这样改它的。"""
    if config.getvalue("dist") != "loadscope":
        return None
    # xdist 默认把组按测试个数从多到少重排（--loadscope-reorder），那会打乱上面 LONGEST_FIRST 排好的先后：
    # 一个只有 19 个测试、却要跑三分钟的组会被排到最后。按收集顺序（order_longest_first 排好的）派
    config.option.loadscopereorder = False
    from xdist.scheduler import LoadScopeScheduling

    class BookGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return BookGroups(config, log)


def order_longest_first(items) -> None:
    """最久的组排在最前（xdist 按收集顺序派组）；稳定排序：组内与其余的顺序不变。"""
    rank = {group: i for i, group in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(rank)))


def run_temp(tmp_path_factory) -> Path:
    """这一次测试运行的所有工作进程共用的临时目录（不用 xdist 时就是这次运行的临时目录）。"""
    base = tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


def once_per_run(tmp_path_factory, name: str, make):
    """整个测试运行只做一次 make()，几个工作进程共用它的结果（一个 JSON 能表达的值）。

    pytest-xdist 下每个工作进程各有一份会话级夹具；整本书与 PDF 却是构建在仓库的 _build/ 里的，只能构建一次。
    第一个要它的进程拿着文件锁去构建，别的进程等锁、再读它写下的结果。不用 xdist 时直接 make()。"""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return make()
    from filelock import FileLock

    shared = run_temp(tmp_path_factory)
    done = shared / f"{name}.json"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists():
            done.write_text(json.dumps(make(), ensure_ascii=False), encoding="utf-8")
        return json.loads(done.read_text(encoding="utf-8"))


def shared_build(tmp_path_factory, name: str, *extra: str) -> BuildResult:
    """在仓库里运行一次构建脚本，这次测试运行的所有工作进程共用它（见 once_per_run）。"""
    def build():
        result = run_build(REPO, *extra)
        return {"returncode": result.returncode, "output": result.output}

    done = once_per_run(tmp_path_factory, name, build)
    return BuildResult(REPO, done["returncode"], done["output"])


def record(event: str, nodeid: str) -> None:
    """环境变量 BOOK_TEST_TIMELINE 给了文件名时，追加一行“时刻 工作进程 start|finish 测试”（制表符分隔）。
    只在真正运行测试的进程里记（pytest-xdist 的主进程也会收到这两个钩子，那里不记）。
    tools/test_timeline.py 读它：每个组花了多久、每个工作进程闲了多久。"""
    path = os.environ.get("BOOK_TEST_TIMELINE")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not path or worker is None and _is_xdist_controller():
        return
    worker = worker or "main"
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{time.time():.3f}\t{worker}\t{event}\t{nodeid}\n")


def _is_xdist_controller() -> bool:
    import sys

    return any(arg.startswith(("-n", "--numprocesses")) for arg in sys.argv[1:])
