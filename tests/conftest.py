"""测试共用的工具：在临时目录里搭一本小书、调用真实的构建脚本、以及整本书的一次全新构建。"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO / "tools" / "build_book.py"
FAILING_PAGES = Path(__file__).resolve().parent / "fixtures" / "failing_pages"

# 一页 MyST 笔记本开头的 jupytext 头与 kernelspec（没有它的页面不会被执行）；测试里临时写的小页面共用
MYST_NOTEBOOK_HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""
sys.path.insert(0, str(REPO / "tools"))  # 构建脚本的辅助模块（nb_internals 等）供测试直接导入

_spec = importlib.util.spec_from_file_location("build_book", BUILD_SCRIPT)
build_book = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_book)


def toc_docnames() -> list[str]:
    """_toc.yml 里的全部页面（文档名，不带后缀），按目录顺序；与构建脚本读目录的方式相同。"""
    pages = build_book.toc_pages(REPO, REPO / "_toc.yml")
    return [page.relative_to(REPO).with_suffix("").as_posix() for page in pages]


@dataclass
class BuildResult:
    root: Path
    returncode: int | None  # None：BOOK_PREBUILT，这次测试没有运行构建
    output: str

    @property
    def html(self) -> Path:
        return self.root / "_build" / "html"


def run_build(root: Path, *extra: str, timeout: float = 1800) -> BuildResult:
    """用本书真正的构建脚本（tools/build_book.py）构建 root 下的书。"""
    proc = subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--root", str(root), *extra],
        capture_output=True, text=True, timeout=timeout,
    )
    return BuildResult(root, proc.returncode, proc.stdout + proc.stderr)


def make_mini_book(tmp: Path, pages: dict[str, str], config_changes: dict | None = None,
                   with_package: bool = False) -> Path:
    """在 tmp 下搭一本只含 pages 的小书，配置取自本书真实的 _config.yml。

    pages: {文档名: MyST 文本}，第一个是根页面。config_changes 按键路径覆盖配置，
    例如 {"execute.timeout": 3}。with_package=True 时把 src/minigpt 等也复制过去。
    """
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    for dotted, value in (config_changes or {}).items():
        node = config
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    (tmp / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    # 配置里引用的文件（参考文献等）照原样带过去
    for rel in ("book/references.bib", "book/search_dict.txt", "book/_ext",
                "book/_static", "locale"):
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        if (REPO / rel).is_dir():
            shutil.copytree(REPO / rel, tmp / rel, dirs_exist_ok=True)
        else:
            shutil.copy(REPO / rel, tmp / rel)
    if with_package:
        shutil.copytree(REPO / "src" / "minigpt", tmp / "src" / "minigpt",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for rel in ("requirements.txt", "requirements.lock", "pyproject.toml", "LICENSE"):
            shutil.copy(REPO / rel, tmp / rel)
    names = list(pages)
    toc = {"format": "jb-book", "root": names[0]}
    if names[1:]:
        toc["chapters"] = [{"file": n} for n in names[1:]]
    (tmp / "_toc.yml").write_text(yaml.safe_dump(toc), encoding="utf-8")
    for name, text in pages.items():
        (tmp / f"{name}.md").write_text(text, encoding="utf-8")
    return tmp


# 会启动 Jupyter 内核的夹具：整本书的构建、批改程序跑样例提交、作业包与读者笔记本的全新环境
KERNEL_FIXTURES = {"built_book", "graded", "fresh_kernel", "fresh_venv", "student_site"}


# ---- 两个工作进程（make test 用 pytest-xdist：-n 2 --dist loadscope，按下面的分组） ----
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


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadscope 时按 group_of 分组（xdist 的 loadscope 只认模块）。

    没有用 xdist 自带的 --dist loadgroup 加 xdist_group 标记：xdist 3.8 靠改写测试的 nodeid 传递分组，
    pytest 9.2 的 nodeid 改不动了，分组悄悄失效（pytest-xdist issue #1386）。loadscope 的调度器只通过
    _split_scope 决定分组，xdist 自己的 loadgroup、loadfile 也是这样改它的。"""
    if config.getvalue("dist") != "loadscope":
        return None
    # xdist 默认把组按测试个数从多到少重排（--loadscope-reorder），那会打乱上面 LONGEST_FIRST 排好的先后：
    # 一个只有 19 个测试、却要跑三分钟的组会被排到最后。按收集顺序（pytest_collection_modifyitems 排好的）派
    config.option.loadscopereorder = False
    from xdist.scheduler import LoadScopeScheduling

    class BookGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return BookGroups(config, log)


