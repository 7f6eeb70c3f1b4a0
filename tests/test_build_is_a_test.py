"""构建就是测试：单元出错、写 stderr、发警告、引用落空、运行超时，构建都必须失败并指出页面。

这些样例书只含一个小页面、不 import torch，配置取自本书真实的 _config.yml，
用的也是真实的构建脚本，所以它们检验的正是本书的构建设置。
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BUILD_SCRIPT, FAILING_PAGES, make_mini_book, run_build
from pagekit import load_path

pytestmark = [pytest.mark.book, pytest.mark.kernel]  # 构建小书：每页启动一个内核


def build_fixture(tmp_path, name, **config_changes):
    page = (FAILING_PAGES / f"{name}.md").read_text(encoding="utf-8")
    root = make_mini_book(tmp_path, {name: page}, config_changes)
    return run_build(root, timeout=600)


def test_fixture_harness_builds_a_good_page(tmp_path):
    """对照组：同样的搭法，页面没问题时构建成功，且 HTML 里有执行结果。"""
    result = build_fixture(tmp_path, "all_good")
    assert result.returncode == 0, result.output[-4000:]
    assert "fixture-ok-42" in (result.html / "all_good.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "name, config_changes",
    [
        ("cell_raises", {}),
        ("writes_stderr", {}),
        ("emits_warning", {}),
        ("broken_xref", {}),
        ("runs_too_long", {"execute.timeout": 3}),
    ],
)
def test_bad_page_fails_the_build_and_names_the_page(tmp_path, name, config_changes):
    result = build_fixture(tmp_path, name, **config_changes)
    assert result.returncode != 0, f"{name}: 构建本应失败却成功了\n{result.output[-4000:]}"
    complaints = [
        line for line in result.output.splitlines()
        if f"{name}.md" in line and ("WARNING" in line or "ERROR" in line)
    ]
    assert complaints, f"{name}: 输出里没有指名该页面的警告或错误\n{result.output[-4000:]}"


def test_timeout_fixture_is_stopped_by_the_timeout_not_by_the_test(tmp_path):
    """超时样例睡 60 秒、超时设 3 秒：构建应在远小于 60 秒内结束，并报告超时。"""
    import time

    start = time.monotonic()
    result = build_fixture(tmp_path, "runs_too_long", **{"execute.timeout": 3})
    assert result.returncode != 0
    assert time.monotonic() - start < 55, "构建没有被执行超时打断"
    assert "CellTimeoutError" in result.output, result.output[-4000:]


# ---------------------------------------------------------------- 并行预执行、执行缓存、被打断的构建

ROOT_PAGE = "# 样例书\n\n只用来做目录的根页面。\n"


def test_parallel_preexecution_names_every_failing_page(tmp_path):
    """并行路径：两页同时预执行，一页抛异常、一页超时；和一页一页执行时一样，输出指名这两页。"""
    pages = {"index": ROOT_PAGE}
    for name in ("cell_raises", "runs_too_long"):
        pages[name] = (FAILING_PAGES / f"{name}.md").read_text(encoding="utf-8")
    root = make_mini_book(tmp_path, pages, {"execute.timeout": 3})
    result = run_build(root, "--workers", "2", timeout=600)
    assert "并行预执行 2 页（2 个进程）" in result.output, result.output[-4000:]
    assert result.returncode != 0
    for name in ("cell_raises", "runs_too_long"):
        complaints = [line for line in result.output.splitlines()
                      if f"{name}.md" in line and ("WARNING" in line or "ERROR" in line)]
        assert complaints, f"并行路径的输出里没有指名 {name}\n{result.output[-4000:]}"
    assert "CellTimeoutError" in result.output and "fixture: this cell raises" in result.output


def _code_page(title: str, code: str) -> str:
    header = (FAILING_PAGES / "all_good.md").read_text(encoding="utf-8").split("---\n", 2)[1]
    return f"---\n{header}---\n\n# {title}\n\n```{{code-cell}} ipython3\n{code}\n```\n"


def test_corrupt_execution_cache_is_reported_in_one_line_and_rebuilt(tmp_path):
    pages = {"index": ROOT_PAGE,
             "first": _code_page("第一页", "print('first-page-output', 6 * 7)"),
             "second": _code_page("第二页", "print('second-page-output', 2 ** 10)")}
    root = make_mini_book(tmp_path, pages)
    assert run_build(root, timeout=600).returncode == 0
    db = root / "_build" / ".jupyter_cache" / "global.db"
    assert db.is_file()
    db.write_bytes(random.Random(0).randbytes(4096))  # 写坏数据库
    page = root / "second.md"
    page.write_text(page.read_text(encoding="utf-8").replace("2 ** 10", "2 ** 11"), encoding="utf-8")

    result = run_build(root, timeout=600)
    assert result.returncode == 0, result.output[-4000:]
    notices = [line for line in result.output.splitlines() if "执行缓存" in line and "已损坏" in line]
    assert len(notices) == 1, result.output[-4000:]
    assert "Traceback" not in result.output and "sqlalchemy" not in result.output.lower().replace(
        notices[0].lower(), "")
    assert "second-page-output 2048" in (result.html / "second.html").read_text(encoding="utf-8")
    assert "first-page-output 42" in (result.html / "first.html").read_text(encoding="utf-8")

    again = run_build(root, timeout=600)  # 重建的缓存能用：不再报告损坏
    assert again.returncode == 0 and "已损坏" not in again.output


def _article_texts(html_dir: Path, names) -> dict[str, str]:
    return {name: load_path(html_dir / f"{name}.html").text for name in names}


def test_interrupted_build_is_followed_by_a_build_equal_to_a_cold_one(tmp_path):
    """构建在执行页面时被 Ctrl-C（SIGINT）打断；下一次构建成功，页面与冷构建的一字不差。"""
    pages = {"index": ROOT_PAGE,
             "slow": _code_page("慢的一页", "import time\ntime.sleep(8)\nprint('slow-page-done', sum(range(10)))"),
             "fast": _code_page("快的一页", "print('fast-page-done', 3 * 14)")}
    (tmp_path / "interrupted").mkdir()
    (tmp_path / "cold").mkdir()
    interrupted = make_mini_book(tmp_path / "interrupted", pages)
    cold = make_mini_book(tmp_path / "cold", pages)

    proc = subprocess.Popen(
        [sys.executable, str(BUILD_SCRIPT), "--root", str(interrupted), "--workers", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    seen = []
    for line in proc.stdout:  # 等到页面真正开始执行
        seen.append(line)
        if "并行预执行" in line:
            break
    time.sleep(3)
    os.killpg(proc.pid, signal.SIGINT)  # 和终端里按 Ctrl-C 一样：信号发给整个进程组
    try:
        rest, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("构建被 SIGINT 打断后两分钟还没有退出:\n" + "".join(seen))
    assert any("并行预执行" in line for line in seen), "".join(seen)
    assert proc.returncode != 0, "被打断的构建不应报告成功\n" + "".join(seen) + rest
    assert not (interrupted / "_build" / ".last-html-ok").exists()

    after = run_build(interrupted, timeout=600)
    assert after.returncode == 0, after.output[-4000:]
    reference = run_build(cold, timeout=600)
    assert reference.returncode == 0, reference.output[-4000:]
    got, want = _article_texts(after.html, pages), _article_texts(reference.html, pages)
    assert got == want
    assert "slow-page-done 45" in got["slow"] and "fast-page-done 42" in got["fast"]
