"""第 7 节的活模型：数据文件放在页面旁边，读者翻到它时才加载（在 _config.yml 的 sphinx.local_extensions 里登记）。

``minigpt.live_model.LiveModelFigure`` 写出的 HTML 把模型的参数（JSON，约 0.4 MB）内嵌在
``<script type="application/json" class="live-model-data">`` 里（下载的 .ipynb 因此自带数据）。配置做不到的三件事：

1. **数据存成页面旁边的脚本文件。** HTML 构建时（doctree-resolved）把内嵌的 JSON 写成
   ``<页面名>.<名字>.js``（``window.bookLiveModels["名字"] = {...}``），页面里只留它的网址（带 ``?v=摘要``）。
   用脚本而不是 JSON 文件：从 file:// 打开网站（或解压的离线 zip）时，Chromium 不许 fetch() 本地文件，
   ``<script>`` 标签却照常加载。内容没变就不重写（空操作构建什么都不写）。
2. **数据与界面脚本等读者翻到活模型时才加载**（book_lazy.py：活模型的 ``data-lazy-scripts`` 依次列出数据文件和
   ``_static/interactive/`` 里的界面脚本，页面上只挂那个很小的加载器）。界面脚本与样式只给有活模型的页面
   （html-page-context，与 book_interactive.py 同一做法）；都是普通脚本（file:// 下浏览器不加载模块脚本）。
3. 静态图照 book_interactive.py 的办法存进 ``_images/``（它的 class 与交互图相同，那边已经处理）。
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

from book_lazy import add_loader, versioned

HERE = Path(__file__).parent
SCRIPT = HERE / "book_live_model.js"
STYLE = HERE / "book_live_model.css"
JS_PATH = "interactive/book-live-model.js"     # 相对于输出目录的 _static/
CSS_PATH = "interactive/book-live-model.css"
MARKER = 'class="live-model"'
DATA = re.compile(r'<script type="application/json" class="live-model-data">(.*?)</script>', re.S)
NAME = re.compile(r'data-live-model="([A-Za-z0-9-]+)"')


def data_script(name: str, payload: str) -> str:
    """数据文件的内容：把 JSON 挂到 window.bookLiveModels[name] 上（JSON 本身就是合法的 JS 表达式）。"""
    json.loads(payload)   # 坏数据在构建时就报错，而不是在读者的浏览器里
    return ("window.bookLiveModels = window.bookLiveModels || {};\n"
            f"window.bookLiveModels[{json.dumps(name)}] = {payload};\n")


def write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def data_to_files(app: Sphinx, doctree, docname: str) -> None:
    """doctree-resolved：内嵌的模型数据 → 页面旁边的 ``<页面名>.<名字>.js``（见本模块说明第 1 条）。"""
    if app.builder.format != "html":
        return
    for node in list(doctree.findall(nodes.raw)):
        text = node.astext()
        if "html" not in node.get("format", "").split() or "live-model-data" not in text:
            continue
        name = NAME.search(text).group(1)
        stem = Path(app.builder.get_target_uri(docname))
        filename = f"{stem.stem}.{name}.js"
        target = Path(app.outdir) / stem.parent / filename

        script = data_script(name, DATA.search(text).group(1))
        write_if_changed(target, script)
        digest = hashlib.sha256(script.encode("utf-8")).hexdigest()[:12]
        ui = versioned(str(stem), JS_PATH, SCRIPT.read_bytes())
        text = DATA.sub("", text).replace(MARKER, f'{MARKER} data-lazy-scripts="{filename}?v={digest} {ui}"', 1)
        node.replace_self(nodes.raw("", text, format="html"))


def copy_assets(app: Sphinx) -> None:
    static = Path(app.outdir) / "_static"
    (static / JS_PATH).parent.mkdir(parents=True, exist_ok=True)
    for src, dst in ((SCRIPT, static / JS_PATH), (STYLE, static / CSS_PATH)):
        if not dst.is_file() or dst.read_bytes() != src.read_bytes():
            shutil.copyfile(src, dst)


def add_assets_to_page(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    # 在 html-page-context 里加的文件只属于这一页（Sphinx 每页结束时复原列表）；界面脚本由加载器按需插入
    if MARKER in context.get("body", ""):
        copy_assets(app)
        add_loader(app)
        app.add_css_file(CSS_PATH)


def refresh_assets(app: Sphinx, exception) -> None:
    """增量构建没有重写这一页时，也把输出目录里已有的脚本与样式换成当前版本。"""
    if exception is None and app.builder.format == "html" and (Path(app.outdir) / "_static" / JS_PATH).is_file():
        copy_assets(app)


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", data_to_files)
    app.connect("html-page-context", add_assets_to_page)
    app.connect("build-finished", refresh_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
