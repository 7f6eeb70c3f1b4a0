"""本书网站的交互图扩展（在 _config.yml 的 sphinx.local_extensions 里登记）。

页面上的交互图（`minigpt.interactive`）只带图表说明和数据；画图的 Vega / Vega-Lite / vega-embed
库由这个扩展在构建时准备好：

1. **库来自已安装的 Python 包，不进仓库。** ``vl_convert.javascript_bundle`` 把钉死版本的
   vl-convert-python 里自带的 Vega 库，连同本书的页面脚本 ``book_interactive.js``，打包成一个
   ES 模块（约 0.9 MB，gzip 后约 0.3 MB）。打包要一两秒，结果按“包版本 + 脚本内容”缓存在
   ``_build/.interactive_cache/``。缓存里没有时，读到第一张有交互图的页面就在一个子进程里开始打包
   （vl_convert 打包时不放开 GIL，线程帮不上忙）：Sphinx 读写页面只用一个 CPU，打包在另一个 CPU 上
   与它同时进行，写第一张有交互图的页面时再等它打完。
2. **放在本站的 ``_static/interactive/``，不在源目录的 ``_static`` 里。** Jupyter Book 会把源目录
   ``_static`` 里的每个 .js 挂到每一页上；这里在写出第一张有交互图的页面之前直接复制到输出目录
   （在页面渲染之前复制，Sphinx 才会给链接加上 ``?v=`` 校验和；没有交互图的书不生成也不复制）。
3. **只给有交互图的页面，而且等读者翻到图时才加载**（book_lazy.py：页面上只挂一个很小的加载器，每张图的
   ``data-lazy-scripts`` 指向库）。库打包成 ES 模块，这里再把它整个包进一个函数：库里顶层的 ``function _``
   于是不会与 Sphinx 7.4 ``doctools.js`` 里的 ``const _`` 冲突，它可以作为普通脚本加载（从 file:// 打开时
   Chromium 不加载模块脚本）。按页加脚本只能在 ``html-page-context`` 里做，_config.yml 做不到，所以需要这个扩展。

4. **静态图放进 ``_images/``，网页只引用它。** ``minigpt.interactive`` 写出的 HTML 把静态图作为
   data URI 内嵌（下载的 .ipynb 里因此自带这张图）；HTML 构建时这里把它解出来存成
   ``_images/interactive-<摘要>.svg``，页面里改为引用这个文件，每页只多几百字节；图片设为懒加载，
   交互图画好后它被隐藏，浏览器就不去下载它。没有 JavaScript 的读者看到的正是这张图。

PDF 构建不受影响：myst-nb 在 LaTeX 里选 ``application/pdf``，也就是原来的静态图。
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.osutil import relative_uri

from book_lazy import add_loader, versioned

HERE = Path(__file__).parent
SCRIPT = HERE / "book_interactive.js"
STYLE = HERE / "book_interactive.css"
VEGA_LITE_VERSION = "6.4"          # 与 minigpt.interactive.SCHEMA 的大版本一致
JS_PATH = "interactive/book-interactive.js"    # 相对于输出目录的 _static/
CSS_PATH = "interactive/book-interactive.css"
MARKER = 'class="interactive-figure"'           # minigpt.interactive 写出的容器


# 打包的子进程：python -c BUNDLE_CODE 页面脚本 Vega-Lite版本 输出文件。打好的 ES 模块整个包进一个函数
# （严格模式，与模块一样），作为普通脚本加载（见本模块说明第 3 条）
WRAP = ('(function () {"use strict";\n', "\n})();\n")
BUNDLE_CODE = ("import sys, vl_convert; from pathlib import Path; "
               f"Path(sys.argv[3]).write_text({WRAP[0]!r} + vl_convert.javascript_bundle("
               f"Path(sys.argv[1]).read_text(encoding='utf-8'), vl_version=sys.argv[2]) + {WRAP[1]!r}, "
               "encoding='utf-8')")


def vega_bundle_path(cache_dir: Path) -> Path:
    """缓存里打包结果的文件名：按 vl-convert 与 Vega 各库的版本和页面脚本的内容求摘要。"""
    import vl_convert

    key = hashlib.sha256("\n".join((
        vl_convert.__version__, vl_convert.get_vega_version(),
        vl_convert.get_vega_embed_version(), VEGA_LITE_VERSION, SCRIPT.read_text(encoding="utf-8"), *WRAP,
    )).encode("utf-8")).hexdigest()[:16]
    return cache_dir / f"book-interactive-{key}.js"


def start_bundle(path: Path) -> subprocess.Popen:
    """在子进程里把库和页面脚本打包到 path 旁边的 .tmp 文件（finish_bundle 等它、换上）。"""
    path.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, "-c", BUNDLE_CODE, str(SCRIPT), VEGA_LITE_VERSION,
                             str(path.with_suffix(".tmp"))], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def finish_bundle(job: subprocess.Popen, path: Path) -> Path:
    """等打包的子进程结束；成功就把 .tmp 换成 path（打断的构建不会留下半个文件当缓存）。"""
    _, err = job.communicate()
    if job.returncode != 0:
        raise RuntimeError(f"打包 Vega 库失败（退出码 {job.returncode}）：{err.decode(errors='replace')[-2000:]}")
    path.with_suffix(".tmp").replace(path)
    return path


def vega_bundle(cache_dir: Path, job: subprocess.Popen | None = None) -> Path:
    """Vega 库 + 本书页面脚本打成的 ES 模块（见本模块说明）。job 是已在后台打包的子进程（start_bundle）。"""
    path = vega_bundle_path(cache_dir)
    if path.is_file():
        return path
    return finish_bundle(job or start_bundle(path), path)


def start_bundle_early(app: Sphinx, doctree) -> None:
    """doctree-read：读到第一张有交互图的页面、缓存里又没有打包结果时，在后台开始打包。"""
    if app.builder.format != "html" or getattr(app, "_book_interactive_job", None) is not None:
        return
    if not any(MARKER in node.astext() for node in doctree.findall(nodes.raw)):
        return
    path = vega_bundle_path(Path(app.outdir).parent / ".interactive_cache")
    if not path.is_file():
        app._book_interactive_job = start_bundle(path)


def copy_assets(app: Sphinx) -> None:
    """把库和样式复制到输出目录；每次构建只做一次，而且只在第一张有交互图的页面写出之前做
    （Sphinx 在随后渲染页面时才给链接算 ``?v=`` 校验和，此时文件已经在了）。"""
    if getattr(app, "_book_interactive_copied", False):
        return
    static = Path(app.outdir) / "_static"
    (static / JS_PATH).parent.mkdir(parents=True, exist_ok=True)
    job, app._book_interactive_job = getattr(app, "_book_interactive_job", None), None
    shutil.copyfile(vega_bundle(Path(app.outdir).parent / ".interactive_cache", job), static / JS_PATH)
    shutil.copyfile(STYLE, static / CSS_PATH)
    app._book_interactive_copied = True


STATIC_IMG = re.compile(r'(<img class="interactive-figure-static"[^>]*?) '
                        r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"')


def static_images_to_files(app: Sphinx, doctree, docname: str) -> None:
    """把交互图里内嵌的静态图存进 _images/，页面改为引用文件（见本模块说明第 4 条）。"""
    if app.builder.format != "html":
        return
    images = Path(app.outdir) / "_images"
    page_uri = app.builder.get_target_uri(docname)

    def to_file(match: re.Match) -> str:
        data = base64.b64decode(match.group(2))
        name = f"interactive-{hashlib.sha256(data).hexdigest()[:20]}.svg"
        images.mkdir(parents=True, exist_ok=True)
        if not (images / name).is_file():
            (images / name).write_bytes(data)
        uri = relative_uri(page_uri, f"_images/{name}")
        return f'{match.group(1)} loading="lazy" src="{uri}"'

    for node in list(doctree.findall(nodes.raw)):
        text = node.astext()
        if "html" in node.get("format", "").split() and "interactive-figure-static" in text:
            node.replace_self(nodes.raw("", STATIC_IMG.sub(to_file, text), format="html"))


def refresh_assets(app: Sphinx, exception) -> None:
    """增量构建没有重写任何有交互图的页面时，也把输出目录里已有的库换成当前版本。
    后台打包一直没被用上（读到了交互图，却没写出那一页：构建失败了）时结束它，不留半个文件。"""
    job = getattr(app, "_book_interactive_job", None)
    if job is not None:
        job.kill()
        job.wait()
        app._book_interactive_job = None
        vega_bundle_path(Path(app.outdir).parent / ".interactive_cache").with_suffix(".tmp").unlink(missing_ok=True)
    if (exception is None and app.builder.format == "html"
            and (Path(app.outdir) / "_static" / JS_PATH).is_file()):
        copy_assets(app)


def add_assets_to_page(app: Sphinx, pagename: str, templatename: str, context: dict,
                       doctree) -> None:
    """有交互图的页面：每张图等读者翻到时才加载库（book_lazy.py）；样式照常挂在页首（它也管静态图）。
    在 html-page-context 里加的文件只属于这一页（Sphinx 每页结束时复原列表）。"""
    if MARKER in context.get("body", ""):
        copy_assets(app)
        bundle = (Path(app.outdir) / "_static" / JS_PATH).read_bytes()
        lazy = f' data-lazy-scripts="{versioned(app.builder.get_target_uri(pagename), JS_PATH, bundle)}"'
        context["body"] = context["body"].replace(MARKER, MARKER + lazy)
        add_loader(app)
        app.add_css_file(CSS_PATH)


def setup(app: Sphinx) -> dict:
    app.connect("doctree-read", start_bundle_early)
    app.connect("doctree-resolved", static_images_to_files)
    app.connect("html-page-context", add_assets_to_page)
    app.connect("build-finished", refresh_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
