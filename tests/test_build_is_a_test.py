"""构建就是测试：单元出错、写 stderr、发警告、引用落空、运行超时，构建都必须失败并指出页面。

这些样例书只含一个小页面、不 import torch，配置取自本书真实的 _config.yml，
用的也是真实的构建脚本，所以它们检验的正是本书的构建设置。
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import children  # tools/：构建脚本结束子进程的办法，这里用它读进程树

import pytest

from support.book import BUILD_SCRIPT, FAILING_PAGES, make_mini_book, run_build
from support.processes import ctrl_c_reaches_it
from support.pagekit import load_path

# 构建小书：每页启动一个内核。小书共用一个建好的字体缓存（conftest.shared_font_cache），专门检验它的测试除外
pytestmark = [pytest.mark.book, pytest.mark.kernel, pytest.mark.usefixtures("shared_font_cache")]


# ipykernel 7.4 关内核时的一个已知竞态（ipython/ipykernel#1518）：处理完关机请求后，内核往已经关掉的 iopub
# 管道里写，于是把 “Uncaught exception in ZMQStream callback” 和一段以 ZMQError（Socket operation on non-socket）
# 结尾的回溯写到自己的 stderr，也就出现在构建的输出里。那时页面已经执行完、输出已经收好，构建照常成功。
# 压力大的机器上偶尔碰到（20 次打断测试里见过 1 次）。只放过这一种：构建脚本、Sphinx、myst-nb 的回溯照样算。
KERNEL_SHUTDOWN_RACE = "zmq.error.ZMQError: Socket operation on non-socket"


def tracebacks(output: str) -> list[str]:
    """输出里的 Python 回溯（每段到异常那一行为止），除去上面那个 ipykernel 关机竞态留下的。"""
    found, lines = [], output.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != "Traceback (most recent call last):":
            continue
        end = i + 1
        while end < len(lines) and lines[end].startswith(" "):
            end += 1
        block = "\n".join(lines[i:end + 1])
        race = lines[end:end + 1] == [KERNEL_SHUTDOWN_RACE] and "/ipykernel/" in block
        if not race:
            found.append(block)
    return found


def test_only_the_known_ipykernel_shutdown_race_is_excused_from_the_traceback_check():
    race = ("ERROR:tornado.general:Uncaught exception in ZMQStream callback\n"
            "Traceback (most recent call last):\n"
            '  File "/v/site-packages/ipykernel/kernelbase.py", line 408, in process_control\n'
            "    sys.stderr.flush()\n"
            '  File "/v/site-packages/ipykernel/iostream.py", line 343, in schedule\n'
            '    self._event_pipe.send(b"")\n'
            '  File "zmq/backend/cython/_zmq.py", line 190, in zmq.backend.cython._zmq._check_rc\n'
            f"{KERNEL_SHUTDOWN_RACE}\n")
    ours = ("Traceback (most recent call last):\n"
            '  File "/repo/tools/build_book.py", line 1, in run\n'
            "    main()\n"
            "KeyboardInterrupt\n")
    other_zmq = ours.replace("KeyboardInterrupt", KERNEL_SHUTDOWN_RACE)  # 同样的异常，不是从 ipykernel 来的
    assert tracebacks("build succeeded\n" + race) == []
    assert len(tracebacks(race + ours)) == 1 and "build_book.py" in tracebacks(race + ours)[0]
    assert len(tracebacks(other_zmq)) == 1


BAD_PAGES = ("cell_raises", "writes_stderr", "emits_warning", "broken_xref")
ROOT_PAGE = "# 样例书\n\n只用来做目录的根页面。\n"


@pytest.fixture(scope="module")
def failing_book(tmp_path_factory, shared_font_cache):
    """一本小书装下每一种坏页面（单元抛异常、写 stderr、发警告、引用落空、运行超时）和一页好页面，
    构建一次（--workers 1：不并行预执行，由 Sphinx 一页一页地执行，同只有一页要执行时的路径）。
    构建总是带 -W --keep-going：每一页的警告或错误都报出来，任何一条都让构建失败。返回 (结果, 用时)。"""
    pages = {"index": ROOT_PAGE}
    for name in ("all_good", *BAD_PAGES, "runs_too_long"):
        pages[name] = (FAILING_PAGES / f"{name}.md").read_text(encoding="utf-8")
    root = make_mini_book(tmp_path_factory.mktemp("failing"), pages, {"execute.timeout": 3})
    start = time.monotonic()
    result = run_build(root, "--workers", "1", timeout=600)
    return result, time.monotonic() - start


@pytest.mark.parametrize("name", BAD_PAGES)
def test_bad_page_fails_the_build_and_names_the_page(failing_book, name):
    result, _ = failing_book
    assert result.returncode != 0, f"{name}: 构建本应失败却成功了\n{result.output[-4000:]}"
    assert _names_the_page(result.output, name), f"{name}: 输出里没有指名该页面的警告或错误\n{result.output[-4000:]}"


def test_a_good_page_beside_bad_ones_is_executed_and_not_named(failing_book):
    """同一本书里的好页面照常执行（HTML 里有它的输出），输出里没有指名它的警告或错误：
    上面那些页面被指名，是因为它们坏，不是因为这样搭的书每页都会被指名。"""
    result, _ = failing_book
    assert "fixture-ok-42" in (result.html / "all_good.html").read_text(encoding="utf-8"), result.output[-4000:]
    assert not _names_the_page(result.output, "all_good"), result.output[-4000:]


def _names_the_page(output: str, name: str) -> bool:
    """构建输出里有一行指名 name.md 的 WARNING 或 ERROR。"""
    return any(f"{name}.md" in line and ("WARNING" in line or "ERROR" in line) for line in output.splitlines())


def test_timeout_fixture_is_stopped_by_the_timeout_not_by_the_test(failing_book):
    """超时样例睡 60 秒、超时设 3 秒：整本小书的构建应在远小于 60 秒内结束，报告超时，并且和上面几种坏页面一样指名页面。"""
    result, seconds = failing_book
    assert result.returncode != 0
    assert seconds < 55, "构建没有被执行超时打断"
    assert "CellTimeoutError" in result.output, result.output[-4000:]
    assert _names_the_page(result.output, "runs_too_long"), result.output[-4000:]


def test_the_font_cache_is_ready_before_the_first_page_runs(tmp_path, monkeypatch):
    """新机器上第一次 import matplotlib 要先建字体缓存；慢的机器上它往 stderr 写一句提示，页面的 stderr 会让构建失败。
    所以构建脚本在第一个内核执行页面之前就把缓存建好（warm_up）。这本小书不用共用的缓存：MPLCONFIGDIR 没有设，
    构建用它自己的、空的 _build/.mplconfig；两页并行预执行（Sphinx 还没启动），各自在 import matplotlib 之前
    看缓存是否已经在那里。内核照常启动（BOOK_KERNEL_PRELOAD=0）：内核母体预先 import matplotlib 时也会建缓存，
    那只在页面的代码里写着 matplotlib 时才发生，间接用到 matplotlib 的页面靠的是 warm_up。"""
    monkeypatch.delenv("MPLCONFIGDIR")
    monkeypatch.setenv("BOOK_KERNEL_PRELOAD", "0")
    look = ("import glob, os\n"
            "print('字体缓存已建好', bool(glob.glob(os.environ['MPLCONFIGDIR'] + '/fontlist-*.json')))\n"
            "import matplotlib.pyplot\nprint('pyplot 已载入')")
    pages = {"index": ROOT_PAGE, "a": _code_page("甲", look), "b": _code_page("乙", look)}
    root = make_mini_book(tmp_path, pages)
    result = run_build(root, "--workers", "2", timeout=600)
    assert result.returncode == 0, result.output[-4000:]
    assert "并行预执行 2 页" in result.output, result.output[-4000:]
    for name in ("a", "b"):
        text = load_path(result.html / f"{name}.html").text
        assert "字体缓存已建好 True" in text and "pyplot 已载入" in text, text[-2000:]
    assert list((root / "_build" / ".mplconfig").glob("fontlist-*.json")), "构建没有用这本书自己的 _build/.mplconfig"


# ---------------------------------------------------------------- 并行预执行、执行缓存、被打断的构建


def test_parallel_preexecution_names_every_failing_page(tmp_path):
    """并行路径：两页同时预执行，一页抛异常、一页超时；和一页一页执行时一样，输出指名这两页。"""
    pages = {"index": ROOT_PAGE}
    for name in ("cell_raises", "runs_too_long"):
        pages[name] = (FAILING_PAGES / f"{name}.md").read_text(encoding="utf-8")
    root = make_mini_book(tmp_path, pages, {"execute.timeout": 3})
    result = run_build(root, "--workers", "2", timeout=600)
    assert "并行预执行 2 页（2 个进程" in result.output, result.output[-4000:]
    assert result.returncode != 0
    for name in ("cell_raises", "runs_too_long"):
        assert _names_the_page(result.output, name), f"并行路径的输出里没有指名 {name}\n{result.output[-4000:]}"
    assert "CellTimeoutError" in result.output and "fixture: this cell raises" in result.output


def test_a_page_waits_for_its_pre_tasks_while_the_other_worker_runs_other_pages(tmp_path):
    """_config.yml 的 pre_tasks：任务在页面之前，分给工作进程；要它的页面等它结束才派出，另一个进程这时跑别的页面。
    不靠运气：任务一直等到页面 b 开始（b 写下标记），b 又等任务写下结果；页面 a 要读任务的结果。
    要是 a 没有等任务就被派出，它读不到结果（构建失败）；要是任务占着进程时别的页面派不出去，构建就卡住（超时）。"""
    marker, result = tmp_path / "b-started", tmp_path / "task-result"
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pretask.py").write_text(
        "import pathlib, time\n"
        "def run(marker, result, value):\n"
        "    while not pathlib.Path(marker).exists():\n"
        "        time.sleep(0.05)\n"
        "    pathlib.Path(result).write_text(str(value * 2))\n", encoding="utf-8")
    wait_b = (f"import pathlib, time\npathlib.Path({str(marker)!r}).write_text('b')\n"
              f"while not pathlib.Path({str(result)!r}).exists():\n    time.sleep(0.05)\nprint('b-done')")
    # a 的代码更长：按估计的秒数 a 排在 b 前面，没有依赖时它会先被派出
    read_a = f"# {'页面 a 读任务的结果' * 20}\nimport pathlib\nprint('task-said', pathlib.Path({str(result)!r}).read_text())"
    pages = {"index": ROOT_PAGE, "a": _code_page("甲", read_a), "b": _code_page("乙", wait_b)}
    root = make_mini_book(tmp_path, pages, {"pre_tasks": {"a.md": [["pretask.run", str(marker), str(result), 21]]}})
    out = run_build(root, "--workers", "2", timeout=600)
    assert out.returncode == 0, out.output[-4000:]
    # 预执行失败的页面会交给 Sphinx 重跑（那时任务早已结束）：所以还要查它没有在预执行里失败过
    assert "预执行失败" not in out.output and "预执行任务失败" not in out.output, out.output[-4000:]
    assert "task-said 42" in load_path(out.html / "a.html").text
    assert "b-done" in load_path(out.html / "b.html").text
    assert "另有 1 个任务排在要它们的页面之前" in out.output


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
    assert not tracebacks(result.output), result.output[-4000:]
    assert "sqlalchemy" not in result.output.lower().replace(notices[0].lower(), "")
    assert "second-page-output 2048" in (result.html / "second.html").read_text(encoding="utf-8")
    assert "first-page-output 42" in (result.html / "first.html").read_text(encoding="utf-8")

    again = run_build(root, timeout=600)  # 重建的缓存能用：不再报告损坏
    assert again.returncode == 0 and "已损坏" not in again.output


def _article_texts(html_dir: Path, names) -> dict[str, str]:
    return {name: load_path(html_dir / f"{name}.html").text for name in names}


# ---------------------------------------------------------------- 被打断的构建（Ctrl-C / SIGTERM）
#
# 不靠等几秒碰运气：页面的代码单元（或 Sphinx 扩展、或 TeX 文件）走到要打断的地方时写一个标记文件，
# 测试等到这个文件出现再发信号。等的地方在标记出现之后就一直卡着（直到被打断），所以信号一定落在那个阶段。

def _holding_cell(marker: Path, hold: Path | None = None) -> str:
    """写下标记（内容是内核的进程号），然后一直等：hold 为 None 时等到被打断，否则等到 hold 文件被删掉。"""
    wait = "True" if hold is None else f"pathlib.Path({str(hold)!r}).exists()"
    return (f"import os, pathlib, time\npathlib.Path({str(marker)!r}).write_text(str(os.getpid()))\n"
            f"while {wait}:\n    time.sleep(0.1)\nprint('held-page-done', sum(range(10)))")


SLOW_WRITER = """# 测试用：Sphinx 开始写出页面时写下标记，然后一直等（构建停在“写出”阶段）
import os, pathlib, time


