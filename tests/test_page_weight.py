"""读者下载多少：每一页在预算之内（tools/site_weight.py 量：本机像静态主机那样 gzip 提供网站，Chromium 打开每一页，
记下每个文件实际传输的字节）。

预算：任何一页首次访问（全新的缓存）≤ 1 MB；纯文字的页（没有图、没有交互图）首次访问 ≤ 400 KB，再次访问（读过全书的浏览器
再打开这一页：共用文件都已缓存，HTML 重新取）≤ 30 KB。两种语言的每一页都量。另有不开浏览器的检查：每页不加载 fontawesome.js，
检索的脚本只在搜索页上，交互图的库只在有交互图的页上，英文版引用网站根目录的共用文件。
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support.book import REPO, toc_docnames
from support.pagekit import resources

sys.path.insert(0, str(REPO / "tools"))
import site_weight  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.book]


@pytest.fixture(scope="module")
def html(built_site) -> Path:
    """整个网站（两种语言）。"""
    return built_site.html


@pytest.fixture(scope="module")
def pages(html) -> list[str]:
    found = site_weight.site_pages(html)
    assert len(found) == 2 * len(toc_docnames()), f"两种语言的页面不全: {found}"
    return found


def test_budget_arithmetic_flags_what_it_should(tmp_path):
    """预算的判断本身：超了的页被报告，没超的不报（有图的页只守 1 MB）。"""
    (tmp_path / "text.html").write_text("<p>x</p>", encoding="utf-8")
    (tmp_path / "fig.html").write_text('<div class="interactive-figure"></div>', encoding="utf-8")
    (tmp_path / "img.html").write_text('<img src="_images/a.svg">', encoding="utf-8")
    visit = site_weight.Visit
    results = {
        "text.html": {"first": visit("text.html", {"a.js": 401_000}),
                      "repeat": visit("text.html", {"text.html": 20_000})},
        "img.html": {"first": visit("img.html", {"a.js": 500_000}), "repeat": visit("img.html", {"img.html": 40_000})},
        "fig.html": {"first": visit("fig.html", {"vega.js": 900_000}), "repeat": visit("fig.html", {"vega.js": 900_000})},
    }
    problems = site_weight.budget_problems(tmp_path, results)
    assert len(problems) == 1 and problems[0].startswith("text.html: 首次访问 401 KB"), problems
    results["fig.html"]["first"].files["more.js"] = 200_000
    assert any(p.startswith("fig.html: 首次访问 1100 KB") for p in site_weight.budget_problems(tmp_path, results))


def test_no_page_loads_fontawesome_js_or_the_search_index_outside_search(html, pages):
    for page in pages:
        loads = resources(html / page).loads
        assert not [u for u in loads if "fontawesome" in u], f"{page} 还在加载 fontawesome.js"
        assert not [u for u in loads if "searchindex" in u or "searchtools" in u], \
            f"{page} 不是搜索页，却加载了检索脚本"
    for search in ("search.html", "en/search.html"):
        assert any("searchindex" in u for u in resources(html / search).loads), f"{search} 没有检索索引"


def test_interactive_code_only_on_pages_with_interactive_figures(html, pages):
    with_figures = 0
    for page in pages:
        loads = resources(html / page).loads
        interactive = [u for u in loads if "interactive/" in u]
        if site_weight.has_interactive_figure(html, page):
            with_figures += 1
            assert interactive, f"{page} 有交互图，却没有加载交互图的库"
        else:
            assert not interactive, f"{page} 没有交互图，却加载了 {interactive}"
    assert with_figures


def test_english_pages_share_the_sites_static_files(html):
    """英文版与中文版逐字节相同的主题文件只有一份（网站根目录的 _static/），英文页引用它，它也确实在。"""
    page = html / "en" / "book" / "s2_scaled_dot_product.html"
    loads = [u.split("?")[0] for u in resources(page).loads]
    shared = [u for u in loads if u.startswith("../../_static/")]
    assert any(u.endswith("pydata-sphinx-theme.css") for u in shared), loads
    for url in loads:
        assert (page.parent / url).resolve().is_file(), f"英文页引用的 {url} 不存在"
    assert not (html / "en" / "_static" / "styles" / "pydata-sphinx-theme.css").exists()


def test_every_page_of_both_editions_is_within_budget(html, pages):
    results = site_weight.measure(html, pages)
    print("\n" + site_weight.report(html, results))
    problems = site_weight.budget_problems(html, results)
    assert not problems, "超出预算的页面：\n" + "\n".join(problems)


def test_a_cleared_cache_fetches_every_file_again_like_a_new_context(html):
    """site_weight.measure 量首次访问时不再每页开一个新的浏览器上下文，而是在同一个上下文里先清空缓存
    （Meter.fresh_cache）。清空之后再开同一页，传输的文件与字节和全新上下文里的第一次访问相同；不清空时
    （缓存里已有），传输的要少得多：否则上面的预算量的就不是首次访问。favicon 由浏览器另行取，时有时无，不算。"""
    from playwright.sync_api import sync_playwright

    page = "book/s2_scaled_dot_product.html"

    def files(visit):
        return {url: size for url, size in visit.files.items() if "favicon" not in url}

    with site_weight.GzipSite(html) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=site_weight.shutil.which("chromium"),
                                    args=site_weight.chromium_args())
        try:
            meter = site_weight.Meter(browser, base)
            first = meter.visit(page)
            cached = meter.visit(page)
            meter.fresh_cache()
            cleared = meter.visit(page)
            meter.close()
        finally:
            browser.close()
    assert files(first) and files(cleared) == files(first)
    assert sum(files(cached).values()) < sum(files(first).values()) / 2, (cached.files, first.files)
