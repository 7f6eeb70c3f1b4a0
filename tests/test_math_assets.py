"""book_math 与 book_assets 里不依赖构建的部分（单元测试，不构建书）。

在构建出的网站上的检查见 test_formulas.py（公式）与 test_page_weight.py（每页下载多少）。
"""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "book" / "_ext"))
import book_assets  # noqa: E402
import book_math  # noqa: E402


def test_multiline_blocks_are_wrapped_like_sphinx_does_for_mathjax():
    assert book_math.wrap_like_sphinx("a + b") == "a + b"
    assert book_math.wrap_like_sphinx("x &= 1 \\\\\ny &= 2") == "\\begin{split}x &= 1 \\\\\ny &= 2\\end{split}"
    two = book_math.wrap_like_sphinx("a = 1\n\nb = 2")
    assert two == "\\begin{aligned}a = 1\\\\b = 2\\end{aligned}"


def test_wrapped_blocks_render_in_the_locked_katex():
    """包好的多行公式，npm 锁里的 KaTeX 排得出来（不包就排不出来：这正是要包的原因）。"""
    katex = book_math.find_katex(REPO)
    assert katex is not None, "没有 node_modules/katex：先 make setup"
    script = ("const k = require(process.argv[1]); const ok = t => { try { k.renderToString(t, "
              "{displayMode: true, throwOnError: true}); return 'ok'; } catch (e) { return 'error'; } };"
              "console.log(ok(process.argv[2]), ok(process.argv[3]));")
    raw = "x' &= x + 1 \\\\\ny &= x'"
    out = subprocess.run(["node", "-e", script, str(katex / "dist" / "katex.min.js"), raw,
                          book_math.wrap_like_sphinx(raw)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["error", "ok"]


def test_katex_css_keeps_only_woff2_and_swaps_fonts():
    css = ('@font-face{font-family:KaTeX_AMS;src:url(fonts/A.woff2) format("woff2"),url(fonts/A.woff) '
           'format("woff"),url(fonts/A.ttf) format("truetype")}.katex{x:1}')
    out = book_math.woff2_only(css)
    assert out == ('@font-face{font-display:swap;font-family:KaTeX_AMS;src:url(fonts/A.woff2) format("woff2")}'
                   '.katex{x:1}')


def test_katex_is_found_above_the_book_or_on_node_path(tmp_path):
    package = tmp_path / "modules" / "katex" / "dist"
    package.mkdir(parents=True)
    (package / "katex.min.js").write_text("", encoding="utf-8")
    book = tmp_path / "a" / "b"
    book.mkdir(parents=True)
    assert book_math.find_katex(book) is None
    assert book_math.find_katex(book, str(tmp_path / "modules")) == package.parent
    (tmp_path / "node_modules").symlink_to(tmp_path / "modules")
    assert book_math.find_katex(book) == package.parent


def test_icon_codepoints_are_read_from_the_theme_rules():
    css = '.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}.fa-sun:before{content:"\\f185"}'
    assert book_assets.icon_codepoints(css) == {"bars": 0xF0C9, "navicon": 0xF0C9, "sun": 0xF185}


FAKE_KATEX_SERVER = r"""
import pathlib, socket, sys, time
path, bound, go = sys.argv[1:4]
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)                      # 套接字文件这时就有了……
pathlib.Path(bound).touch()
while not pathlib.Path(go).exists():   # ……可要等测试放行才 listen
    time.sleep(0.01)
server.listen()
conn, _ = server.accept()
conn.recv(1)
"""


def test_katex_server_start_survives_a_socket_that_exists_before_it_listens(tmp_path, monkeypatch):
    """忙的机器上，Node 进程 bind 之后要过一会儿才 listen：sphinxcontrib-katex 原来的做法这时连接被拒、构建失败；
    book_math 换上的做法再连，直到对方 listen（见 book_math 模块说明第 8 条）。"""
    import socket
    import threading
    import time

    from sphinxcontrib.katex import KaTeXServer

    bound, go = tmp_path / "bound", tmp_path / "go"

    class FakeServer:
        @classmethod
        def build_command(cls, socket):
            return [sys.executable, "-c", FAKE_KATEX_SERVER, str(socket), str(bound), str(go)]

    def release(rundir):  # 放行假服务器，等它 listen 之后连一次，让它退出
        go.touch()
        for _ in range(12_000):  # 最多约 2 分钟
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                try:
                    sock.connect(str(rundir / "katex.sock"))
                except ConnectionRefusedError:
                    time.sleep(0.01)
                    continue
                sock.sendall(b"x")
                return
        raise AssertionError("假服务器一直没有 listen")

    # sphinxcontrib-katex 自己的做法：一看到文件就连，被拒
    first = tmp_path / "first"
    first.mkdir()
    try:
        KaTeXServer.start_server_process.__func__(FakeServer, first, 30.0)
        raise AssertionError("原来的做法这次应当连接被拒")
    except ConnectionRefusedError:
        pass
    finally:
        release(first)

    # book_math 的做法：被拒至少一次之后放行，它连上了
    bound.unlink()
    go.unlink()
    refused = threading.Event()

    class CountingSocket(socket.socket):
        def connect(self, address):
            try:
                super().connect(address)
            except ConnectionRefusedError:
                refused.set()
                raise

    monkeypatch.setattr(book_math.socket, "socket", CountingSocket)
    second = tmp_path / "second"
    second.mkdir()
    result = {}
    worker = threading.Thread(target=lambda: result.update(
        started=book_math.patient_server_process(FakeServer, second, 5.0)))
    worker.start()
    assert refused.wait(120), "连接一次也没有被拒：假服务器没有按 bind 之后再 listen 的顺序来"
    go.touch()
    worker.join(120)
    process, sock = result["started"]
    sock.sendall(b"x")
    sock.close()
    assert process.wait(60) == 0


def test_katex_server_start_reports_a_node_that_exits(tmp_path):
    class DeadServer:
        @classmethod
        def build_command(cls, socket):
            return [sys.executable, "-c", "import sys; print('katex: 出错了'); sys.exit(3)"]

    try:
        book_math.patient_server_process(DeadServer, tmp_path, 5.0)
        raise AssertionError("Node 进程退出了，应当报错")
    except RuntimeError as error:
        assert "退出码 3" in str(error) and "katex: 出错了" in str(error)
