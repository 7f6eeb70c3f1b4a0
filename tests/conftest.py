"""把测试的夹具接起来：整本书与 PDF 的构建（整个测试运行只做一次）、学生版网站、分叉运行器、全新虚拟环境、
本机网站与 Chromium，以及 make test 两个工作进程的分组（pytest-xdist 的钩子）。

做事的代码在 tests/support/ 里（小书与构建、分组与共用、全新环境、浏览器、截图、pagekit……）；
测试模块从那里 import，这里只定义夹具和钩子。"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import scheduler
from support.book import REPO, BuildResult, run_build
from support.chromium import CHROMIUM, CHROMIUM_ARGS, Tab, serving
from support.scheduler import once_per_run, run_temp, shared_build
from support.screenshots import Screenshots, screenshots_wanted
from support.venv import FreshVenv, create_fresh_venv

# 会启动 Jupyter 内核的夹具：整本书的构建（用到 built_book_en、built_site、PDF 的测试也经由它）、
# 批改程序跑样例提交、作业包与读者笔记本的全新环境
KERNEL_FIXTURES = {"built_book", "graded", "fresh_kernel", "fresh_venv", "student_site"}


# ---- 两个工作进程（make test 用 pytest-xdist：-n 2 --dist loadscope；分组见 support/scheduler.py） ----

@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadscope 时按 support.scheduler.group_of 分组（见 scheduler.make_scheduler）。"""
    return scheduler.make_scheduler(config, log)


def pytest_runtest_logstart(nodeid, location):
    """BOOK_TEST_TIMELINE=<文件>：每个测试开始、结束的时刻记进这个文件（见 scheduler.record），
    用来看 make test 的时间花在哪里、哪个工作进程在等。"""
    scheduler.record("start", nodeid)


def pytest_runtest_logfinish(nodeid, location):
    scheduler.record("finish", nodeid)


def pytest_collection_modifyitems(items):
    """用到上面这些夹具的测试会启动内核：自动带上 kernel 标记（整本书构建另带 book），make unit 不跑它们。
    最久的组排在最前（xdist 按收集顺序派组）。"""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & KERNEL_FIXTURES:
            item.add_marker(pytest.mark.kernel)
        if "built_book" in used:
            item.add_marker(pytest.mark.book)
    scheduler.order_longest_first(items)


# ---- 整本书（每种语言一个夹具）、PDF、学生版网站：整个测试运行各只构建一次 ----

