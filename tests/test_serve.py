"""make serve：本地服务器提供网站、注入自动刷新脚本；改一页之后，经由构建脚本重建，服务器随即给出新页面。"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from support.book import FAILING_PAGES, REPO, make_mini_book
from support.processes import ctrl_c_reaches_it

pytestmark = [pytest.mark.book, pytest.mark.kernel]


def _get(url: str, timeout: float = 60) -> str:
    """服务器宣布地址之后可能还要片刻才开始监听：重试到 timeout 秒。"""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return response.read().decode("utf-8")
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_serve_rebuilds_through_the_build_script_and_serves_the_new_page(tmp_path):
    root = make_mini_book(tmp_path, {
        "book/index": "# 预览\n\n第一版的文字。\n",
        "book/all_good": (FAILING_PAGES / "all_good.md").read_text(encoding="utf-8"),
    })
    proc = subprocess.Popen([sys.executable, str(REPO / "tools" / "serve.py"), "--root", str(root), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=ctrl_c_reaches_it)
    log: list[str] = []
    try:
        url = None
        for line in proc.stdout:
            log.append(line)
            if m := re.search(r"Serving on (http://127\.0\.0\.1:\d+)", line):
                url = m.group(1)
                break
        assert url, "服务器没有启动：\n" + "".join(log[-60:])
        # 之后的输出也要读走，否则管道写满，服务器在下一次重建时就卡住了
        reader = threading.Thread(target=lambda: log.extend(proc.stdout), daemon=True)
        reader.start()
        assert any("build_book.py" in line for line in log), "第一次构建没有经由 tools/build_book.py"
        page = _get(f"{url}/book/index.html")
        assert "第一版的文字" in page
        assert "/websocket-reload" in page, "页面里没有自动刷新的脚本"
        assert "fixture-ok-42" in _get(f"{url}/book/all_good.html")
        assert "/websocket-reload" not in (root / "_build" / "html" / "book" / "index.html").read_text(
            encoding="utf-8"), "自动刷新脚本不应写进 _build/html 的文件"

        (root / "book" / "index.md").write_text("# 预览\n\n第二版的文字。\n", encoding="utf-8")
        deadline = time.monotonic() + 300
        while "第二版的文字" not in (page := _get(f"{url}/book/index.html")):
            assert time.monotonic() < deadline, "改动五分钟内没有出现在服务器给出的页面上"
            time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if url:
            reader.join(timeout=10)
        else:
            log.append(proc.stdout.read())
    output = "".join(log)
    assert "Detected changes" in output and "index.md" in output
    assert output.count("[build_book] jupyter-book build") >= 2, output[-4000:]
