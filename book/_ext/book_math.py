"""公式在构建时排好（在 _config.yml 的 sphinx.local_extensions 里登记）。

网站上的公式由 sphinxcontrib-katex 在构建时交给 Node 里的 KaTeX 排版（``katex_prerender: true``，见
_config.yml）：页面里直接是排好的 HTML/CSS，外加给屏幕阅读器的 MathML，读者的浏览器不运行任何公式脚本。
PDF 不经过这里：LaTeX 构建照旧把公式原样交给 XeLaTeX。配置写不出的几件事：

1. **KaTeX 来自 npm 的锁。** KaTeX 由 ``package.json`` / ``package-lock.json`` 钉死版本，``make setup`` 用
   ``npm ci`` 装进仓库的 ``node_modules/``。这里在配置目录及其上级目录、再在环境变量 ``NODE_PATH``
   （tools/build_book.py 把本仓库的 ``node_modules`` 放在里面：在别处构建的书，例如英文版和测试里的小书，
   也找得到）里找 ``katex/``，把它的 ``katex.min.js`` 交给 sphinxcontrib-katex 的排版进程（那个扩展只认绝对路径
   或相对于它自己安装目录的路径，配置里写不出）。找不到时构建失败，并说明该运行什么。
2. **样式和字体在本站。** sphinxcontrib-katex 默认从 CDN 加载 KaTeX 的 CSS。这里在 HTML 构建开始时把同一份
   KaTeX 的 ``katex.min.css`` 和它的 woff2 字体复制到输出目录的 ``_static/katex/``（CSS 里只留 woff2：
   所有在用的浏览器都认它，其余两种格式不必发布）。复制要在页面渲染之前做，Sphinx 才给链接加上
   ``?v=`` 校验和；不放进源目录的 ``_static``：Jupyter Book 会把那里的每个 .css 挂到每一页上。字体还没到时
   公式先用后备字体画出（``font-display: swap``），不空着等字体。
3. **只有有公式的页面加载 KaTeX 的样式。** sphinxcontrib-katex 把样式挂到每一页；这里在
   ``html-page-context`` 里把它从没有公式的页面上拿掉（按页增减资源，配置做不到）。
4. **多行公式照 Sphinx 的规矩包好。** Sphinx 自己给 MathJax 写出多行的 ``{math}`` 块时，含 ``\\\\`` 的一段包进
   ``\\begin{split}``，空行分开的几段再包进 ``\\begin{aligned}``；sphinxcontrib-katex 预排版时把原文直接交给
   KaTeX（``x' &= …`` 于是排不出来）。这里在写出网页之前照同样的规矩改写这些块（只改这次写出用的文档树，
   PDF 不受影响）。
5. **写错的公式让构建失败。** sphinxcontrib-katex 让 KaTeX 在出错时不抛异常（``throwOnError: false``，代码里的
   常量），把原文标红印在页面上。这里发现页面里有 KaTeX 的错误标记时发警告（构建带 ``-W``，于是失败）。
6. **MathML 合规。** KaTeX 0.16 给 ``split``/``aligned`` 写出的 ``<mtable columnspacing="">`` 是空值，HTML 检查器
   报错；这里在页面正文里去掉这个空属性（浏览器与屏幕阅读器本来就按默认值处理它）。
7. **排版进程随构建结束。** sphinxcontrib-katex 的 Node 进程只在解释器正常退出时才停；这里在构建结束时停掉它，
   免得它留下来占着构建输出的管道（读输出的测试会一直等下去）。
8. **机器忙时排版进程也起得来。** sphinxcontrib-katex 起 Node 进程后，一看到套接字文件出现就连接，只连一次，
   总共只等 5 秒（代码里的常量）。可套接字文件在 Node 调用 ``bind`` 时就有了，要到 ``listen`` 之后才接受连接；
   机器一忙，两者之间的空隙变长，连接被拒（``ConnectionRefusedError``），整个构建失败。这里换上它的
   ``start_server_process``：连接被拒或文件还没出现就再连，直到连上、Node 进程退出或过了
   ``STARTUP_SECONDS``（失败时停掉 Node 进程，报出它的原话）。
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

KATEX_STATIC = "katex"                       # 输出目录 _static/ 下的子目录
RENDERED = 'class="katex"'                   # KaTeX 排好的每个公式都带它
ERROR = 'class="katex-error"'                # throwOnError: false 时 KaTeX 写出的错误标记
EMPTY_SPACING = ' columnspacing=""'          # KaTeX 写出的不合规的空属性（见模块说明第 6 条）
STARTUP_SECONDS = 120.0                      # 排版进程最多等这么久才算起不来（见模块说明第 8 条）
FONT_SOURCES = re.compile(r"src:url\((fonts/[^)]+\.woff2)\) format\(\"woff2\"\)(?:,url\([^)]*\) format\(\"[a-z]+\"\))*")


def find_katex(confdir: Path, node_path: str | None = None) -> Path | None:
    """npm 装的 KaTeX 包目录（含 dist/katex.min.js）：先找配置目录及其上级的 node_modules，再找 NODE_PATH。"""
    candidates = [folder / "node_modules" / "katex" for folder in (confdir, *confdir.parents)]
    candidates += [Path(p) / "katex" for p in (node_path or "").split(os.pathsep) if p]
    for folder in candidates:
        if (folder / "dist" / "katex.min.js").is_file():
            return folder.resolve()
    return None


def use_npm_katex(app: Sphinx) -> None:
    """HTML 构建：把 npm 锁里的 KaTeX 交给 sphinxcontrib-katex 的排版进程（见模块说明第 1 条）。
    在它自己的 builder-inited（优先级 500）读这个路径之前做；别的构建器（PDF、gettext）不需要 KaTeX。"""
    config = app.config
    if app.builder.format != "html" or config.html_math_renderer != "katex":
        return
    katex = find_katex(Path(app.confdir), os.environ.get("NODE_PATH"))
    if katex is None:
        raise RuntimeError(
            "[book_math] 找不到 npm 包 katex（node_modules/katex/dist/katex.min.js）：网站的公式在构建时由它排版。"
            "请在仓库根目录运行 make setup（它按 package-lock.json 执行 npm ci；需要 Node.js 与 npm）。")
    config.katex_js_path = str(katex / "dist" / "katex.min.js")
    app._book_katex_dir = katex


def woff2_only(css: str) -> str:
    """KaTeX 的 CSS 里每个 @font-face 只留 woff2 一种格式，并且字体到之前先用后备字体画出公式
    （font-display: swap，不让公式空着等字体）（见模块说明第 2 条）。"""
    css = FONT_SOURCES.sub(r'src:url(\1) format("woff2")', css)
    return css.replace("@font-face{", "@font-face{font-display:swap;")


def stop_katex_server(app: Sphinx, exception) -> None:
    """构建结束（成功或失败）时停掉 sphinxcontrib-katex 的排版进程。它只在解释器正常退出时（atexit）才停；
    Sphinx 的进程被别的方式结束时，它会留下来，还占着构建输出的管道，读构建输出的一方就一直等下去。"""
    from sphinxcontrib.katex import KaTeXServer

    import atexit

    server, KaTeXServer.katex_server = KaTeXServer.katex_server, None
    if server is not None:
        atexit.unregister(KaTeXServer.terminate)  # 它登记的退出处理会再停一次，删已经删掉的临时目录
        server.terminate()


def patient_server_process(cls, rundir: Path, timeout: float):
    """起 KaTeX 的排版进程并连上它的套接字，连接被拒时再试（见模块说明第 8 条）。

    取代 ``sphinxcontrib.katex.KaTeXServer.start_server_process``（同样的参数与返回值）；``timeout`` 至少取
    ``STARTUP_SECONDS``。"""
    timeout = max(timeout, STARTUP_SECONDS)
    socket_path = Path(rundir) / "katex.sock"
    process = subprocess.Popen(cls.build_command(socket=socket_path), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, cwd=rundir)
    deadline = time.monotonic() + timeout
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(socket_path))
            return process, sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            output = process.communicate()[0].decode(errors="replace").strip()
            output = output or "没有输出"
            raise RuntimeError(
                f"[book_math] KaTeX 的排版进程（Node）在 {timeout:.0f} 秒内没有接受连接"
                f"（退出码 {process.poll()}）：{output}")
        time.sleep(0.01)


def copy_katex_assets(app: Sphinx) -> None:
    """KaTeX 的 CSS 与 woff2 字体复制到输出目录的 _static/katex/（见模块说明第 2 条）。"""
    katex = getattr(app, "_book_katex_dir", None)
    if app.builder.format != "html" or katex is None:
        return
    target = Path(app.outdir) / "_static" / KATEX_STATIC
    (target / "fonts").mkdir(parents=True, exist_ok=True)
    css = woff2_only((katex / "dist" / "katex.min.css").read_text(encoding="utf-8"))
    if ".ttf)" in css or ".woff)" in css:
        raise RuntimeError("[book_math] 没能把 KaTeX 的 CSS 改成只用 woff2 字体：KaTeX 的 CSS 格式变了？")
    (target / "katex.min.css").write_text(css, encoding="utf-8")
    for font in sorted((katex / "dist" / "fonts").glob("*.woff2")):
        shutil.copyfile(font, target / "fonts" / font.name)


def wrap_like_sphinx(tex: str) -> str:
    """多行公式照 Sphinx 给 MathJax 的写法包好：含 \\\\ 的一段用 split，空行分开的几段再用 aligned。"""
    parts = [part for part in tex.split("\n\n") if part.strip()]
    wrapped = [f"\\begin{{split}}{part}\\end{{split}}" if "\\\\" in part else part for part in parts]
    if len(wrapped) > 1:
        return "\\begin{aligned}" + "\\\\".join(wrapped) + "\\end{aligned}"
    return wrapped[0] if wrapped else tex


def wrap_display_math(app: Sphinx, doctree, docname: str) -> None:
    """网页的多行公式块照 Sphinx 的规矩包好（见模块说明第 4 条）。"""
    if app.builder.format != "html" or app.config.html_math_renderer != "katex":
        return
    for node in doctree.findall(nodes.math_block):
        if node.get("nowrap"):
            continue
        tex = node.astext()
        wrapped = wrap_like_sphinx(tex)
        if wrapped != tex:
            node.children = []
            node += nodes.Text(wrapped)


def math_assets_only_with_math(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """没有公式的页面不加载 KaTeX 的样式；去掉空的 columnspacing；页面里有 KaTeX 的错误标记就警告（见模块说明第 3、5、6 条）。"""
    if app.config.html_math_renderer != "katex":
        return
    body = context.get("body", "")
    if EMPTY_SPACING in body:
        body = context["body"] = body.replace(EMPTY_SPACING, "")
    if ERROR in body:
        found = re.search(ERROR + r'[^>]*title="([^"]*)"', body)
        detail = found.group(1) if found else "（见页面里标红的公式）"
        logger.warning(f"[book_math] {pagename}: KaTeX 排不了这个公式：{detail}")
    if RENDERED in body:
        return
    ours = {app.config.katex_css_path, "katex-math.css"}
    css = context.get("css_files")
    if css:
        # Sphinx 7.4 记的文件名带着 _static/ 前缀
        css[:] = [c for c in css if str(getattr(c, "filename", c)).removeprefix("_static/") not in ours]


def setup(app: Sphinx) -> dict:
    from sphinxcontrib.katex import KaTeXServer

    KaTeXServer.start_server_process = classmethod(patient_server_process)
    app.connect("builder-inited", use_npm_katex, priority=390)
    app.connect("builder-inited", copy_katex_assets, priority=400)
    app.connect("doctree-resolved", wrap_display_math)
    app.connect("build-finished", stop_katex_server)
    # html-page-context 由 emit_firstresult 发出：某个处理器一返回值，后面的就不再被调用；所以早一点
    app.connect("html-page-context", math_assets_only_with_math, priority=100)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
