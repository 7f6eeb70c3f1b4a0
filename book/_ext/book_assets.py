"""网站的图标只发布用到的字形，页首的脚本不挡着首屏（在 _config.yml 的 sphinx.local_extensions 里登记）。

pydata-sphinx-theme 给每一页加载 fontawesome.js（543 KB，gzip 后约 150 KB）：它在浏览器里把每个
``<i class="fa-…">`` 换成 SVG。主题的 CSS 本来就带着同一套图标的字体规则（``.fa-bars:before{content:"\\f0c9"}``
与 ``@font-face``），所以 templates/layout.html 不再加载那个脚本，``<i>`` 由图标字体画出。那个字体有 1,400 多个
字形（fa-solid-900.woff2，156 KB），本书用到的只有几十个。这是输出目录里的文件，配置做不到，所以：

**HTML 构建结束时，把图标字体裁成用到的字形。** 用到的字形 = 输出目录里每一页 HTML 和主题脚本里出现的
``fa-名字`` 类（按主题 CSS 里的规则换成码位），加上主题 CSS 自己用这个字体画的符号（``--pst-icon-*``：提示框、
外链箭头……）以及 CSS 里直接写码位的规则。裁剪用 fontTools（woff2 要 brotli），woff2 与 ttf 两份都裁（CSS 里两种
格式都列着）。Sphinx 每次构建都重新复制主题的静态文件，这里每次构建结束都重新裁一遍（不到一秒）。
没有页面再加载的 fontawesome.js（连同它的 .map 与许可说明）也从输出里删掉，网站的 zip 小 2 MB。

**主题 CSS 里只留用到的图标的规则。** pydata-sphinx-theme.css（397 KB，gzip 后 65 KB）是挡着首屏的样式表，其中
1,800 多条 ``.fa-名字:before{content:"\\码位"}`` 规则指向的字形已经裁掉了，留着它们只是让浏览器多下载、多解析：
裁字体的同时把码位不在字体里的这些规则删掉（gzip 后少约 19 KB）。

**页首的脚本都 defer。** Sphinx 与各扩展（doctools、复制按钮、折叠按钮、sphinx-design 的标签页……）把脚本以普通
``<script src>`` 挂在 ``<head>`` 里：浏览器每遇到一个就停下解析、等它下载完再执行，首屏跟着等。这些脚本都只在
DOMContentLoaded 之后（或在那时立即）做事，defer 保持它们的先后次序，所以在 ``html-page-context`` 里给它们加上
defer（各扩展加脚本的写法不同，配置里没有统一的开关）。例外：``documentation_options.js``，它后面的内联脚本
（``DOCUMENTATION_OPTIONS.pagename = …``）在解析到时就要用它；它只有几百字节。
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
WHOLE_CLASS_RULE = re.compile(r"(?<=\})" + CLASS_RULE.pattern)  # 紧跟在上一条规则之后：整条规则
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
    # fontawesome.js 不算：Sphinx 每次构建都把它复制进来，页面却不加载它（构建结束时删掉）
    scripts = [p for p in (outdir / "_static" / "scripts").glob("*.js") if not p.name.startswith("fontawesome")]
    for path in [*outdir.rglob("*.html"), *scripts]:
        names.update(USED_CLASS.findall(path.read_text(encoding="utf-8", errors="replace")))
    used = {table[name] for name in names if name in table}
    for sheet in (outdir / "_static").rglob("*.css"):
        text = sheet.read_text(encoding="utf-8", errors="replace")
        for code, char in LITERAL.findall(CLASS_RULE.sub("", text)):
            used.add(int(code, 16) if code else ord(char))
    return used


def prune_icon_rules(css: str, codepoints: set[int]) -> str:
    """删掉主题 CSS 里码位不在 codepoints 中的 ``.fa-名字:before{content:…}`` 规则（只认完整的一条规则）。"""
    def keep(match: re.Match) -> str:
        return match.group(0) if int(match.group(2), 16) in codepoints else ""

    return WHOLE_CLASS_RULE.sub(keep, css)


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
    css = outdir / THEME_CSS
    css.write_text(prune_icon_rules(css.read_text(encoding="utf-8"), codepoints), encoding="utf-8")
    for unused in (outdir / "_static" / "scripts").glob("fontawesome.js*"):
        unused.unlink()


PARSED_FIRST = {"_static/documentation_options.js"}   # 后面的内联脚本在解析时就要用它（见模块说明）


def defer_head_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """页首的外部脚本（不是内联的、没有 async/defer、不是模块）都改为 defer（见模块说明）。"""
    from sphinx.builders.html._assets import _JavaScript

    scripts = context.get("script_files")
    if not scripts or pagename == "search":
        return  # 搜索页的内联脚本一加载就调用 doctools.js 的 _ready：那一页的脚本照原样按顺序执行
    for i, script in enumerate(scripts):
        filename = str(getattr(script, "filename", script) or "")
        attributes = dict(getattr(script, "attributes", None) or {})
        if (not filename or filename in PARSED_FIRST or "://" in filename
                or {"async", "defer"} & attributes.keys() or attributes.get("type") == "module"):
            continue
        priority = getattr(script, "priority", 500)
        scripts[i] = _JavaScript(filename, priority=priority, **attributes, defer="defer")


def setup(app: Sphinx) -> dict:
    app.connect("build-finished", subset_icon_font)
    # 在各扩展按页加完脚本之后（book_html_fixes 的去重是 900）
    app.connect("html-page-context", defer_head_scripts, priority=950)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