def pytest_collection_modifyitems(items):
    """用到上面这些夹具的测试会启动内核：自动带上 kernel 标记（整本书构建另带 book），make unit 不跑它们。
    最久的组排在最前（xdist 按收集顺序派组）。"""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & KERNEL_FIXTURES:
            item.add_marker(pytest.mark.kernel)
        if "built_book" in used:
            item.add_marker(pytest.mark.book)
    rank = {group: i for i, group in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(rank)))  # 稳定排序：组内与其余的顺序不变


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


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> BuildResult:
    """整本书从全新的 Sphinx 环境构建一次（--fresh），供所有检查渲染结果的测试共用。

    开发时可设环境变量 BOOK_PREBUILT=<--out 目录>，改用已有的、成功的构建（CI 不设它）。
    """
    prebuilt = os.environ.get("BOOK_PREBUILT")
    if prebuilt:
        out = Path(prebuilt).resolve()
        if not (out / "_build" / ".last-html-ok").exists():
            pytest.fail(f"BOOK_PREBUILT={out} 下没有一次成功的 HTML 构建")
        return BuildResult(out, None, "(prebuilt)")
    result = shared_build(tmp_path_factory, "built_book", "--fresh")
    if result.returncode != 0:
        pytest.fail(f"整本书构建失败（退出码 {result.returncode}）:\n{result.output[-8000:]}")
    # 英文版（tools/build_book.py --lang en）：从中文源文件生成、构建，网站在 _build/html/en/
    english = shared_build(tmp_path_factory, "built_book_en", "--lang", "en", "--fresh")
    if english.returncode != 0:
        pytest.fail(f"英文版构建失败（退出码 {english.returncode}）:\n{english.output[-8000:]}")
    return result


@pytest.fixture(scope="session")
def student_site(built_book, tmp_path_factory) -> BuildResult:
    """学生版网站（tools/build_book.py --student：不带参考答案），构建在整本书的 _build/student/ 下，
    执行缓存取自 built_book（页面不再执行）；英文的学生版网站（--lang en --student）在它的 en/ 下，
    执行缓存取自英文版的构建。整个测试运行只构建一次。"""
    out = built_book.root / "_build" / "student"

    def build():
        result = run_build(REPO, "--builder", "html", "--student", "--fresh", "--out", str(out),
                           "--cache-from", str(built_book.root / "_build"))
        if result.returncode != 0:
            return {"returncode": result.returncode, "output": result.output}
        english = run_build(REPO, "--builder", "html", "--lang", "en", "--student", "--fresh", "--out", str(out),
                            "--cache-from", str(built_book.root / "_build" / "en" / "_build"))
        return {"returncode": english.returncode, "output": result.output + english.output}

    done = once_per_run(tmp_path_factory, "student_site", build)
    if done["returncode"] != 0:
        pytest.fail(f"学生版网站构建失败（退出码 {done['returncode']}）:\n{done['output'][-8000:]}")
    return BuildResult(out, done["returncode"], done["output"])


@pytest.fixture(scope="module")
def shared_font_cache(tmp_path_factory):
    """这个模块构建的小书共用一个建好的 matplotlib 字体缓存（环境变量 MPLCONFIGDIR）。

    构建脚本在缓存还没有时先起一个进程建它（tools/build_book.py 的 warm_up，约 1 CPU 秒）；每本小书各有
    一个空的 _build/.mplconfig，几十本小书就是几十遍。建缓存这件事本身由
    test_build_is_a_test.py::test_the_font_cache_is_ready_before_the_first_page_runs 在空目录里检验。"""
    folder = run_temp(tmp_path_factory) / "mplconfig"

    def warm() -> str:
        subprocess.run([sys.executable, "-c", "import matplotlib.pyplot"], check=True, capture_output=True,
                       env={**os.environ, "MPLCONFIGDIR": str(folder)})
        return str(folder)

    patch = pytest.MonkeyPatch()
    patch.setenv("MPLCONFIGDIR", once_per_run(tmp_path_factory, "mplconfig", warm))
    yield folder
    patch.undo()