def hold(app, builder):
    pathlib.Path(os.environ["BOOK_TEST_MARKER"]).write_text(str(os.getpid()))
    while True:
        time.sleep(0.1)


def setup(app):
    app.connect("write-started", hold)
    return {"parallel_read_safe": True}
"""

# 在 TeX 里写下标记文件，然后原地空转（\spin 展开成它自己）：XeLaTeX 会一直跑到被结束为止
SPINNING_TEX = r"""
```{raw} latex
\newwrite\bookmarker
\immediate\openout\bookmarker=xelatex-started.txt
\immediate\write\bookmarker{started}
\immediate\closeout\bookmarker
\def\spin{\spin}\spin
```
"""


def _wait_for(path: Path, proc: subprocess.Popen, seen: list[str], limit: float = 300) -> None:
    """等到 path 出现（事件），同时读走构建的输出；构建提前结束或 limit 秒内没出现都算失败。"""
    import selectors

    os.set_blocking(proc.stdout.fileno(), False)
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + limit
    try:
        while not path.exists():
            if proc.poll() is not None:
                seen.append(proc.stdout.read() or "")
                pytest.fail(f"构建在 {path.name} 出现之前就结束了（退出码 {proc.returncode}）:\n"
                            + "".join(seen)[-4000:])
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                pytest.fail(f"{limit:.0f} 秒内没有出现 {path}:\n" + "".join(seen)[-4000:])
            if selector.select(timeout=0.1):
                chunk = proc.stdout.read()
                if chunk:
                    seen.append(chunk)
    finally:
        selector.close()
        os.set_blocking(proc.stdout.fileno(), True)


def _interrupt(root: Path, marker: Path, signum: int, *args: str, whole_group: bool = True):
    """启动构建，等 marker 出现，发信号；返回 (退出码, 输出, 发信号到退出的秒数, 发信号前构建的进程树)。"""
    env = dict(os.environ, BOOK_TEST_MARKER=str(marker))
    proc = subprocess.Popen([sys.executable, str(BUILD_SCRIPT), "--root", str(root), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=env, preexec_fn=ctrl_c_reaches_it)
    seen: list[str] = []
    _wait_for(marker, proc, seen)
    tree = children.descendants(proc.pid)
    start = time.monotonic()
    if whole_group:
        os.killpg(proc.pid, signum)  # 和终端里按 Ctrl-C 一样：信号发给整个前台进程组
    else:
        os.kill(proc.pid, signum)  # kill PID：只发给构建脚本
    try:
        rest, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("构建收到信号后一分钟还没有退出:\n" + "".join(seen)[-4000:])
    return proc.returncode, "".join(seen) + rest, time.monotonic() - start, tree


def _assert_stopped_cleanly(code: int, output: str, seconds: float, tree: list[int], signum: int) -> None:
    assert code == 128 + signum, f"退出码 {code}，应为 {128 + signum}\n{output[-4000:]}"
    assert seconds < 15, f"收到信号后 {seconds:.1f} 秒才退出\n{output[-4000:]}"
    notices = [line for line in output.splitlines() if "构建被打断" in line]
    assert len(notices) == 1 and signal.Signals(signum).name in notices[0], output[-4000:]
    assert not tracebacks(output), output[-4000:]
    assert "[build_book] PDF：" not in output
    # 被打断的工作进程不能被当成页面失败、交给 Sphinx 重跑
    assert "预执行失败" not in output and "意外退出" not in output, output[-4000:]
    assert tree, "发信号前构建没有任何子进程：测试没有打在要测的阶段上"
    survivors = [pid for pid in tree if children._alive(pid)]
    assert not survivors, f"构建退出后还活着的进程：{survivors}\n{output[-4000:]}"


def _mini_for_phase(tmp_path: Path, phase: str) -> tuple[Path, Path, list[str]]:
    """按要打断的阶段搭一本小书；返回 (根目录, 标记文件, 构建参数)。"""
    marker = tmp_path / "marker.txt"
    if phase == "pre-execution":  # 两页要执行、两个工作进程：预执行阶段
        pages = {"index": ROOT_PAGE, "a": _code_page("甲", _holding_cell(marker)),
                 "b": _code_page("乙", "print('b-done', 2 + 2)")}
        return make_mini_book(tmp_path / "book", pages), marker, ["--workers", "2"]
    if phase == "sphinx-execute":  # 只有一页要执行：不预执行，由 Sphinx（myst-nb）在读页面时执行
        pages = {"index": ROOT_PAGE, "a": _code_page("甲", _holding_cell(marker))}
        return make_mini_book(tmp_path / "book", pages), marker, []
    if phase == "sphinx-write":  # Sphinx 写出页面时
        pages = {"index": ROOT_PAGE, "a": _code_page("甲", "print('a-done', 1)")}
        root = make_mini_book(tmp_path / "book", pages, {"sphinx.local_extensions.slow_writer": "."})
        (root / "slow_writer.py").write_text(SLOW_WRITER, encoding="utf-8")
        return root, marker, []
    if phase == "xelatex":  # XeLaTeX 排版时
        pages = {"index": ROOT_PAGE + SPINNING_TEX, "a": _code_page("甲", "print('a-done', 1)")}
        root = make_mini_book(tmp_path / "book", pages)
        return root, root / "_build" / "latex" / "xelatex-started.txt", ["--builder", "pdflatex"]
    raise ValueError(phase)


@pytest.mark.parametrize("phase, signum, whole_group", [
    pytest.param("pre-execution", signal.SIGINT, True, id="ctrl-c-pre-execution"),
    pytest.param("sphinx-execute", signal.SIGINT, True, id="ctrl-c-sphinx-execute"),
    pytest.param("sphinx-write", signal.SIGINT, True, id="ctrl-c-sphinx-write"),
    pytest.param("xelatex", signal.SIGINT, True, id="ctrl-c-xelatex", marks=pytest.mark.pdf),
    pytest.param("pre-execution", signal.SIGTERM, False, id="sigterm-pre-execution"),
    pytest.param("sphinx-execute", signal.SIGTERM, False, id="sigterm-sphinx-execute"),
])
def test_a_signal_in_any_phase_stops_the_build_quickly_and_leaves_no_process(tmp_path, phase, signum,
                                                                               whole_group):
    """SIGINT（Ctrl-C，发给整个进程组）或 SIGTERM（只发给构建脚本）落在预执行、Sphinx 执行页面、Sphinx 写出或
    XeLaTeX 的任何一处：构建几秒内以 128+信号 退出，说一句“构建被打断”，不留下任何工作进程、内核或 XeLaTeX。"""
    (tmp_path / "book").mkdir()
    root, marker, args = _mini_for_phase(tmp_path, phase)
    code, output, seconds, tree = _interrupt(root, marker, signum, *args, whole_group=whole_group)
    _assert_stopped_cleanly(code, output, seconds, tree, signum)
    text = marker.read_text().strip()
    if text.isdigit():  # 写标记的进程（内核或 Sphinx）也已结束
        assert not children._alive(int(text)), output[-4000:]
    if phase == "pre-execution":
        assert "并行预执行" in output and "jupyter-book build" not in output, output[-4000:]
    if phase != "xelatex":  # XeLaTeX 在 Sphinx 成功写完 .tex 之后才启动
        assert "build succeeded" not in output, output[-4000:]
    assert not list((root / "_build").glob(".last-*-ok"))


def test_interrupted_build_is_followed_by_a_build_equal_to_a_cold_one(tmp_path):
    """构建在预执行时被 Ctrl-C（SIGINT）打断；下一次构建成功，页面与冷构建的一字不差。"""
    marker, hold = tmp_path / "started.txt", tmp_path / "hold"
    pages = {"index": ROOT_PAGE,
             "slow": _code_page("慢的一页", _holding_cell(marker, hold)),
             "fast": _code_page("快的一页", "print('fast-page-done', 3 * 14)")}
    (tmp_path / "interrupted").mkdir()
    (tmp_path / "cold").mkdir()
    interrupted = make_mini_book(tmp_path / "interrupted", pages)
    cold = make_mini_book(tmp_path / "cold", pages)

    hold.touch()  # 慢的一页写下标记后一直等，直到 hold 被删掉
    code, output, seconds, tree = _interrupt(interrupted, marker, signal.SIGINT, "--workers", "2")
    _assert_stopped_cleanly(code, output, seconds, tree, signal.SIGINT)
    assert not (interrupted / "_build" / ".last-html-ok").exists()

    hold.unlink()
    after = run_build(interrupted, timeout=600)
    assert after.returncode == 0, after.output[-4000:]
    reference = run_build(cold, timeout=600)
    assert reference.returncode == 0, reference.output[-4000:]
    got, want = _article_texts(after.html, pages), _article_texts(reference.html, pages)
    assert got == want
    assert "held-page-done 45" in got["slow"] and "fast-page-done 42" in got["fast"]


APPENDIX_PAGE = """# 附录：样例

