"""两种语言的版本在同一个网站上：中文在根目录，英文在 ``en/``（在 _config.yml 的 sphinx.local_extensions 里登记）。

配置做不到的两件事：

- 每页左侧栏书名下面一个链接，到另一种语言的**同一页**（主题没有语言切换；它的页头按钮总在新标签页里打开，
  所以放在 templates/navbar-logo.html 里，模板读这里给的 ``book_edition_links``）；
- 每页 ``<head>`` 里的 ``<link rel="alternate" hreflang=…>``：搜索引擎据此知道两页互为译本
  （sphinx-sitemap 的 hreflang 假定每种语言一个 ``<语言>/`` 前缀，中文在根目录时对不上）。

学生版网站（``hide_solutions``，tools/build_book.py --student）不写指向发布网址的那几样：hreflang、
``og:url``、``<link rel="canonical">`` 和 sitemap.xml 都指向带参考答案的完整网站，老师把学生版放到公开的网址上，
搜索引擎就会把学生引到完整网站去（r36t2 第 11 条）。语言切换按钮是相对链接，照旧。

配置：``book_editions`` 列出各个版本（语言代码、在网站里的前缀、按钮上的名字），``book_edition`` 是这一本
的语言。英文版的配置由 tools/i18n.py 生成，只改 ``book_edition``；按钮上的名字用各自的语言写（“English”
“中文”），两个版本里都一样。
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")


def editions(app: Sphinx) -> tuple[dict, list[dict]]:
    """(这一本, 其余各本)。"""
    this = app.config.book_edition
    found = [e for e in app.config.book_editions if e["lang"] == this]
    if not found:
        raise ValueError(f"book_edition {this!r} 不在 book_editions 里")
    return found[0], [e for e in app.config.book_editions if e["lang"] != this]


def site_root(app: Sphinx) -> str:
    """网站根目录的网址（中文版的 html_baseurl；英文版的 html_baseurl 末尾多一段 en/）。"""
    this, _ = editions(app)
    base = app.config.html_baseurl or ""
    prefix = this.get("prefix", "")
    return base[: len(base) - len(prefix)] if prefix and base.endswith(prefix) else base


def add_edition_links(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    student = bool(getattr(app.config, "hide_solutions", False))
    if student:   # 学生版：不指向完整网站（见模块说明）
        context["pageurl"] = None   # Sphinx 的模板据此写 <link rel="canonical">
        context["metatags"] = re.sub(r'\n?<meta property="og:url"[^>]*>', "", context.get("metatags", ""))
    if doctree is None and pagename not in ("index",):
        return  # 搜索页、索引页这类没有译本对应关系的页面
    this, others = editions(app)
    depth = pagename.count("/") + this.get("prefix", "").count("/")
    root = site_root(app)
    tags = []
    for edition in [this] + others if not student else []:
        url = f"{root}{edition.get('prefix', '')}{pagename}.html"
        tags.append(f'<link rel="alternate" hreflang="{html.escape(edition["hreflang"])}" href="{html.escape(url)}">')
    first = app.config.book_editions[0]
    if not student:
        tags.append(f'<link rel="alternate" hreflang="x-default" '
                    f'href="{html.escape(root + first.get("prefix", "") + pagename + ".html")}">')
        context["metatags"] = context.get("metatags", "") + "\n" + "\n".join(tags)
    context["book_edition_links"] = [
        {"url": "../" * depth + edition.get("prefix", "") + pagename + ".html",
         "hreflang": edition["hreflang"], "label": edition["label"]}
        for edition in others]


class MarkChinese(SphinxPostTransform):
    """非中文版的网页里，刻意保留的中文词（术语表的中文名……）包进 ``<span lang="zh-CN">``：屏幕阅读器按中文
    读它，浏览器按中文挑字体（页面是 ``lang="en"``）。只在 HTML 构建、只在不是中文的版本里做。"""

    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs) -> None:
        if self.config.book_edition.lower().startswith("zh"):
            return
        for text in list(self.document.findall(nodes.Text)):
            if not _CJK.search(text) or isinstance(text.parent, (nodes.literal_block, nodes.raw)):
                continue
            parts, last = [], 0
            for m in _CJK.finditer(text):
                parts.append(nodes.Text(text[last:m.start()]))
                parts.append(nodes.raw("", f'<span lang="zh-CN">{html.escape(m.group())}</span>', format="html"))
                last = m.end()
            parts.append(nodes.Text(text[last:]))
            text.parent.replace(text, [p for p in parts if not (isinstance(p, nodes.Text) and not str(p))])


def drop_student_sitemap(app: Sphinx, exception) -> None:
    """学生版网站不留 sitemap.xml（它列的是完整网站的网址）。在 sphinx-sitemap 写出它（优先级 500）之后。"""
    if exception is None and getattr(app.config, "hide_solutions", False) and app.builder.format == "html":
        (Path(app.outdir) / "sitemap.xml").unlink(missing_ok=True)


def setup(app: Sphinx) -> dict:
    app.add_post_transform(MarkChinese)
    app.add_config_value("book_editions", [], "html")
    app.add_config_value("book_edition", "", "html")
    app.connect("html-page-context", add_edition_links, priority=510)
    app.connect("build-finished", drop_student_sitemap, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