def shared_build(tmp_path_factory, name: str, *extra: str) -> BuildResult:
    """在仓库里运行一次构建脚本，这次测试运行的所有工作进程共用它（见 once_per_run）。"""
    def build():
        result = run_build(REPO, *extra)
        return {"returncode": result.returncode, "output": result.output}

    done = once_per_run(tmp_path_factory, name, build)
    return BuildResult(REPO, done["returncode"], done["output"])


@pytest.fixture(scope="session")
def fork_runner():
    """替测试“用全新的 Python 运行一个程序”、但不必每次都 import torch 的分叉运行器（tests/forkrun.py）。
    每个工作进程一个，环境即测试进程的环境。"""
    from forkrun import ForkRunner

    runner = ForkRunner(dict(os.environ))
    yield runner
    runner.close()


# ---- 仓库之外的全新虚拟环境（作业包、读者笔记本、sdist 的测试共用一个） ----

def torch_wheel_dir() -> Path:
    """本机 torch wheel 所在的目录：环境变量 TORCH_WHEEL_DIR，或 pip 配置里的 find-links（本机是 /opt/wheels）。"""
    import torch

    pattern = f"torch-{torch.__version__}-*.whl".replace("+", "*")
    candidates = [os.environ.get("TORCH_WHEEL_DIR", "")]
    listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    candidates += [v for line in listing.splitlines() if "find-links" in line
                   for v in line.split("=", 1)[1].strip("'\" ").split()]
    candidates += os.environ.get("PIP_FIND_LINKS", "").split()
    for folder in filter(None, candidates):
        path = Path(folder.removeprefix("file://"))
        if path.is_dir() and list(path.glob(pattern)):
            return path
    pytest.fail(f"找不到本机的 torch wheel（{pattern}）：把它所在的目录设为环境变量 TORCH_WHEEL_DIR")


# 仓库之外的全新环境里不该有的变量。PYTHONDONTWRITEBYTECODE：这台机器的环境里设了它，全新环境又是
# --no-compile 装的，于是每个内核都要把 torch 的几千个 .py 从头编译一遍（每次约 5 秒）；读者的 pip 默认会编译
DIRTY = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")


def ctrl_c_reaches_it() -> None:
    """subprocess.Popen 的 preexec_fn：子进程的 SIGINT 恢复默认处理，和在终端前台运行时一样。

    不在终端前台启动的 make test（例如 `make test &`，或 nohup 之下）继承的是“忽略 SIGINT”，
    Python 看到被忽略的 SIGINT 就不装 KeyboardInterrupt：发 SIGINT 模拟 Ctrl-C 的测试便会失败，
    失败与否取决于测试是怎样被启动的。给要被按 Ctrl-C 的子进程用它。"""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def clean_env() -> dict[str, str]:
    """不带本仓库痕迹的环境变量（没有 PYTHONPATH、VIRTUAL_ENV），第一次 import 时照常写 .pyc。"""
    return {k: v for k, v in os.environ.items() if k not in DIRTY}


@dataclass
class FreshVenv:
    python: Path
    kernel: str            # 指向这个环境的内核规格名
    jupyter_path: Path     # 让 Jupyter 找到它：JUPYTER_PATH

    def pip(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(self.python), "-m", "pip", *args], cwd=cwd, env=clean_env(),
                              capture_output=True, text=True, timeout=1200)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc


@pytest.fixture(scope="session")
def fresh_venv(tmp_path_factory) -> FreshVenv:
    """仓库之外的全新虚拟环境，只装 torch（本机 wheel，与 .venv 同版本）、numpy、matplotlib、ipykernel、
    setuptools（同 .venv 的版本：测试用 --no-build-isolation 从 sdist 安装）——没有本书的包。

    用它的测试各自装上要测的那一份本书的包（作业包里的 wheel、笔记本包里的 wheel、sdist），
    都用 --force-reinstall --no-deps，谁先谁后都一样。
    """
    from importlib.metadata import version

    root = tmp_path_factory.mktemp("fresh")
    assert REPO not in root.parents
    venv = root / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", str(venv)], check=True)
    fresh = FreshVenv(venv / "bin" / "python", "book-fresh-venv", root / "jupyter")
    pins = [f"{name}=={version(name)}" for name in ("torch", "numpy", "matplotlib", "ipykernel", "setuptools")]
    # --no-compile：不预先编译几千个用不到的 .pyc（省下两三分钟）；用到的模块在第一次 import 时照常编译、写入
    fresh.pip("install", "--quiet", "--no-compile", "--find-links", str(torch_wheel_dir()), *pins)
    spec = fresh.jupyter_path / "kernels" / fresh.kernel
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(fresh.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "fresh venv", "language": "python",
        "env": {"PYTHONDONTWRITEBYTECODE": ""}}))  # 空值即没有设：用到的模块第一次 import 时编译、写入（见 DIRTY）
    return fresh


# ---- 浏览器测试共用：本机网站与 Chromium（tests/test_browser.py、tests/test_interactive_browser.py） ----

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run", "--disable-quic", "--disable-sync",
]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - 覆盖基类的签名
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    """浏览器翻页或关掉页面时会掐断还没传完的请求：那是正常的，不在测试输出里打印一段 BrokenPipeError 的回溯。
    别的错误照常打印。"""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def site(built_book):
    """在 127.0.0.1 的空闲端口上提供 _build/html，返回根地址。"""
    handler = functools.partial(QuietHandler, directory=str(built_book.html))
    server = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


# 主题的脚本在页面加载完后才把 data-theme="auto" 换成 light/dark；按钮等元素带 CSS 过渡（Bootstrap 的 .btn：0.15 s），
# 颜色要过渡完才是最终的样子。机器忙时，axe 或截图可能正赶上过渡的半路（一个半明半暗的“搜索”按钮）。
# 所以等两件事发生：主题已定下来，所有 CSS 过渡都已结束。等的是事件，不是固定的时间。
SETTLE = """async () => {
  const root = document.documentElement;
  if (document.querySelector('script[src*="pydata-sphinx-theme"]')) {
    while (!["light", "dark"].includes(root.dataset.theme)) {
      await new Promise(r => requestAnimationFrame(r));
    }
  }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const running = document.getAnimations().filter(a => a instanceof CSSTransition);
  await Promise.all(running.map(a => a.finished.catch(() => null)));
}"""


def settle(page) -> None:
    """等页面的主题与 CSS 过渡都定下来（见上面 SETTLE 的说明）。"""
    page.evaluate(SETTLE)


@pytest.fixture(scope="module")
def browser():
    """Debian 的 Chromium（按 PATH 查找），经 Playwright 驱动；绝不运行 `playwright install`。"""
    if not CHROMIUM:
        pytest.fail("PATH 里没有 chromium：请先运行 tools/system_deps.sh install browser（Debian 包 chromium）")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


VIEWPORT = {"width": 1280, "height": 900}


