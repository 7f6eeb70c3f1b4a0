"""tools/nb_internals.py：myst-nb / jupyter-cache 内部接口的唯一入口（不构建书；只有标了 kernel 的那个测试启动内核）。"""

from __future__ import annotations

import os
import random
from importlib.metadata import version

import pytest

import nb_internals
from support.book import build_book


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


def _stored_cache(tmp_path):
    """一个存了一页笔记本的执行缓存。"""
    import nbformat

    nbi = nb_internals.load()
    cache_dir = tmp_path / ".jupyter_cache"
    cache = nbi.open_cache(cache_dir)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nbi, cache_dir, cache, nb


def test_a_cache_record_without_its_notebook_file_is_reported_and_discarded(tmp_path):
    """jupyter-cache 先提交记录、再写文件：写到一半的进程被结束，就留下没有文件的记录（myst-nb 读它时抛 KeyError）。"""
    nbi, cache_dir, cache, nb = _stored_cache(tmp_path)
    nbi.store(cache, nb, str(tmp_path / "a.md"))
    assert nbi.probe_cache(cache_dir) is None
    (record,) = cache.list_cache_records()
    cache._get_notebook_path_cache(record.hashkey).unlink()
    reason = nbi.probe_cache(cache_dir)
    assert reason and "没有对应的笔记本文件" in reason and "\n" not in reason
    assert build_book.ensure_cache_usable(cache_dir) is True and not cache_dir.exists()


def test_ctrl_c_while_storing_waits_until_the_notebook_file_is_written(tmp_path, monkeypatch):
    """构建脚本的信号处理（tools/children.py）下，写缓存时到来的 SIGINT 在写完之后才处理：记录和文件都在。
    进程里另有线程时也一样（信号可能交给任何一个线程，处理函数却总在主线程里运行）。"""
    import signal
    import threading

    import children

    nbi, cache_dir, cache, nb = _stored_cache(tmp_path)
    real = cache.cache_notebook_bundle
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)  # 另一个线程
    other.start()

    def interrupted_midway(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # 信号正好落在写缓存的中间
        for _ in range(100):  # 给处理函数足够的机会在这里运行
            sum(range(1000))
        return real(*args, **kwargs)

    monkeypatch.setattr(cache, "cache_notebook_bundle", interrupted_midway)
    previous = {s: signal.signal(s, children._raise) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(children.Interrupted):
            nbi.store(cache, nb, str(tmp_path / "a.md"))
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        stop.set()
    assert len(cache.list_cache_records()) == 1
    assert nbi.probe_cache(cache_dir) is None  # 记录与文件都在


@pytest.mark.kernel
def test_a_line_printed_in_pieces_stays_one_line_on_the_page(tmp_path):
    """内核把一行输出分几段发送（这里用 flush 逼它分段；忙的机器上定时器也会这样切）：构建执行完就把
    相邻的同名输出流原样接起来，myst-nb 合并输出流时（每段去掉结尾空白、补换行）这一行就不会断成两行。"""
    import nbformat
    from myst_nb.core.utils import coalesce_streams

    nbi = nb_internals.load()
    cell = nbformat.v4.new_code_cell(
        'import sys\nsys.stdout.write("标题:"); sys.stdout.flush()\nsys.stdout.write(" "); sys.stdout.flush()\n'
        'print("tensor([nan, nan])")\nprint("下一行")')
    nb = nbformat.v4.new_notebook(cells=[cell], metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    ok, _ = nbi.execute(nb, tmp_path, timeout=120)
    assert ok
    streams = [o for o in nb.cells[0].outputs if o.output_type == "stream"]
    assert len(streams) == 1 and streams[0].text == "标题: tensor([nan, nan])\n下一行\n"
    assert coalesce_streams(nb.cells[0].outputs)[0]["text"] == "标题: tensor([nan, nan])\n下一行\n"


def test_join_streams_keeps_stdout_stderr_and_displays_apart():
    import nbformat

    outputs = [nbformat.v4.new_output("stream", name="stdout", text="a"),
               nbformat.v4.new_output("stream", name="stdout", text=" b\n"),
               nbformat.v4.new_output("stream", name="stderr", text="w\n"),
               nbformat.v4.new_output("display_data", data={"text/plain": "x"}),
               nbformat.v4.new_output("stream", name="stdout", text="c\n")]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("", outputs=outputs)])
    nb_internals.join_streams(nb)
    got = [(o.output_type, o.get("name"), o.get("text")) for o in nb.cells[0].outputs]
    assert got == [("stream", "stdout", "a b\n"), ("stream", "stderr", "w\n"),
                   ("display_data", None, None), ("stream", "stdout", "c\n")]
