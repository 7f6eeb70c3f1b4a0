"""在真实浏览器（Debian 的 Chromium，经 Playwright 驱动）里逐页打开整本书的网站。

网站由本机 127.0.0.1 上的一个 http.server 线程提供；发往其他主机的请求一律被拦下并记为失败，
所以这些测试同时检验“离线可读”。每一页（目录里的全部页面）都要做到：
没有控制台错误、没有失败的请求、没有请求其他主机、每张图都加载出来且有替代文字、
公式在构建时已由 KaTeX 排好（没有残留的 $$ 或 \\( \\)，页面不运行公式脚本）、标题层级不跳级，深色模式下图仍是白底。
另外检查：作业页的答案折叠块点开才显示；搜索页用中文搜得到对应的页面。
每页在浅色、深色模式下各截一张整页图，供人查看：只在设了 BOOK_SCREENSHOTS 时截（make screenshots），
存到 _build/screenshots/（见 support.screenshots.Screenshots）。

Chromium 来自 Debian（tools/system_deps.sh install browser），按 PATH 查找；绝不运行 `playwright install`。
无障碍检查用 axe-core（PyPI 包 axe-playwright-python 自带，离线），逐页、浅色与深色各一遍。
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
import yaml
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from support.book import REPO, toc_docnames
from support.chromium import CHROMIUM, CHROMIUM_ARGS, Tab, VIEWPORT, settle
from support.screenshots import Screenshots, screenshots_wanted
from support.pagekit import allowed_latin_words, english_words, load_path, visible_text

pytestmark = [pytest.mark.browser, pytest.mark.book]

HOMEWORK = "book/homework"


class Visit:
    """在标签页（support.chromium.Tab）里打开一页，记下它出的所有问题（控制台错误、失败的请求、外部请求）。"""

    def __init__(self, tab, site: str, path: str, color_scheme: str = "light"):
        self.site, self.tab = site, tab
        self.problems: list[str] = []
        self.page = tab.visit(site + path, color_scheme, self._route, {
            "console": lambda m: m.type == "error" and self.problems.append(
                f"控制台错误: {m.text} @ {m.location.get('url', '')}"),
            "pageerror": lambda e: self.problems.append(f"脚本异常: {e}"),
            "requestfailed": lambda r: self._local(r.url) and self.problems.append(
                f"请求失败: {r.url} ({r.failure})"),
            "response": lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status}: {r.url}"),
        })
        self.page.wait_for_load_state("networkidle")
        settle(self.page)

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
        self.tab.leave()


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

WAIT_FOR_MATH = """() => {
  // 公式在构建时已排好（book/_ext/book_math.py）：页面里不该有公式脚本在跑
  if (window.MathJax || window.katex || window.renderMathInElement) return 'math-script';
  return document.querySelector('.math') ? 'prerendered' : 'no-math';
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

  // 公式：每个 .math 都已在构建时由 KaTeX 排好（带 MathML），没有报错，而且看得见（有宽有高）
  const maths = [...article.querySelectorAll('.math')];
  const raw = maths.filter(m => !m.querySelector('.katex .katex-html') || !m.querySelector('.katex-mathml math'));
  if (raw.length) problems.push(`${raw.length} 处公式没有排好，例如: ${raw[0].textContent.slice(0, 60)}`);
  const errors = article.querySelectorAll('.katex-error');
  if (errors.length) problems.push(`KaTeX 报错: ${errors[0].getAttribute('title') || errors[0].textContent}`);
  const invisible = maths.filter(m => { const r = m.querySelector('.katex-html').getBoundingClientRect();
                                       return !(r.width > 0 && r.height > 0); });
  if (invisible.length && !raw.length) problems.push(`${invisible.length} 处公式排好了却看不见`);

  // 正文文字（代码、公式之外）里不该残留 TeX 定界符
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT, {
    acceptNode: n => n.parentElement.closest('pre, code, script, style, textarea, .katex, .math, .highlight')
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


# 读者看得到的界面文字（脚本运行之后）：正文之外的文字，各处的提示属性；正文里只算按钮和标题锚点。
# 标明了另一种语言的元素（lang 与页面不同：到另一种语言版本的链接）不算
INTERFACE_STRINGS = r"""() => {
  const article = document.querySelector('article.bd-article');
  const attrs = ['title', 'aria-label', 'placeholder', 'alt', 'data-tooltip', 'data-bs-original-title', 'data-bs-title'];
  const pageLang = document.documentElement.lang;
  const foreign = el => { const l = el.closest('[lang]'); return l && l !== document.documentElement && l.lang !== pageLang; };
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    if (foreign(el)) continue;
    if (article && article.contains(el) && !el.closest('button, .headerlink')) continue;
    for (const a of attrs) { const v = el.getAttribute(a); if (v && v.trim()) out.push(v.trim()); }
  }
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode());) {
    const p = n.parentElement;
    if (!p || p.closest('script, style, mjx-container') || foreign(p)) continue;  // 目录里标题中的公式是内容，不是界面
    if (article && article.contains(p) && !p.closest('button')) continue;
    if (n.textContent.trim()) out.push(n.textContent.trim());
  }
  return out;
}"""


@functools.cache
def allowed_words() -> frozenset[str]:
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    return frozenset(allowed_latin_words(REPO, toc_docnames(), f"{config['title']} {config['author']}"))


def english_interface(page) -> list[str]:
    found = english_words(page.evaluate(INTERFACE_STRINGS), set(allowed_words()))
    return [f"界面上的英文词 “{word}”：{where}" for word, where in found.items()]


# ---- 逐页检查 -------------------------------------------------------------------------------
# 每页在浅色、深色下各查一遍（axe 一遍就要几秒，几乎全在浏览器里单线程地算）。两个线程各开一个 Chromium
# （Playwright 的同步接口每个线程一个实例）同时查，先查最长的页；每个测试只报告它那一页、那一种模式的问题。

def check_light(tab, site, screenshots, docname) -> list[str]:
    visit = Visit(tab, site, page_path(docname))
    try:
        page = visit.page
        page.evaluate(WAIT_FOR_IMAGES)
        math = page.evaluate(WAIT_FOR_MATH)
        if math == "math-script":
            visit.problems.append("页面在运行公式脚本（MathJax / KaTeX），公式本该在构建时排好")
        visit.problems += page.evaluate(CHECK_PAGE)
        visit.problems += english_interface(page)
        page.wait_for_load_state("networkidle")
        screenshots.page(page, shot_name(docname))
        return list(visit.problems) + axe_violations(page)  # axe 之后的请求不算（见 axe_violations）
    finally:
        visit.close()


def check_dark(tab, site, screenshots, docname) -> list[str]:
    visit = Visit(tab, site, page_path(docname), color_scheme="dark")
    try:
        page = visit.page
        page.evaluate(WAIT_FOR_IMAGES)
        page.evaluate(WAIT_FOR_MATH)
        visit.problems += page.evaluate(CHECK_DARK)
        visit.problems += english_interface(page)
        screenshots.page(page, shot_name(docname, "-dark"))
        return list(visit.problems) + axe_violations(page)
    finally:
        visit.close()


CHECKS = {"light": check_light, "dark": check_dark}


@pytest.fixture(scope="module")
def page_reports(site, screenshots, built_book) -> dict[tuple[str, str], list[str]]:
    """{(页面, 模式): 问题列表}。两个线程各用一个 Chromium，从一个队列里领活，最长的页先查。"""
    import queue
    import threading

    from playwright.sync_api import sync_playwright

    if not CHROMIUM:
        pytest.fail("PATH 里没有 chromium：请先运行 tools/system_deps.sh install browser（Debian 包 chromium）")
    jobs: queue.Queue = queue.Queue()
    size = {d: (built_book.html / page_path(d)).stat().st_size for d in toc_docnames()}
    for docname in sorted(size, key=size.get, reverse=True):
        for scheme in CHECKS:
            jobs.put((docname, scheme))
    reports: dict[tuple[str, str], list[str]] = {}

    def work() -> None:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            tab = Tab(chromium)  # 这个线程的各页依次在同一个标签页里打开（见 support.chromium.Tab）
            try:
                while True:
                    try:
                        docname, scheme = jobs.get_nowait()
                    except queue.Empty:
                        return
                    try:
                        reports[docname, scheme] = CHECKS[scheme](tab, site, screenshots, docname)
                    except Exception as exc:  # noqa: BLE001  检查本身出错：记在这一页上，别的页照查
                        reports[docname, scheme] = [f"检查没能做完：{type(exc).__name__}: {exc}"]
            finally:
                tab.close()
                chromium.close()

    threads = [threading.Thread(target=work, name=f"browser-{i}") for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return reports


@pytest.mark.parametrize("docname", toc_docnames())
def test_page_in_light_mode(page_reports, docname):
    problems = page_reports[docname, "light"]
    assert not problems, f"{docname}:\n" + "\n".join(problems)


@pytest.mark.parametrize("docname", toc_docnames())
def test_page_in_dark_mode(page_reports, docname):
    problems = page_reports[docname, "dark"]
    assert not problems, f"{docname}（深色）:\n" + "\n".join(problems)


def test_homework_solutions_open_on_click(tab, site, screenshots):
    """作业页的答案（sphinx-exercise 的 solution，:class: dropdown）默认收起，点标题才展开。"""
    visit = Visit(tab, site, page_path(HOMEWORK))
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
        screenshots.page(page, shot_name(HOMEWORK, "-solutions-open"))
    finally:
        visit.close()
    assert not visit.problems, "\n".join(visit.problems)


def test_screenshots_are_taken_only_when_asked(tab, site, tmp_path):
    """make test 不截图（BOOK_SCREENSHOTS 没有设，或设为 0）；打开时截的是整页（比一屏高），不只是第一屏。"""
    assert not screenshots_wanted({}) and not screenshots_wanted({"BOOK_SCREENSHOTS": "0"})
    assert screenshots_wanted({"BOOK_SCREENSHOTS": "1"})
    visit = Visit(tab, site, page_path("book/changelog"))
    try:
        Screenshots(tmp_path / "off", enabled=False).page(visit.page, "changelog.png")
        Screenshots(tmp_path / "on", enabled=True).page(visit.page, "changelog.png")
        Screenshots(tmp_path / "on", enabled=True).element(visit.page.locator("article h1"), "title.png")
        # Playwright 的整页截图取这几个高度里最大的一个
        height = visit.page.evaluate("Math.max(document.body.scrollHeight, document.body.offsetHeight,"
                                     " document.documentElement.scrollHeight, document.documentElement.offsetHeight,"
                                     " document.documentElement.clientHeight)")
    finally:
        visit.close()
    assert not (tmp_path / "off").exists()
    png = (tmp_path / "on" / "changelog.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    shot_height = int.from_bytes(png[20:24], "big")  # PNG 的 IHDR：宽、高各 4 字节，大端
    assert height > VIEWPORT["height"] and shot_height == height, (shot_height, height)
    title = (tmp_path / "on" / "title.png").read_bytes()
    assert 0 < int.from_bytes(title[20:24], "big") < VIEWPORT["height"] / 2


@pytest.mark.parametrize("query, expected", [
    ("因果遮蔽", "book/s3_causal_mask.html"),
    ("多头注意力", "book/s4_multi_head.html"),
])
def test_search_page_finds_chinese_terms(tab, site, screenshots, built_book, query, expected):
    """搜索页用中文搜得到讲这个词的页面；每条结果的摘要都是那一页正文里的一段。"""
    visit = Visit(tab, site, f"search.html?q={quote(query)}")
    try:
        page = visit.page
        try:
            page.wait_for_selector("#search-results ul.search li a", timeout=15000)
        except PlaywrightTimeout:
            screenshots.page(page, f"search-{expected.split('/')[-1][:-5]}.png", full_page=False, always=True)
            pytest.fail(f"搜索“{query}”15 秒内没有任何结果（中文检索索引里没有这个词？）\n"
                        + "\n".join(visit.problems))
        page.wait_for_function(
            "() => !document.querySelector('#search-results .search-summary') || "
            "document.querySelector('#search-results .search-summary').textContent.trim() !== ''",
            timeout=15000)
        hrefs = page.eval_on_selector_all("#search-results ul.search li a",
                                          "els => els.map(a => a.getAttribute('href'))")
        # 每条结果的摘要（p.context）由 searchtools.js 取回那一页之后再补上
        page.wait_for_function("() => [...document.querySelectorAll('#search-results ul.search li')]"
                               ".every(li => li.querySelector('p.context'))", timeout=15000)
        snippets = page.eval_on_selector_all(
            "#search-results ul.search li",
            "lis => lis.map(li => [li.querySelector('a').getAttribute('href'), li.querySelector('p.context').textContent])")
        screenshots.page(page, f"search-{expected.split('/')[-1][:-5]}.png", full_page=False)
    finally:
        visit.close()
    assert any(h.split("?")[0].split("#")[0] == expected for h in hrefs), \
        f"搜索“{query}”没有找到 {expected}，结果: {hrefs}"
    assert not visit.problems, "\n".join(visit.problems)
    for href, snippet in snippets:
        assert_snippet_is_page_text(built_book.html / href.split("?")[0].split("#")[0], snippet)


def squash(text: str) -> str:
    """去掉空白和 “#”（Sphinx 取摘要前删掉标题旁的 # 锚点，正文读法里还留着它）。"""
    return re.sub(r"[\s#]+", "", text)


def assert_snippet_is_page_text(path: Path, snippet: str):
    """搜索结果的摘要是那一页正文（<article>）里连续的一段，而不是以页首按钮、打印目录开头（“.pdf 因果遮蔽 目录 …”）。"""
    body = squash(snippet.strip().removeprefix("...").removesuffix("..."))
    assert body, f"{path.name} 的搜索摘要是空的"
    assert body in squash(visible_text(path)), f"{path.name} 的搜索摘要不是正文里的一段：{snippet[:120]!r}"


def test_snippet_check_rejects_header_chrome(built_book):
    """上面的摘要检查确实会失败：以主题页首按钮与打印目录开头的摘要（改之前的样子）不是正文。"""
    page = built_book.html / "book" / "s3_causal_mask.html"
    start = load_path(page).text.strip()[:60]
    with pytest.raises(AssertionError):
        assert_snippet_is_page_text(page, f".md .pdf 因果遮蔽 目录 {start}")


def test_search_box_placeholder_is_chinese_in_browser(tab, site):
    visit = Visit(tab, site, page_path("book/index"))
    try:
        placeholders = visit.page.eval_on_selector_all(
            "input[name=q]", "els => els.map(e => e.getAttribute('placeholder'))")
    finally:
        visit.close()
    assert placeholders and all(re.search(r"[\u4e00-\u9fff]", p or "") for p in placeholders), placeholders


# ---- 无障碍（axe-core）--------------------------------------------------------------------------

BLOCKING = ("serious", "critical")
# 已经修好、不许再出现的：正文之外的内容不在任何地标里（主题的书名链接，见 book/_ext/templates/navbar-logo.html）
PINNED_RULES = ("region",)


def axe_violations(page) -> list[str]:
    """axe-core 找到的 serious/critical 问题与钉住的规则。先取完页面自己的问题再调用它：axe 预读样式表时
    把 @import "../basic.css" 按页面地址解析，自己请求出一个 404。"""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page).response
    return [f"[{v['impact']}] {v['id']}（{len(v['nodes'])} 处）: {v['help']} — 例如 {v['nodes'][0]['html'][:160]}"
            for v in results["violations"] if v["impact"] in BLOCKING or v["id"] in PINNED_RULES]


@pytest.mark.parametrize("color_scheme", ["light", "dark"])
def test_axe_finds_no_serious_or_critical_violations(tab, site, built_site, color_scheme):
    """网站上目录之外的每一页（搜索页、索引页、根目录跳转后的首页）在 axe-core 下：0 个 serious、0 个 critical，
    也没有 region（内容在地标之外）。目录里的页面在 test_page_in_light_mode / test_page_in_dark_mode 里，
    趁同一次打开查过。axe-core 随 axe-playwright-python 一起装好，离线运行。"""
    html = built_site.html
    pages = sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                   if "_static" not in p.parts and "reports" not in p.parts)
    in_toc = {f"{d}.html" for d in toc_docnames()}
    assert in_toc <= set(pages), sorted(in_toc - set(pages))
    pages = [p for p in pages if p not in in_toc]
    assert {"search.html", "genindex.html", "index.html"} <= set(pages), pages
    found = {}
    for path in pages:
        visit = Visit(tab, site, quote(path), color_scheme=color_scheme)
        try:
            visit.page.evaluate(WAIT_FOR_MATH)
            # 顺带：这些页面（含索引页、根目录跳转页）也没有控制台错误、失败或外部请求。在 axe 运行之前取：
            # axe 预读样式表时把 @import "../basic.css" 按页面地址解析，自己请求出一个 404
            # 跳转页（根目录 index.html）不算：跳走时它自己的 favicon 请求被浏览器取消（ERR_ABORTED）
            redirected = visit.page.url.split("?")[0].split("#")[0] != site + quote(path)
            violations = [] if redirected else list(visit.problems)
            violations += axe_violations(visit.page)
        finally:
            visit.close()
        if violations:
            found[path] = violations
    assert not found, f"axe-core（{color_scheme}）:\n" + "\n".join(
        f"{path}:\n  " + "\n  ".join(v) for path, v in found.items())


def test_a_reused_tab_carries_nothing_from_one_visit_to_the_next(tab, site):
    """各次访问共用一个标签页（support.chromium.Tab）：上一次访问存下的 localStorage、sessionStorage、cookie（包括页面
    卸载时才写的），它离开时还没回来的请求（这里是一个 404）和它的颜色模式，都不能出现在下一次访问里。"""
    first = Visit(tab, site, page_path("book/index"), color_scheme="dark")
    try:
        first.page.evaluate("""() => {
            localStorage.setItem('left-behind', '1'); sessionStorage.setItem('left-behind', '1');
            document.cookie = 'left_behind=1; path=/';
            fetch('no-such-file-left-behind.txt');  // 离开时还没回来
            // 卸载时才写的（主题就这样记下侧栏的滚动位置）
            addEventListener('beforeunload', () => sessionStorage.setItem('left-at-unload', '1'));
            addEventListener('pagehide', () => localStorage.setItem('left-at-unload', '1'));
        }""")
    finally:
        first.close()
    second = Visit(tab, site, page_path("book/index"))
    try:
        left = second.page.evaluate("""() => [localStorage.getItem('left-behind'),
            sessionStorage.getItem('left-behind'), document.cookie, document.documentElement.dataset.theme,
            sessionStorage.getItem('left-at-unload'), localStorage.getItem('left-at-unload')]""")
        problems = list(second.problems)
    finally:
        second.close()
    assert left == [None, None, "", "light", None, None]
    assert problems == []
    # 对照：同一个 404 在发出它的那次访问里是会被记下的
    third = Visit(tab, site, page_path("book/index"))
    try:
        third.page.evaluate("() => fetch('no-such-file-left-behind.txt')")
        third.page.wait_for_load_state("networkidle")
        problems = list(third.problems)
    finally:
        third.close()
    assert any("no-such-file-left-behind.txt" in p for p in problems), problems


def test_checks_start_only_after_theme_and_transitions_settle(tab, site):
    """深色模式下，主题脚本在加载后才把 auto 换成 dark，导航栏按钮随之有 0.15 s 的颜色过渡。
    Visit 返回时，主题必须已定、过渡必须已完：否则 axe 和截图看到的是过渡半路的颜色。"""
    visit = Visit(tab, site, page_path("book/index"), color_scheme="dark")
    try:
        theme, running = visit.page.evaluate("""() => [document.documentElement.dataset.theme,
            document.getAnimations().filter(a => a instanceof CSSTransition && a.playState === 'running').length]""")
    finally:
        visit.close()
    assert (theme, running) == ("dark", 0)
