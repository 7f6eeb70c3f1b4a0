"""tools/nb_internals.py：myst-nb / jupyter-cache 内部接口的唯一入口（不构建书，不启动内核）。"""

from __future__ import annotations

import os
import random
from importlib.metadata import version

import pytest

import nb_internals
from conftest import build_book


def test_installed_versions_are_the_verified_ones():
    nb_internals.check_versions()  # 按锁安装的环境必须通过
    assert version("myst-nb") in nb_internals.VERIFIED["myst-nb"]


def test_unverified_versions_fail_loudly_naming_each_package():
    with pytest.raises(nb_internals.UnsupportedVersions) as info:
        nb_internals.check_versions({"myst-nb": {"0.0.1"}, "jupyter-cache": {"0.0.2"},
                                     "no-such-package-xyz": {"1.0"}})
    message = str(info.value)
    assert f"myst-nb {version('myst-nb')}（验证过的版本：0.0.1）" in message
    assert f"jupyter-cache {version('jupyter-cache')}（验证过的版本：0.0.2）" in message
    assert "no-such-package-xyz 没有安装" in message


def test_build_refuses_to_run_on_unverified_versions(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(nb_internals, "VERIFIED", {"jupyter-cache": {"0.0.1"}})
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: index\n", encoding="utf-8")
    (tmp_path / "_config.yml").write_text("title: x\n", encoding="utf-8")
    assert build_book.main(["--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "jupyter-cache" in err and "0.0.1" in err


@pytest.mark.parametrize("damage", ["random-bytes", "empty-file"])
def test_probe_detects_a_damaged_cache_database(tmp_path, damage):
    nbi = nb_internals.load()
    cache_dir = tmp_path / ".jupyter_cache"
    nbi.open_cache(cache_dir).list_cache_records()  # 建一个正常的缓存
    assert nbi.probe_cache(cache_dir) is None
    db = cache_dir / "global.db"
    db.write_bytes(random.Random(1).randbytes(2048) if damage == "random-bytes" else b"")
    reason = nbi.probe_cache(cache_dir)
    assert reason and "\n" not in reason
    assert build_book.ensure_cache_usable(cache_dir) is True
    assert not cache_dir.exists()
    assert build_book.ensure_cache_usable(cache_dir) is False  # 没有缓存也算能用


def test_worker_count_comes_from_the_cpus_this_process_may_use():
    assert build_book.cpu_workers() == len(os.sched_getaffinity(0))
