"""构建就是测试：单元出错、写 stderr、发警告、引用落空、运行超时，构建都必须失败并指出页面。

这些样例书只含一个小页面、不 import torch，配置取自本书真实的 _config.yml，
用的也是真实的构建脚本，所以它们检验的正是本书的构建设置。
"""

from __future__ import annotations

import pytest

from conftest import FAILING_PAGES, make_mini_book, run_build

pytestmark = pytest.mark.book


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
