"""加粗的 ** 必须被 Markdown 认出来，不能原样印在页面上。

CommonMark 的规则：开头的 ** 后面紧跟标点（如 {term} 的 {、反引号、$）时，它前面必须是空白或标点；
结尾的 ** 前面是标点时，它后面也必须是空白或标点。“叫作**{term}`残差流`**。”的开头一半不满足，
页面上就印出了两个星号。源文件检查用构建时同一个 MyST 解析器，很快；网站检查看构建好的每一页（两种语言）。
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

from support.book import REPO, toc_docnames
from support.pagekit import soup

EXTENSIONS = ["colon_fence", "dollarmath", "amsmath", "substitution"]  # 与 _config.yml 相同


def _literal_stars(text: str) -> list[str]:
    """MyST 解析后仍留在普通文字里的 **（代码、公式、代码单元不算），每处带一点上下文。"""
    md = create_md_parser(MdParserConfig(enable_extensions=EXTENSIONS), RendererHTML)
    hits = []
    for token in md.parse(text):
        for child in token.children or []:
            if child.type == "text" and "**" in child.content:
                hits.append(child.content)
    return hits


def test_parser_check_finds_bold_glued_to_a_role_after_a_chinese_character():
    assert _literal_stars("下文把它叫作**{term}`残差流`**。")
    assert not _literal_stars("下文把它叫作{term}`残差流`。")
    assert not _literal_stars("- **输入宽度叫 {term}`d_model`**，即宽度")
    assert not _literal_stars("```python\nx = a ** 2\n```\n")


@pytest.mark.parametrize("docname", toc_docnames())
def test_no_page_source_leaves_bold_markers_unparsed(docname):
    path = next(p for p in (REPO / f"{docname}.md", REPO / f"{docname}.ipynb") if p.exists())
    if path.suffix != ".md":
        pytest.skip("只检查 MyST 源文件")
    hits = _literal_stars(path.read_text(encoding="utf-8"))
    assert not hits, f"{docname}：这些 ** 不会变成加粗，会原样印出来：{[h[:80] for h in hits]}"


def test_no_built_page_shows_literal_double_stars(built_site):
    html = built_site.html
    pages = [p for p in html.rglob("*.html") if "_static" not in p.parts]
    assert pages
    bad = []
    for page in pages:
        doc = soup(page)
        for tag in doc(["script", "style", "pre", "code", "math", "svg"]):
            tag.decompose()
        for tag in doc.select(".math, .highlight, .cell_output"):
            tag.decompose()
        text = doc.get_text()
        for m in re.finditer(r"\*\*", text):
            bad.append(f"{page.relative_to(html)}: {text[max(0, m.start() - 30):m.end() + 30]!r}")
    assert not bad, "页面上印出了没被当成加粗的 **：\n" + "\n".join(bad[:20])
