"""网站上的公式在构建时排好（book/_ext/book_math.py：sphinxcontrib-katex + npm 锁里的 KaTeX）。

两种语言的每一页：每个公式都已是 KaTeX 的 HTML，带给屏幕阅读器的 MathML 和 TeX 源码；没有 KaTeX 的错误标记；
正文里没有残留的 TeX 定界符；公式编号与 {eq} 引用一致（附录是 A.1 式的编号）；KaTeX 的样式只挂在有公式的页面上，
它引用的字体都在本站。不开浏览器；在浏览器里的样子见 test_browser.py 的截图与检查。
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.book import toc_docnames
from support.pagekit import articles, resources, soup, text_nodes

pytestmark = pytest.mark.book

# 没排版的 TeX 留在正文里的样子：\( \) \[ \] $$ 以及 \begin{…}
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{")


def edition_pages(html: Path) -> list[Path]:
    """两种语言的目录里的每一页。"""
    found = [html / f"{d}.html" for d in toc_docnames()]
    found += [html / "en" / f"{d}.html" for d in toc_docnames()]
    missing = [p for p in found if not p.is_file()]
    assert not missing, f"没有生成这些页面: {missing}"
    return found


@pytest.fixture(scope="module")
def html(built_site) -> Path:
    """整个网站（两种语言）。"""
    return built_site.html


@pytest.fixture(scope="module")
def pages(html) -> list[Path]:
    return edition_pages(html)


def formulas(path: Path) -> list:
    """正文里的公式元素（sphinxcontrib-katex 写出的 span.math 与 div.math）。"""
    return [el for article in articles(soup(path)) for el in article.select("span.math, div.math")]


def test_every_formula_is_rendered_with_mathml_and_its_tex_source(html, pages):
    total = 0
    for page in pages:
        for el in formulas(page):
            total += 1
            where = f"{page.relative_to(html)}: {el.get_text()[:60]!r}"
            assert el.select_one(".katex .katex-html"), f"公式没有排成 KaTeX 的 HTML：{where}"
            source = el.select_one('.katex-mathml math annotation[encoding="application/x-tex"]')
            assert source is not None and source.get_text().strip(), f"公式没有 MathML 或 TeX 源码：{where}"
            assert not el.select(".katex-error"), f"KaTeX 排不了这个公式：{el.select_one('.katex-error')}"
    assert total > 100, f"两种语言一共只找到 {total} 个公式：公式检查落空"


def test_no_tex_is_left_unrendered_in_the_text(html, pages):
    """代码与代码输出之外的文字里没有 TeX 定界符（写错了角色、漏了 dollarmath 时它们会原样印出来）。"""
    found = {}
    for page in pages:
        for article in articles(soup(page)):
            for node in text_nodes(article):
                if node.find_parent(["pre", "code", "script", "style", "annotation"]) \
                        or node.find_parent(class_=["highlight", "cell_output", "output"]):
                    continue
                if RAW_TEX.search(node):
                    found.setdefault(str(page.relative_to(html)), []).append(str(node).strip()[:60])
    assert not found, f"这些页面的正文里有没排版的 TeX: {found}"


def test_rendered_formulas_keep_the_source_tex(built_book):
    """排好的公式里记着页面源文件里写的 TeX（§2 的注意力公式）。"""
    sources = [el.select_one("annotation").get_text() for el in
               formulas(built_book.html / "book" / "s2_scaled_dot_product.html")]
    assert any(r"\operatorname{softmax}" in s or r"\mathrm{softmax}" in s for s in sources), sources[:5]
    assert any(r"\sqrt{d_k}" in s for s in sources), sources[:5]


def equation_numbers(path: Path) -> dict[str, str]:
    """页面上带编号的公式：{公式的 id: 编号文字（不带括号）}。"""
    numbers = {}
    for el in formulas(path):
        eqno = el.select_one(".eqno")
        if eqno is not None and el.get("id"):
            numbers[el["id"]] = eqno.get_text().strip().strip("()¶# ").strip("()")
    return numbers


@pytest.mark.parametrize("docname", ["book/s2_scaled_dot_product", "book/appendix_rnn"])
@pytest.mark.parametrize("edition", ["", "en/"])
def test_equation_numbers_and_references_agree(html, docname, edition):
    """{eq} 引用的文字就是被引公式旁的编号；附录的公式编号为 A.1、A.2……"""
    path = html / f"{edition}{docname}.html"
    numbers = equation_numbers(path)
    assert numbers, f"{path.name} 里没有带编号的公式"
    if "appendix" in docname:
        assert all(re.fullmatch(r"A\.\d+", n) for n in numbers.values()), numbers
    else:
        assert all(re.fullmatch(r"\d+(\.\d+)*", n) for n in numbers.values()), numbers
    refs = [a for article in articles(soup(path)) for a in article.select("a.reference")
            if a.get("href", "").startswith("#") and a["href"][1:] in numbers]
    assert refs, f"{path.name} 里没有 {{eq}} 引用"
    for a in refs:
        assert numbers[a["href"][1:]] in a.get_text(), f"引用 {a.get_text()!r} 与公式编号 {numbers[a['href'][1:]]} 不符"


def test_katex_stylesheet_only_on_pages_with_formulas_and_its_fonts_are_here(html, pages):
    """KaTeX 的样式只挂在有公式的页面上；它引用的每个字体文件都在本站，而且都是 woff2。"""
    with_math = 0
    for page in pages:
        sheets = [href for rel, href in resources(page).links if rel == "stylesheet" and "katex" in href]
        if formulas(page):
            with_math += 1
            assert sheets, f"{page.relative_to(html)} 有公式，却没有 KaTeX 的样式"
        else:
            assert not sheets, f"{page.relative_to(html)} 没有公式，却加载了 {sheets}"
    assert with_math
    css = html / "_static" / "katex" / "katex.min.css"
    fonts = re.findall(r"url\(([^)]+)\)", css.read_text(encoding="utf-8"))
    assert fonts and all(f.endswith(".woff2") for f in fonts), fonts
    missing = [f for f in fonts if not (css.parent / f).is_file()]
    assert not missing, f"KaTeX 的样式引用了不存在的字体: {missing}"