@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> BuildResult:
    """中文版：整本书从全新的 Sphinx 环境构建一次（--fresh），供所有检查中文页面的测试共用。
    它不等英文版：要英文版的测试用 built_book_en，要整个网站（两种语言）的用 built_site。

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
    return result


@pytest.fixture(scope="session")
def built_book_en(built_book, tmp_path_factory) -> BuildResult:
    """英文版（tools/build_book.py --lang en --fresh）：从中文源文件生成、构建一次；英文的书在 _build/en/，
    网站在中文网站的 en/ 下（_build/html/en/），所以返回的 root 与 built_book 相同。
    排在中文版之后：英文网站引用中文网站根目录里逐字节相同的共用文件，训练好的模型也读中文版的。"""
    if built_book.returncode is None:  # BOOK_PREBUILT：两种语言都已构建好
        return built_book
    english = shared_build(tmp_path_factory, "built_book_en", "--lang", "en", "--fresh")
    if english.returncode != 0:
        pytest.fail(f"英文版构建失败（退出码 {english.returncode}）:\n{english.output[-8000:]}")
    return BuildResult(built_book.root, english.returncode, english.output)


@pytest.fixture(scope="session")
def built_site(built_book, built_book_en) -> BuildResult:
    """整个网站：中文版在 _build/html/，英文版在它的 en/ 下。遍历网站每一页（两种语言）的测试用它。"""
    return built_book


def _pdf_tools_or_fail() -> None:
    deps = subprocess.run(["bash", str(REPO / "tools" / "system_deps.sh"), "check", "pdf"],
                          capture_output=True, text=True)
    if deps.returncode != 0:
        pytest.fail("构建 PDF 缺少系统软件包（.ci/run 会自动安装）：\n" + deps.stderr)


@pytest.fixture(scope="session")
def built_pdf(built_book, tmp_path_factory) -> BuildResult:
    """中文版的 PDF（tools/build_book.py --builder pdflatex），整个测试运行只构建一次，输出到仓库的 _build/latex/，
    并复制到网站上。紧接在中文版的 HTML 之后，共用 _build/.doctrees 和执行缓存，页面不再执行第二遍；HTML 构建
    刚从全新环境读过并检查过所有页面，所以不必再 --fresh。LaTeX 写出器每次都重写整本书，写出阶段的警告
    （交叉引用等）照样会让构建失败。BOOK_PREBUILT 时用那里已有的 PDF。"""
    _pdf_tools_or_fail()
    if built_book.returncode is None:
        if not (built_book.root / "_build" / ".last-pdflatex-ok").exists():
            pytest.fail(f"BOOK_PREBUILT={built_book.root} 下没有一次成功的 PDF 构建")
        return built_book
    result = shared_build(tmp_path_factory, "built_pdf", "--builder", "pdflatex")
    if result.returncode != 0:
        pytest.fail(f"PDF 构建失败（退出码 {result.returncode}）:\n{result.output[-8000:]}")
    return result


@pytest.fixture(scope="session")
def built_pdf_en(built_book_en, tmp_path_factory) -> BuildResult:
    """英文版的 PDF（--builder pdflatex --lang en），输出到 _build/en/_build/latex/，并复制到英文网站上；
    整个测试运行只构建一次。返回的 root 与 built_pdf 相同。"""
    _pdf_tools_or_fail()
    if built_book_en.returncode is None:
        return built_book_en
    english = shared_build(tmp_path_factory, "built_pdf_en", "--builder", "pdflatex", "--lang", "en")
    if english.returncode != 0:
        pytest.fail(f"英文版 PDF 构建失败（退出码 {english.returncode}）:\n{english.output[-8000:]}")
    return BuildResult(built_book_en.root, english.returncode, english.output)


@pytest.fixture(scope="session")
def student_site(built_book, built_book_en, tmp_path_factory) -> BuildResult:
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


@pytest.fixture(scope="session")
def fork_runner():
    """替测试“用全新的 Python 运行一个程序”、但不必每次都 import torch 的分叉运行器（tests/support/forkrun.py）。
    每个工作进程一个，环境即测试进程的环境。"""
    from support.forkrun import ForkRunner

    runner = ForkRunner(dict(os.environ))
    yield runner
    runner.close()


# ---- 仓库之外的全新虚拟环境（作业包、读者笔记本、sdist 的测试共用一个） ----

@pytest.fixture(scope="session")
def fresh_venv(tmp_path_factory) -> FreshVenv:
    """仓库之外的全新虚拟环境，只装 torch（本机 wheel，与 .venv 同版本）、numpy、matplotlib、ipykernel、
    setuptools——没有本书的包（support.venv.create_fresh_venv）。

    用它的测试各自装上要测的那一份本书的包（作业包里的 wheel、笔记本包里的 wheel、sdist），
    都用 --force-reinstall --no-deps，谁先谁后都一样。
    """
    return create_fresh_venv(tmp_path_factory.mktemp("fresh"))


# ---- 浏览器测试共用：本机网站与 Chromium（support/chromium.py） ----

@pytest.fixture(scope="module")
def site(built_book):
    """在 127.0.0.1 的空闲端口上提供 _build/html，返回根地址。"""
    with serving(built_book.html) as url:
        yield url


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


@pytest.fixture(scope="module")
def tab(browser) -> Tab:
    """这个测试模块共用的标签页（见 Tab）。"""
    tab = Tab(browser)
    yield tab
    tab.close()


@pytest.fixture(scope="module")
def screenshots(built_book) -> Screenshots:
    """供人查看的截图：要截图时（screenshots_wanted）存到 <构建目录>/_build/screenshots/，否则不截。"""
    return Screenshots(built_book.root / "_build" / "screenshots", screenshots_wanted())
