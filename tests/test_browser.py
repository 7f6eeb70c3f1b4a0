"""在真实浏览器（Debian 的 Chromium，经 Playwright 驱动）里逐页打开整本书的网站。

网站由本机 127.0.0.1 上的一个 http.server 线程提供；发往其他主机的请求一律被拦下并记为失败，
所以这些测试同时检验“离线可读”。每一页（目录里的全部页面）都要做到：
没有控制台错误、没有失败的请求、没有请求其他主机、每张图都加载出来且有替代文字、
公式由 MathJax 排好（没有残留的 $$ 或 \\( \\)）、标题层级不跳级，深色模式下图仍是白底。
另外检查：作业页的答案折叠块点开才显示；搜索页用中文搜得到对应的页面。
每页在浅色、深色模式下各存一张整页截图到 _build/screenshots/，供人查看。

Chromium 来自 Debian（tools/system_deps.sh install browser）；绝不运行 `playwright install`。
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conftest import toc_docnames

pytestmark = [pytest.mark.browser, pytest.mark.book]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run", "--disable-quic", "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 900}
HOMEWORK = "book/homework"


# ---- 本地网站与浏览器 -----------------------------------------------------------------------

class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - 覆盖基类的签名
        pass


@pytest.fixture(scope="module")
def site(built_book):
    """在 127.0.0.1 的空闲端口上提供 _build/html，返回根地址。"""
    handler = functools.partial(QuietHandler, directory=str(built_book.html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(f"没有 {CHROMIUM}：请先运行 tools/system_deps.sh install browser（Debian 包 chromium）")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def screenshots(built_book) -> Path:
    folder = built_book.root / "_build" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Visit:
    """打开一页并记下它出的所有问题（控制台错误、失败的请求、外部请求）。"""

    def __init__(self, browser, site: str, path: str, color_scheme: str = "light"):
        self.site = site
        self.problems: list[str] = []
        self.context = browser.new_context(viewport=VIEWPORT, color_scheme=color_scheme,
                                           locale="zh-CN", service_workers="block")
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        page = self.page
        page.on("console", lambda m: m.type == "error" and self.problems.append(
            f"控制台错误: {m.text} @ {m.location.get('url', '')}"))
        page.on("pageerror", lambda e: self.problems.append(f"脚本异常: {e}"))
        page.on("requestfailed", lambda r: self._local(r.url) and self.problems.append(
            f"请求失败: {r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and self.problems.append(
            f"HTTP {r.status}: {r.url}"))
        page.goto(site + path, wait_until="load")
        page.wait_for_load_state("networkidle")

    def _local(self, url: str) -> bool:
        return url.startswith(self.site)

    def _route(self, route):
        url = route.request.url
        if self._local(url) or urlsplit(url).scheme in ("data", "blob", "about"):
            route.continue_()
        else:
            self.problems.append(f"请求了其他主机: {url}")
            route.abort()

    def close(self):
        self.context.close()


def page_path(docname: str) -> str:
    return quote(f"{docname}.html")


def shot_name(docname: str, suffix: str = "") -> str:
    return docname.replace("/", "__") + suffix + ".png"


# 在页面里运行的检查（JavaScript），返回问题列表 ------------------------------------------------

WAIT_FOR_IMAGES = """async () => {
  const imgs = [...document.querySelectorAll('img')];
  imgs.forEach(img => { img.loading = 'eager'; });
  await Promise.all(imgs.map(img => img.complete ? null :
      new Promise(done => { img.addEventListener('load', done); img.addEventListener('error', done); })));
}"""

WAIT_FOR_MATH = """async () => {
  if (!document.querySelector('.math')) return 'no-math';
  for (let i = 0; i < 200 && !(window.MathJax && MathJax.startup && MathJax.startup.promise); i++)
    await new Promise(r => setTimeout(r, 50));
  if (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) return 'no-mathjax';
  await MathJax.startup.promise;
  return 'typeset';
}"""

CHECK_PAGE = r"""() => {
  const problems = [];
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  if (document.documentElement.lang !== 'zh-CN')
    problems.push(`<html lang="${document.documentElement.lang}">，应为 zh-CN`);
  if (!document.title.includes('Attention 机制与 Transformer Block'))
    problems.push(`页面标题没有书名: ${document.title}`);

  // 图：都加载出来了，正文里的图都有像样的替代文字
  for (const img of document.querySelectorAll('img')) {
    const name = img.getAttribute('src');
    if (!(img.complete && img.naturalWidth > 0)) problems.push(`图没有加载出来: ${name}`);
  }
  for (const img of article.querySelectorAll('img')) {
    const alt = (img.getAttribute('alt') || '').trim();
    const src = img.getAttribute('src') || '';
    if (!alt) problems.push(`图没有替代文字(alt): ${src}`);
    else if (/\.(png|svg|jpe?g|gif|webp)$/i.test(alt) || src.endsWith(alt))
      problems.push(`图的替代文字只是文件名: ${src} alt="${alt}"`);
  }

  // 公式：每个 .math 都已由 MathJax 排成 mjx-container，没有报错
  const maths = [...article.querySelectorAll('.math')];
  const raw = maths.filter(m => !m.querySelector('mjx-container'));
  if (raw.length) problems.push(`${raw.length} 处公式没有被 MathJax 排版，例如: ${raw[0].textContent.slice(0, 60)}`);
  const errors = article.querySelectorAll('mjx-merror, [data-mjx-error]');
  if (errors.length) problems.push(`MathJax 报错: ${errors[0].getAttribute('data-mjx-error') || errors[0].textContent}`);

  // 正文文字（代码、公式之外）里不该残留 TeX 定界符
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT, {
    acceptNode: n => n.parentElement.closest('pre, code, script, style, textarea, mjx-container, .math, .highlight')
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT });
  for (let n; (n = walker.nextNode());) {
    const m = n.textContent.match(/\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\\frac|\\sqrt|\\mathrm/);
    if (m) { problems.push(`正文里有未排版的 TeX "${m[0]}": ${n.textContent.trim().slice(0, 80)}`); break; }
  }

  // 标题层级：从 h1 开始，往下不跳级
  const heads = [...article.querySelectorAll('h1, h2, h3, h4, h5, h6')];
  if (!heads.length || heads[0].tagName !== 'H1') problems.push(`正文的第一个标题不是 h1: ${heads[0] && heads[0].tagName}`);
  const h1s = heads.filter(h => h.tagName === 'H1');
  if (h1s.length !== 1) problems.push(`正文应恰有一个 h1，实际 ${h1s.length}`);
  for (let i = 1; i < heads.length; i++) {
    const prev = +heads[i - 1].tagName[1], cur = +heads[i].tagName[1];
    if (cur > prev + 1) problems.push(`标题跳级: ${heads[i - 1].tagName}「${heads[i - 1].textContent.trim()}」之后是 ${heads[i].tagName}「${heads[i].textContent.trim()}」`);
  }
  return problems;
}"""

CHECK_DARK = r"""() => {
  const problems = [];
  if (document.documentElement.dataset.theme !== 'dark')
    problems.push(`没有进入深色模式: data-theme=${document.documentElement.dataset.theme}`);
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  for (const img of article.querySelectorAll('img')) {
    const bg = getComputedStyle(img).backgroundColor;
    if (bg !== 'rgb(255, 255, 255)') problems.push(`深色模式下图的底色不是白色(${bg}): ${img.getAttribute('src')}`);
  }
  return problems;
}"""


# ---- 逐页检查 -------------------------------------------------------------------------------

@pytest.mark.parametrize("docname", toc_docnames())
def test_page_in_light_mode(browser, site, screenshots, docname):
    visit = Visit(browser, site, page_path(docname))
    try:
        page = visit.page
        page.evaluate(WAIT_FOR_IMAGES)
        math = page.evaluate(WAIT_FOR_MATH)
        if math == "no-mathjax":
            visit.problems.append("页面有公式，但 MathJax 没有加载")
        visit.problems += page.evaluate(CHECK_PAGE)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(screenshots / shot_name(docname)), full_page=True)
    finally:
        visit.close()
    assert not visit.problems, f"{docname}:\n" + "\n".join(visit.problems)


@pytest.mark.parametrize("docname", toc_docnames())
def test_page_in_dark_mode(browser, site, screenshots, docname):
    visit = Visit(browser, site, page_path(docname), color_scheme="dark")
    try:
        page = visit.page
        page.evaluate(WAIT_FOR_IMAGES)
        page.evaluate(WAIT_FOR_MATH)
        visit.problems += page.evaluate(CHECK_DARK)
        page.screenshot(path=str(screenshots / shot_name(docname, "-dark")), full_page=True)
    finally:
        visit.close()
    assert not visit.problems, f"{docname}（深色）:\n" + "\n".join(visit.problems)


def test_homework_solutions_open_on_click(browser, site, screenshots):
    """作业页的答案（sphinx-exercise 的 solution，:class: dropdown）默认收起，点标题才展开。"""
    visit = Visit(browser, site, page_path(HOMEWORK))
    try:
        page = visit.page
        solutions = page.locator("article .solution.dropdown")
        count = solutions.count()
        assert count >= 1, "作业页上没有折叠的答案（solution + :class: dropdown）"
        for i in range(count):
            solution = solutions.nth(i)
            body = solution.locator(":scope > :not(.admonition-title)").first
            assert not body.is_visible(), f"第 {i + 1} 个答案一打开页面就是展开的"
            solution.locator(".admonition-title").click()
            body.wait_for(state="visible", timeout=5000)
        page.screenshot(path=str(screenshots / shot_name(HOMEWORK, "-solutions-open")), full_page=True)
    finally:
        visit.close()
    assert not visit.problems, "\n".join(visit.problems)


@pytest.mark.parametrize("query, expected", [
    ("因果遮蔽", "book/s3_causal_mask.html"),
    ("多头注意力", "book/s4_multi_head.html"),
])
def test_search_page_finds_chinese_terms(browser, site, screenshots, query, expected):
    visit = Visit(browser, site, f"search.html?q={quote(query)}")
    try:
        page = visit.page
        try:
            page.wait_for_selector("#search-results ul.search li a", timeout=15000)
        except PlaywrightTimeout:
            page.screenshot(path=str(screenshots / f"search-{expected.split('/')[-1][:-5]}.png"))
            pytest.fail(f"搜索“{query}”15 秒内没有任何结果（中文检索索引里没有这个词？）\n"
                        + "\n".join(visit.problems))
        page.wait_for_function(
            "() => !document.querySelector('#search-results .search-summary') || "
            "document.querySelector('#search-results .search-summary').textContent.trim() !== ''",
            timeout=15000)
        hrefs = page.eval_on_selector_all("#search-results ul.search li a",
                                          "els => els.map(a => a.getAttribute('href'))")
        page.screenshot(path=str(screenshots / f"search-{expected.split('/')[-1][:-5]}.png"))
    finally:
        visit.close()
    assert any(h.split("?")[0].split("#")[0] == expected for h in hrefs), \
        f"搜索“{query}”没有找到 {expected}，结果: {hrefs}"
    assert not visit.problems, "\n".join(visit.problems)


def test_search_box_placeholder_is_chinese_in_browser(browser, site):
    visit = Visit(browser, site, page_path("book/index"))
    try:
        placeholders = visit.page.eval_on_selector_all(
            "input[name=q]", "els => els.map(e => e.getAttribute('placeholder'))")
    finally:
        visit.close()
    assert placeholders and all(re.search(r"[\u4e00-\u9fff]", p or "") for p in placeholders), placeholders
