"""网站的 HTML：Sphinx 与主题写出、又没有配置项可改的几处小毛病（本地 Sphinx 扩展）。

能写进配置的都在 _config.yml 里（主题选项、html_context、搜索框与折叠提示、模板目录），界面文字的中文译文在
locale/zh_CN/LC_MESSAGES/sphinx.po。这里只留配置做不到的事，每一项都说明原因：

1. **每页的脚本不重复。** Sphinx 7.4 的一个缺陷（8.2 修复，sphinx-doc/sphinx#13402）：扩展在构建器
   初始化之后用 ``add_js_file(None, body=...)`` 加的内联脚本会在页面里出现两次。sphinx-thebe 的
   ``const THEBE_JS_URL = ...`` 因而在每页都抛 “has already been declared”。这里按内容去重。
2. **折叠按钮的标签是中文。** sphinx-togglebutton 把折叠按钮的 aria-label（“Toggle hidden content”）写死在
   JS 里：每页加一小段脚本（``toggle_label.js``）把它换成中文。
3. **参考文献表的无障碍角色。** docutils 0.21 把引文排成 ``role="list"`` 的 div，里面的每条却是
   ``role="doc-biblioentry"``（ARIA 1.2 已废弃，也不算列表项），axe 报 critical 的
   aria-required-children。这是 HTML 写出器的代码，配置改不了：这里给 HTML 构建器换一个只改这两个
   方法的写出器，每条改为 ``role="listitem"``。
4. **站点根目录的 index.html。** sphinx-external-toc 在根页面不叫 index 时写一个只有一行
   ``<meta refresh>`` 的跳转页（没有 ``lang``、没有标题）；这里先写一个完整的中文跳转页。

5. **中文标题的锚点有稳定的名字。** docutils 的 ``make_id`` 只留 ASCII 字母和数字，全是中文的标题
   （“上传之前在本机试一次”）于是得到按出现次序编的 ``#id19``：前面多一个标题、一条引文，链接就指到别处。
   没有标签的标题，这里在读入时把这种 id 换成标题文字本身（``#上传之前在本机试一次``；重名的加 ``-2``……），
   页内目录和标题旁的链接随之用它（r36t2 第 12 条）。有 ``(标签)=`` 的标题用标签，不受影响。

扩展点：要给某些页面加脚本（例如交互图的库），在 ``html-page-context`` 里 ``app.add_js_file``，
库文件在 ``builder-inited`` 时复制进输出目录（不要放进 book/_static：那里的每个 .js 都挂到每一页）。
"""

from __future__ import annotations

import html
from pathlib import Path

import re

from docutils import nodes
from docutils.transforms import Transform
from sphinx.application import Sphinx
from sphinx.writers.html5 import HTML5Translator

TOGGLE_LABEL_JS = Path(__file__).parent / "toggle_label.js"


# ---- 1. 脚本去重 ---------------------------------------------------------------------------

