"""冷构建里只做一次、而且不占 Sphinx 那一个 CPU 的活（book/_ext 的三个扩展）：

- 本书的 wheel 每次构建只打一次，作业包和读者笔记本包用同一个；缓存里没有时在后台线程里打（homework_bundle）；
- Vega 库的打包在读到第一张交互图时就在子进程里开始，写页面时拿来用，结果与当场打包的一样（book_interactive）；
- 中文检索的 latin_terms 换成集合之后，分词与词干的结果与 Sphinx 原来的类完全相同（book_search）。
"""

from __future__ import annotations

import shutil
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from support.book import REPO

sys.path.insert(0, str(REPO / "book" / "_ext"))
import book_interactive  # noqa: E402
import book_search  # noqa: E402
import homework_bundle  # noqa: E402


def fake_app(root: Path, fmt: str = "html") -> SimpleNamespace:
    return SimpleNamespace(confdir=str(root), outdir=str(root / "_build" / "html"),
                           builder=SimpleNamespace(format=fmt))


@pytest.fixture
def book_with_package(tmp_path) -> Path:
    shutil.copytree(REPO / "src" / "minigpt", tmp_path / "src" / "minigpt",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in homework_bundle.PACKAGING_FILES:
        shutil.copy(REPO / name, tmp_path / name)
    return tmp_path


@pytest.fixture
def counted_wheels(monkeypatch):
    """把真正的 pip wheel 换成一个计数的假打包（这里测的是“打几次、谁在等谁”，不是打包本身）。"""
    calls = []
    release = threading.Event()

    def fake_build(root: Path, out_dir: Path, python: str = sys.executable) -> Path:
        release.wait(timeout=60)
        calls.append(threading.current_thread().name)
        wheel = out_dir / "minigpt_book-0-py3-none-any.whl"
        wheel.write_bytes(b"wheel %d" % len(calls))
        return wheel

    monkeypatch.setattr(homework_bundle, "build_wheel", fake_build)
    return calls, release


def test_the_wheel_is_built_once_in_the_background_and_shared(book_with_package, counted_wheels):
    calls, release = counted_wheels
    app = fake_app(book_with_package)
    homework_bundle.start_wheel(app)
    assert app._book_wheel_job.is_alive()          # 在后台打包，Sphinx 接着读页面
    release.set()
    first = homework_bundle.site_wheel(app)        # 作业包要它：等后台打完
    second = homework_bundle.site_wheel(app)       # 读者笔记本包要它：直接用
    assert first == second and first.read_bytes() == b"wheel 1"
    assert calls == ["minigpt-wheel"], calls       # 只打了一次，而且是在后台线程里

    homework_bundle.start_wheel(fake_app(book_with_package))  # 下一次构建：缓存还在，不再打包
    assert homework_bundle.site_wheel(fake_app(book_with_package)) == first and len(calls) == 1


def test_a_changed_package_gets_a_new_wheel_and_the_old_cache_goes(book_with_package, counted_wheels):
    calls, release = counted_wheels
    release.set()
    old = homework_bundle.site_wheel(fake_app(book_with_package))
    with open(book_with_package / "src" / "minigpt" / "__init__.py", "a", encoding="utf-8") as f:
        f.write("\n# 改动\n")
    new = homework_bundle.site_wheel(fake_app(book_with_package))
    assert new.parent != old.parent and not old.parent.exists() and len(calls) == 2
    assert [p.name for p in new.parent.parent.iterdir()] == [new.parent.name]  # 没有留下 .part


def test_a_failed_build_still_waits_for_the_background_wheel(book_with_package, counted_wheels):
    """Sphinx 因为异常结束时（build-finished 带着 exception，不写作业包），也要等后台打包的线程结束：
    不然它的 pip wheel 子进程比构建多活一两秒，还在往 _build 里写。"""
    calls, release = counted_wheels
    app = fake_app(book_with_package)
    homework_bundle.start_wheel(app)
    job, joined = app._book_wheel_job, []
    real_join = job.join
    job.join = lambda *args: (joined.append(True), real_join(*args))
    release.set()
    homework_bundle.write_bundle(app, RuntimeError("读到一半出错"))
    assert joined and not job.is_alive() and calls == ["minigpt-wheel"]


def test_no_background_wheel_for_the_pdf_or_a_book_without_the_package(tmp_path, book_with_package):
    pdf = fake_app(book_with_package, fmt="latex")
    homework_bundle.start_wheel(pdf)
    assert getattr(pdf, "_book_wheel_job", None) is None
    bare = fake_app(tmp_path / "bare")
    homework_bundle.start_wheel(bare)
    assert getattr(bare, "_book_wheel_job", None) is None and homework_bundle.site_wheel(bare) is None


def doctree_with(html: str) -> nodes.document:
    doc = new_document("<test>", get_default_settings(Parser))
    doc += nodes.raw("", html, format="html")
    return doc


def test_vega_bundle_starts_when_a_page_with_an_interactive_figure_is_read(tmp_path):
    app = fake_app(tmp_path)
    book_interactive.start_bundle_early(app, doctree_with("<p>没有交互图</p>"))
    assert getattr(app, "_book_interactive_job", None) is None
    book_interactive.start_bundle_early(app, doctree_with(f'<div {book_interactive.MARKER}></div>'))
    job = app._book_interactive_job
    assert job is not None and job.poll() is None  # 子进程在后台打包

    book_interactive.copy_assets(app)  # 写第一张有交互图的页面之前：等它打完，复制进输出目录
    copied = (Path(app.outdir) / "_static" / book_interactive.JS_PATH).read_bytes()
    assert app._book_interactive_job is None and job.returncode == 0
    here = book_interactive.vega_bundle(tmp_path / "synchronous")  # 当场打包的结果
    assert copied == here.read_bytes() and len(copied) > 100_000
    cache = tmp_path / "_build" / ".interactive_cache"
    assert [p.suffix for p in cache.iterdir()] == [".js"]  # 没有留下 .tmp


def test_an_unused_background_bundle_is_stopped_when_the_build_fails(tmp_path):
    app = fake_app(tmp_path)
    book_interactive.start_bundle_early(app, doctree_with(f'<div {book_interactive.MARKER}></div>'))
    job = app._book_interactive_job
    book_interactive.refresh_assets(app, RuntimeError("构建失败"))
    assert job.returncode is not None and app._book_interactive_job is None
    assert not list((tmp_path / "_build" / ".interactive_cache").glob("*.tmp"))


def test_fast_chinese_splits_and_stems_exactly_like_sphinx(tmp_path):
    from sphinx.search.zh import SearchChinese

    options = {"dict": str(REPO / "book" / "search_dict.txt")}
    SearchChinese.latin_terms = []  # Sphinx 的类属性列表：从空的开始，和一次新构建一样
    ours, sphinx = book_search.FastChinese(options), SearchChinese(options)
    assert ours.lang == sphinx.lang == "zh"
    pages = sorted((REPO / "book").glob("*.md"))
    assert len(pages) >= 10
    for page in pages:
        text = page.read_text(encoding="utf-8")[:6000]  # 每页开头一段：Sphinx 原来的类越往后越慢（见第 10 条）
        words_ours, words_sphinx = ours.split(text), sphinx.split(text)
        assert words_ours == words_sphinx, page.name
        assert [ours.stem(w) for w in words_ours] == [sphinx.stem(w) for w in words_sphinx], page.name
    SearchChinese.latin_terms = []


def test_the_kernel_zygote_preloads_torch_and_matplotlib_only_for_pages_that_use_them():
    """预执行的内核母体（tools/zygote.py）只在要执行的页面用到 torch（或 minigpt）时预先 import torch，
    只在用到 matplotlib（或 minigpt）时预先 import matplotlib 的核心模块。"""
    sys.path.insert(0, str(REPO / "tools"))
    import zygote

    assert zygote.preload_for(["print('你好')", "x = 1"]) == []
    assert zygote.preload_for(["print(1)", "import torch\nprint(torch.ones(2))"]) == ["torch"]
    assert zygote.preload_for(["import matplotlib.pyplot as plt"]) == ["matplotlib"]
    assert zygote.preload_for(["from minigpt.attention import scaled_dot_product_attention"]) == ["torch", "matplotlib"]
    assert zygote.preload_for(["torchvision_like = 1", "my_matplotlib_style = 2"]) == []  # 只认整个词
    pages = [p for p in (REPO / "book").glob("*.md") if "```{code-cell}" in p.read_text(encoding="utf-8")]
    assert zygote.preload_for([p.read_text(encoding="utf-8") for p in pages]) == ["torch", "matplotlib"]  # 本书用到
    # 母体不 import pyplot 和 inline 后端：它们 import 时向当时的 IPython 注册画图钩子，必须在内核里 import
    assert not any(name in ("matplotlib.pyplot", "matplotlib_inline.backend_inline") for name in zygote.MATPLOTLIB)


def test_every_kernel_of_the_build_runs_torch_on_one_thread(tmp_path):
    """构建的环境（build_env）让每个内核只用一个线程：预执行时几个内核同时跑，各占一个 CPU；
    不论哪条路径执行、机器有几个 CPU，页面算出的数都一样。"""
    import subprocess

    sys.path.insert(0, str(REPO / "tools"))
    from build_book import build_env

    env = build_env(tmp_path)
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1"]
