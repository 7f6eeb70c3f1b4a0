"""网站的图标：只发布用到的字形（在 _config.yml 的 sphinx.local_extensions 里登记）。

pydata-sphinx-theme 给每一页加载 fontawesome.js（543 KB，gzip 后约 150 KB）：它在浏览器里把每个
``<i class="fa-…">`` 换成 SVG。主题的 CSS 本来就带着同一套图标的字体规则（``.fa-bars:before{content:"\\f0c9"}``
与 ``@font-face``），所以 templates/layout.html 不再加载那个脚本，``<i>`` 由图标字体画出。那个字体有 1,400 多个
字形（fa-solid-900.woff2，156 KB），本书用到的只有几十个。这是输出目录里的文件，配置做不到，所以：

**HTML 构建结束时，把图标字体裁成用到的字形。** 用到的字形 = 输出目录里每一页 HTML 和主题脚本里出现的
``fa-名字`` 类（按主题 CSS 里的规则换成码位），加上主题 CSS 自己用这个字体画的符号（``--pst-icon-*``：提示框、
外链箭头……）以及 CSS 里直接写码位的规则。裁剪用 fontTools（woff2 要 brotli），woff2 与 ttf 两份都裁（CSS 里两种
格式都列着）。Sphinx 每次构建都重新复制主题的静态文件，这里每次构建结束都重新裁一遍（不到一秒）。
没有页面再加载的 fontawesome.js（连同它的 .map 与许可说明）也从输出里删掉，网站的 zip 小 2 MB。
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

WEBFONTS = Path("_static") / "vendor" / "fontawesome" / "webfonts"
SOLID = "fa-solid-900"                       # 主题里 .fa-solid / .fas 与 --fa-font-solid 用的字体
THEME_CSS = Path("_static") / "styles" / "pydata-sphinx-theme.css"
CLASS_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:(?::)?before,?)+)\{content:"\\([0-9a-f]+)"\}')
CLASS_NAME = re.compile(r"\.fa-([a-z0-9-]+):")
USED_CLASS = re.compile(r"\bfa-([a-z0-9-]+)")
# 其余用这个字体画的符号：CSS 变量（--pst-icon-bell:"\f0f3"）与 content 里直接写的码位；码位有的写成转义，
# 有的直接是私用区的字符
LITERAL = re.compile(r'(?:--pst-icon-[a-z-]+:|content:)"(?:\\([ef][0-9a-f]{3})|([\ue000-\uf8ff]))"')


def icon_codepoints(css: str) -> dict[str, int]:
    """主题 CSS 里 ``.fa-名字:before{content:"\\码位"}`` 的对照表：{名字: 码位}。"""
    table = {}
    for selectors, code in CLASS_RULE.findall(css):
        for name in CLASS_NAME.findall(selectors):
            table[name] = int(code, 16)
    return table


def used_codepoints(outdir: Path) -> set[int]:
    """输出目录里的页面与主题脚本用到的图标码位（见模块说明）。"""
    css = (outdir / THEME_CSS).read_text(encoding="utf-8")
    table = icon_codepoints(css)
    names: set[str] = set()
    for path in [*outdir.rglob("*.html"), *(outdir / "_static" / "scripts").glob("*.js")]:
        names.update(USED_CLASS.findall(path.read_text(encoding="utf-8", errors="replace")))
    used = {table[name] for name in names if name in table}
    for sheet in (outdir / "_static").rglob("*.css"):
        text = sheet.read_text(encoding="utf-8", errors="replace")
        for code, char in LITERAL.findall(CLASS_RULE.sub("", text)):
            used.add(int(code, 16) if code else ord(char))
    return used


def subset_font(path: Path, codepoints: set[int]) -> None:
    """把字体文件就地裁成只含这些码位的字形（格式按扩展名：woff2 或 ttf）。"""
    from fontTools import subset

    options = subset.Options()
    options.flavor = "woff2" if path.suffix == ".woff2" else None
    options.layout_features = ["*"]
    font = subset.load_font(str(path), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codepoints))
    subsetter.subset(font)
    subset.save_font(font, str(path), options)


def subset_icon_font(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    fonts = [outdir / WEBFONTS / f"{SOLID}{ext}" for ext in (".woff2", ".ttf")]
    if not (outdir / THEME_CSS).is_file() or not all(f.is_file() for f in fonts):
        logger.warning(f"[book_assets] 主题的图标字体或 CSS 不在预期的位置（{WEBFONTS}、{THEME_CSS}）：主题升级了？")
        return
    codepoints = used_codepoints(outdir)
    if not codepoints:
        logger.warning("[book_assets] 页面里一个图标也没找到：主题的图标写法变了？")
        return
    for font in fonts:
        subset_font(font, codepoints)
    for unused in (outdir / "_static" / "scripts").glob("fontawesome.js*"):
        unused.unlink()


def setup(app: Sphinx) -> dict:
    app.connect("build-finished", subset_icon_font)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
