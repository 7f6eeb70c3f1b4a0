"""交互图与活模型的脚本等读者翻到它们时再加载（book_interactive.py 与 book_live_model.py 共用，不是单独的扩展）。

画交互图的 Vega 库 gzip 后约 0.3 MB，第 7 节活模型的参数约 0.25 MB；页面一打开就加载、执行它们，手机上首屏要多等
好几秒，主线程也被看不见的图占着（Lighthouse 的总阻塞时间）。所以：

1. 每个要画的元素在 ``data-lazy-scripts`` 里列出它要的脚本（网址相对于页面，带 ``?v=`` 内容摘要，内容变了浏览器
   就取新的）；
2. 页面只挂一个很小的加载器 ``book_lazy.js``（defer），它在元素离视口不到半屏时按顺序插入这些 ``<script>``；
   在那之前读者看到的是静态图（没有 JavaScript 时也一样）。用普通脚本而不是模块：从 file:// 打开时也能加载。

按页加脚本、往输出目录复制文件都是配置做不到的事，所以在扩展里做。
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util.osutil import relative_uri

HERE = Path(__file__).parent
LOADER = HERE / "book_lazy.js"
LOADER_PATH = "interactive/book-lazy.js"     # 相对于输出目录的 _static/


def versioned(page_uri: str, static_path: str, data: bytes) -> str:
    """输出目录 _static/ 里的一个文件（内容 data）从页面 page_uri 看的网址，带内容摘要（同 Sphinx 给
    add_js_file 加的 ``?v=``）。"""
    uri = relative_uri(page_uri, "_static/" + static_path)
    return f"{uri}?v={hashlib.sha256(data).hexdigest()[:8]}"


def add_loader(app: Sphinx) -> None:
    """把加载器复制到输出目录（内容变了才复制），挂到这一页（在 html-page-context 里调用：只属于这一页）。"""
    target = Path(app.outdir) / "_static" / LOADER_PATH
    if not target.is_file() or target.read_bytes() != LOADER.read_bytes():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(LOADER, target)
    app.add_js_file(LOADER_PATH, loading_method="defer")