def dedupe_assets(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """同一个脚本/样式（同文件名、同属性、同内联内容）在页面里只出现一次（Sphinx 7.4 的缺陷，配置绕不开）。"""
    for key in ("script_files", "css_files"):
        assets = context.get(key)
        if not assets:
            continue
        seen, unique = set(), []
        for asset in assets:
            attributes = getattr(asset, "attributes", None) or {}
            ident = (str(getattr(asset, "filename", asset) or ""),
                     tuple(sorted((k, str(v)) for k, v in attributes.items())))
            if ident not in seen:
                seen.add(ident)
                unique.append(asset)
        assets[:] = unique  # 原地改：之后的处理器仍往同一个列表里加


# ---- 2. 折叠按钮的标签 ----------------------------------------------------------------------

def toggle_label_script(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """每一页：折叠按钮的 aria-label 换成中文（sphinx-togglebutton 把它写死在 JS 里）。"""
    app.add_js_file(None, body=TOGGLE_LABEL_JS.read_text(encoding="utf-8"))


# ---- 3. 参考文献表的无障碍角色 ----------------------------------------------------------------

class CitationListTranslator(HTML5Translator):
    """引文表：role="list" 的 div 里每条引文是 role="listitem"（docutils 写的是已废弃的 doc-biblioentry）。"""

    def visit_citation(self, node):
        if not isinstance(node.previous_sibling(), type(node)):
            self.body.append('<div role="list" class="citation-list">\n')
        self.body.append(self.starttag(node, "div", classes=[node.tagname], role="listitem"))

    def depart_citation(self, node):
        self.body.append("</div>\n")
        if not isinstance(node.next_node(descend=False, siblings=True), type(node)):
            self.body.append("</div>\n")


# ---- 4. 根目录的跳转页 ----------------------------------------------------------------------

REDIRECT_PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0; url={url}">
<title>{title}</title>
<link rel="icon" href="{favicon}">
</head>
<body>
<p>正在前往 <a href="{url}">{title}</a>……</p>
</body>
</html>
"""


def write_root_redirect(app: Sphinx, exception) -> None:
    """根页面不是 index 时，在输出根目录写一个中文跳转页（先于 sphinx-external-toc 的单行版本；那一页没有配置项）。"""
    if exception is not None or app.builder.format != "html" or app.config.root_doc == "index":
        return
    index = Path(app.outdir) / "index.html"
    favicon = app.config.html_favicon or ""
    if favicon and "://" not in favicon:
        favicon = "_static/" + Path(favicon).name
    index.write_text(REDIRECT_PAGE.format(
        lang=html.escape((app.config.language or "en").replace("_", "-")),
        url=html.escape(app.builder.get_target_uri(app.config.root_doc)),
        title=html.escape(app.config.html_title or app.config.project),
        favicon=html.escape(favicon)), encoding="utf-8")


# ---- 5. 中文标题的稳定锚点 -----------------------------------------------------------------

AUTO_ID = re.compile(r"id\d+")


def title_id(title: str) -> str:
    """标题文字做成的 id：字母、数字和汉字原样（小写），其余的一串字符换成一个“-”。"""
    return re.sub(r"[\W_]+", "-", title.lower()).strip("-")


class StableSectionIds(Transform):
    """第一个 id 是自动编号（``id19``）的节，换成标题文字做成的 id（见模块说明第 5 条）。
    在 docutils 把标签传给节（PropagateTargets，260）之后：有标签的节，第一个 id 就是标签。"""

    default_priority = 270

    def apply(self, **kwargs) -> None:
        doc = self.document
        for section in list(doc.findall(nodes.section)):
            ids = section["ids"]
            if not ids or not AUTO_ID.fullmatch(ids[0]) or not section.children \
                    or not isinstance(section[0], nodes.title):
                continue
            base = title_id(section[0].astext())
            if not base or AUTO_ID.fullmatch(base):
                continue
            new, n = base, 1
            while new in doc.ids:
                n += 1
                new = f"{base}-{n}"
            old = ids[0]
            ids[0] = new
            doc.ids[new] = doc.ids.pop(old, section)
            for name, ref in list(doc.nameids.items()):
                if ref == old:
                    doc.nameids[name] = new
            for ref in doc.findall(lambda node: isinstance(node, nodes.Element) and node.get("refid") == old):
                ref["refid"] = new


def setup(app: Sphinx) -> dict:
    # pydata-sphinx-theme 在 builder-inited 时把它的 Bootstrap 混入类套在这里登记的写出器上
    app.set_translator("html", CitationListTranslator)
    app.add_transform(StableSectionIds)
    app.connect("html-page-context", toggle_label_script)  # 在 book_search 的搜索页脚本之后（同为 500，按登记先后）
    app.connect("html-page-context", dedupe_assets, priority=900)  # 在各扩展按页加完脚本之后
    app.connect("build-finished", write_root_redirect, priority=400)  # 先于 sphinx-external-toc（500）
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