class Tab:
    """一个一直开着的浏览器标签页，一次又一次地打开网站的页面（每个工作线程、每个测试模块一个）。

    每开一个新的浏览器上下文，Chromium 就起一个新的渲染进程，重新载入中文字体、重新编译页面的脚本：
    在本机，6 页各开一个新上下文共用 15–20 CPU 秒，在同一个标签页里依次打开只要 6–9 秒。所以各次访问共用
    一个标签页，但做到互不相干：
    - 每次访问（visit）挂上它自己的请求拦截和事件监听，离开（leave）时先回到空白页再摘掉：上一页的请求和
      消息都在回到空白页之前报完，算不到下一次访问头上；
    - 离开时清掉本站的 localStorage、sessionStorage 和 cookie，并且不让页面在卸载时再写进去（主题在卸载时记下
      侧栏的滚动位置，下一页会照着滚）；鼠标移回左上角（不停在下一页的某个元素上）；
    - 拦截请求会关掉浏览器的 HTTP 缓存（Playwright 的规定），所以每次访问照样请求页面用到的每个文件。
    颜色模式每次访问前重新设定（与新上下文的 color_scheme 选项是同一个设置）。离开时出了错（页面崩溃之类），
    就换一个新的上下文，不连累后面的测试。"""

    def __init__(self, browser, javascript: bool = True):
        self.browser, self.javascript = browser, javascript
        self._route = None
        self._listeners: list[tuple[str, object]] = []
        self._open_context()

    def _open_context(self) -> None:
        self.context = self.browser.new_context(viewport=VIEWPORT, locale="zh-CN", service_workers="block",
                                                java_script_enabled=self.javascript)
        self.context.route("**/*", lambda route: self._route(route) if self._route else route.continue_())
        self.page = self.context.new_page()

    def visit(self, url: str, color_scheme: str, route, listeners: dict, wait_until: str = "load"):
        """挂上这次访问的请求拦截 route(route) 与事件监听 {事件: 函数}，按 color_scheme 打开 url，返回页面。"""
        if self._route or self._listeners:  # 上一次访问没有离开（测试半路出错）：先替它离开
            self.leave()
        self.page.emulate_media(color_scheme=color_scheme)
        self._route = route
        for event, handler in listeners.items():
            self.page.on(event, handler)
            self._listeners.append((event, handler))
        self.page.goto(url, wait_until=wait_until)
        return self.page

    def leave(self) -> None:
        try:
            if self.javascript and self.page.url.startswith("http"):
                # 页面离开时（beforeunload、pagehide）还会往存储里写：主题就在这时记下侧栏滚到了哪里，下一页照着滚过去。
                # 所以清空之后让这一页再也写不进去（新页面有新的 Storage 原型，不受影响）
                self.page.evaluate("() => { localStorage.clear(); sessionStorage.clear();"
                                   " Storage.prototype.setItem = () => {}; }")
            self.page.mouse.move(0, 0)
            self.page.goto("about:blank")
            for event, handler in self._listeners:
                self.page.remove_listener(event, handler)
            self.context.clear_cookies()
        except Exception:  # noqa: BLE001  页面坏了：整个换掉
            self.context.close()
            self._open_context()
        finally:
            self._listeners.clear()
            self._route = None

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def tab(browser) -> Tab:
    """这个测试模块共用的标签页（见 Tab）。"""
    tab = Tab(browser)
    yield tab
    tab.close()


# 截图是给人看的，不是检查：整页截图每张要一个多 CPU 秒（Chromium 把整页从头画到尾、再编码成 PNG），
# 全书浅色、深色各一张就是 30 多 CPU 秒。所以 make test 不截；要看时运行 make screenshots
# （即设环境变量 BOOK_SCREENSHOTS=1 跑浏览器测试），截图存到 <构建目录>/_build/screenshots/。
SCREENSHOTS_ENV = "BOOK_SCREENSHOTS"


@dataclass
class Screenshots:
    folder: Path
    enabled: bool

    def page(self, tab_page, name: str, full_page: bool = True, always: bool = False) -> None:
        """把页面存成 name（默认整页）；不要截图时什么都不做，除非 always（测试失败时留给人看的那一张）。"""
        if self.enabled or always:
            self.folder.mkdir(parents=True, exist_ok=True)
            tab_page.screenshot(path=str(self.folder / name), full_page=full_page)

    def element(self, locator, name: str) -> None:
        """只截页面上的一个元素（交互图）；不要截图时什么都不做。"""
        if self.enabled:
            self.folder.mkdir(parents=True, exist_ok=True)
            locator.screenshot(path=str(self.folder / name))


def screenshots_wanted(environ=os.environ) -> bool:
    """BOOK_SCREENSHOTS 设为非空、也不是 0 时截图（与 BOOK_KERNEL_PRELOAD=0 一样，0 表示关）。"""
    return environ.get(SCREENSHOTS_ENV, "") not in ("", "0")


@pytest.fixture(scope="module")
def screenshots(built_book) -> Screenshots:
    """供人查看的截图：要截图时（screenshots_wanted）存到 <构建目录>/_build/screenshots/，否则不截。"""
    return Screenshots(built_book.root / "_build" / "screenshots", screenshots_wanted())