```{figure} book/_static/favicon.svg
:name: fig-appendix-sample
:alt: 样例图

附录里的一张图。
```

见 {numref}`fig-appendix-sample`。
"""


@pytest.fixture(scope="module")
def rebuilt_book(tmp_path_factory, shared_font_cache):
    """一本好的小书（一页代码、一页附录、一页好样例）构建三次：冷构建；什么都不改再构建；改了页面 a 的一句话再构建。
    记下每次的结果，以及 _build/html 在第一次之后、第二次之后各文件的修改时间。"""
    pages = {"index": ROOT_PAGE, "all_good": (FAILING_PAGES / "all_good.md").read_text(encoding="utf-8"),
             "a": _code_page("甲", "print('a-done', 6 * 7)"), "appx": APPENDIX_PAGE}
    root = make_mini_book(tmp_path_factory.mktemp("rebuilt"), pages, {"sphinx.config.book_appendices": {"appx": "A"}})
    first = run_build(root, timeout=600)
    after_first = _mtimes(root / "_build" / "html") if first.returncode == 0 else {}
    again = run_build(root, timeout=600)
    after_again = _mtimes(root / "_build" / "html") if again.returncode == 0 else {}
    page = root / "a.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n又加了一句。\n", encoding="utf-8")
    edited = run_build(root, timeout=600)
    return {"root": root, "first": first, "again": again, "edited": edited,
            "after_first": after_first, "after_again": after_again}


def test_fixture_harness_builds_a_good_page(rebuilt_book):
    """对照组：同样的搭法（make_mini_book + 真实的构建脚本），页面没问题时构建成功，且 HTML 里有执行结果。"""
    first = rebuilt_book["first"]
    assert first.returncode == 0, first.output[-4000:]
    assert "fixture-ok-42" in (first.html / "all_good.html").read_text(encoding="utf-8")


def test_a_no_op_mini_build_starts_no_sphinx_and_writes_nothing(rebuilt_book):
    """同一本小书构建两次、中间什么都不改：第二次不启动 Sphinx，_build/html 下每个文件的修改时间都不变；
    改一页的一个字之后再构建，又会真正重建。"""
    first, again, edited = rebuilt_book["first"], rebuilt_book["again"], rebuilt_book["edited"]
    assert first.returncode == 0, first.output[-4000:]
    assert again.returncode == 0 and "没有改动" in again.output and "jupyter-book build" not in again.output
    assert rebuilt_book["after_again"] == rebuilt_book["after_first"]
    assert edited.returncode == 0 and "jupyter-book build" in edited.output
    assert "又加了一句" in (rebuilt_book["root"] / "_build" / "html" / "a.html").read_text(encoding="utf-8")


def _mtimes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_editing_one_page_rewrites_that_page_and_leaves_the_appendix_alone(rebuilt_book):
    """附录的图编号（A.1）在每次写出前才改（book_appendix）：改了别的页面，附录页不会因为“编号变了”被重写，
    编号照样是 A.1。（以前每次构建都把附录和目录页标成过期、重写一遍。）"""
    first, second = rebuilt_book["first"], rebuilt_book["edited"]
    assert first.returncode == 0, first.output[-4000:]
    appendix_html = rebuilt_book["root"] / "_build" / "html" / "appx.html"
    assert second.returncode == 0, second.output[-4000:]
    written = re.findall(r"writing output\.\.\. (?:\x1b\[[0-9;]*m)*\[\s*\d+%\] (?:\x1b\[[0-9;]*m)*([\w/]+)",
                         second.output)
    assert "a" in written and "appx" not in written, written
    assert "now-outdated files... none found" in re.sub(r"\x1b\[[0-9;]*m", "", second.output)
    assert appendix_html.stat().st_mtime_ns == rebuilt_book["after_first"]["appx.html"]
    assert "图 A.1" in appendix_html.read_text(encoding="utf-8")


KERNEL_FACTS = """import os, sys, torch
print('默认类型', torch.get_default_dtype(), '上一页留下的名字', 'left_behind' in globals())
print('argv0', sys.argv[0])
print('path', [p for p in sys.path if 'pytest-of' not in p])
print('env', sorted(k for k in os.environ if not k.startswith(('JPY_SESSION', 'PYTEST'))))
print('MPLBACKEND', os.environ.get('MPLBACKEND'))
torch.manual_seed(42)
print(torch.randn(3))
import matplotlib
print('rcParams', sorted((k, repr(v)) for k, v in matplotlib.rcParams.items() if k != 'backend'))
import matplotlib.pyplot as plt
print('后端', matplotlib.get_backend())
plt.plot([3, 1, 2])
plt.title('drawn in the kernel')"""


def test_each_page_gets_a_fresh_kernel_that_matches_a_normally_started_one(tmp_path):
    """预执行的内核由预先 import 了 torch 的母体 fork 出来（tools/zygote.py）。它仍是每页一个全新的内核：
    前一页改的全局状态（默认浮点类型、留下的变量）后一页看不见；它看到的 argv、sys.path、环境变量名和算出的
    随机数，与照常启动的内核（BOOK_KERNEL_PRELOAD=0）一字不差。"""
    pages = {"index": ROOT_PAGE,
             "a": _code_page("甲", "import torch\ntorch.set_default_dtype(torch.float64)\nleft_behind = 1\n"
                                   "print('甲页', torch.get_default_dtype())"),
             "b": _code_page("乙", KERNEL_FACTS),
             "c": _code_page("丙", "import sys\nprint('torch 已经载入', 'torch' in sys.modules,"
                                   " 'matplotlib 已经载入', 'matplotlib' in sys.modules)")}
    outputs = {}
    for preload in ("1", "0"):
        (tmp_path / preload).mkdir()
        root = make_mini_book(tmp_path / preload, pages)
        proc = subprocess.run([sys.executable, str(BUILD_SCRIPT), "--root", str(root), "--workers", "2"],
                              capture_output=True, text=True, timeout=600,
                              env=dict(os.environ, BOOK_KERNEL_PRELOAD=preload))
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        assert "并行预执行 3 页" in proc.stdout
        # 丙页在 import 之前看 sys.modules：母体确实预先载入了 torch（否则这个测试什么也没测）
        preloaded = load_path(root / "_build" / "html" / "c.html").text
        assert f"torch 已经载入 {preload == '1'} matplotlib 已经载入 {preload == '1'}" in preloaded, preloaded
        b_page = load_path(root / "_build" / "html" / "b.html")
        # inline 后端的钩子在内核里：单元结束时图照常显示（母体若 import 了 inline 后端，钩子丢失，图就不见了）
        assert any("_images/" in src for src in b_page.imgs), f"乙页的图没有显示（BOOK_KERNEL_PRELOAD={preload}）"
        outputs[preload] = b_page.text
        outputs[preload] = outputs[preload].replace(str(tmp_path / preload), "<root>")
    assert "默认类型 torch.float32 上一页留下的名字 False" in outputs["1"], outputs["1"]
    assert outputs["1"] == outputs["0"]
