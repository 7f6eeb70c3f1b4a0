"""网站上的六张交互图，在真实浏览器（Debian 的 Chromium，经 Playwright 驱动）里用鼠标和键盘操作。

每张图：画得出来、控件有中文标签、拨动控件后读数变成 minigpt 算出的值（测试自己调用 minigpt，
见 tests/support/interactive_cases.py）、没有控制台错误、没有请求离开本站；图号和图注与静态版共用；
深色模式下文字换成浅色；没有 JavaScript 时显示静态图。设了 BOOK_SCREENSHOTS 时（make screenshots），
每张图在浅色、深色模式下各截一张图到 _build/screenshots/interactive-*.png，供人查看。

Chromium 来自 Debian（tools/system_deps.sh install browser）；绝不运行 `playwright install`。
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from support import interactive_cases as cases
from support.book import REPO
from support.chromium import Tab, settle

pytestmark = [pytest.mark.browser, pytest.mark.book]

# data-figure → (页面, 图的 :name:, 页面上 glue 这张图的名字)
FIGURES = {
    "s2-score-weight": ("book/s2_scaled_dot_product", "fig-s2-heatmap", "s2_fig_heatmap"),
    "s2-softmax-saturation": ("book/s2_scaled_dot_product", "fig-s2-saturation",
                              "s2_fig_saturation"),
    "s3-causal-mask": ("book/s3_causal_mask", "fig-s3-before-after", "s3_fig_before_after"),
    "s4-heads": ("book/s4_multi_head", "fig-s4-heads", "s4_fig_heads"),
    "ap-path-length": ("book/appendix_rnn", "fig-ap-first-vs-length", "ap_fig_first_vs_length"),
    "s7-trained-heads": ("book/s7_trained_heads", "fig-s7-explorer", "s7_fig_explorer"),
}

READOUT = """(name) => {
  const g = document.querySelector(`[data-figure="${name}"] .readout_marks`);
  if (!g) return null;
  return [...g.querySelectorAll('text')].flatMap(t => {
    const spans = [...t.querySelectorAll('tspan')];
    return spans.length ? spans.map(s => s.textContent) : [t.textContent];
  });
}"""


@pytest.fixture(scope="module")
def tab_without_javascript(browser) -> Tab:
    """关掉 JavaScript 的标签页（JavaScript 开关只能按浏览器上下文设）。"""
    tab = Tab(browser, javascript=False)
    yield tab
    tab.close()


class Figure:
    """在标签页（support.chromium.Tab）里打开交互图所在的页面，等它画好；记下控制台错误、失败的请求和发往其他主机的请求。"""

    def __init__(self, tab, site: str, name: str, color_scheme: str = "light"):
        self.site, self.name, self.tab = site, name, tab
        self.problems: list[str] = []
        self.requests: list[str] = []
        javascript = tab.javascript
        page = self.page = tab.visit(site + FIGURES[name][0] + ".html", color_scheme, self._route, {
            "console": lambda m: m.type in ("error", "warning") and self.problems.append(
                f"控制台{m.type}: {m.text}"),
            "pageerror": lambda e: self.problems.append(f"脚本异常: {e}"),
            # 关掉 JavaScript 时，浏览器会取消主题预加载（<link rel=preload>）的脚本：那不算问题
            "requestfailed": lambda r: (javascript or r.resource_type != "script")
            and self.problems.append(f"请求失败: {r.url}"),
            "response": lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status}: {r.url}"),
        })
        self.root = page.locator(f'[data-figure="{name}"]')
        # 库等读者翻到图时才加载（book_lazy.js）：先翻到图，再等它画好
        self.root.scroll_into_view_if_needed()
        if javascript:
            page.wait_for_selector(f'[data-figure="{name}"][data-ready]', timeout=20000)
            assert self.root.get_attribute("data-ready") == "true", self.problems
            settle(page)
        self.root.scroll_into_view_if_needed()

    def _route(self, route):
        url = route.request.url
        self.requests.append(url)
        if url.startswith(self.site) or urlsplit(url).scheme in ("data", "blob", "about"):
            route.continue_()
        else:
            self.problems.append(f"请求了其他主机: {url}")
            route.abort()

    def readout(self) -> list[str]:
        return self.page.evaluate(READOUT, self.name)

    def wait_readout(self, expected: list[str]) -> list[str]:
        """读数要变成 expected（Vega 异步重绘，最多等 3 秒）；返回最后读到的。"""
        try:
            self.page.wait_for_function(f"(e) => JSON.stringify(({READOUT})('{self.name}'))"
                                        " === JSON.stringify(e)", arg=expected, timeout=3000)
        except Exception:  # noqa: BLE001 - 超时就把实际读数交给断言去报告
            pass
        return self.readout()

    def shot(self, screenshots, suffix: str, name: str | None = None) -> None:
        name = name or self.name
        screenshots.element(self.page.locator(f'figure:has([data-figure="{name}"])'),
                            f"interactive-{name}{suffix}.png")

    def close(self) -> list[str]:
        self.tab.leave()
        return self.problems


# ---------------------------------------------------------------- 每张图都画得出来


# 只读的检查（画出来了没有、说明与控件、图号图注、加载了什么、深色模式、没有 JavaScript）不碰控件，
# 所以有交互图的每一页在每种情形下只打开一次：第 2 节的两张图在同一页上。拨动控件的测试各自打开它的图。

def each_page(tab, site, read, color_scheme: str = "light") -> dict[str, dict]:
    """打开有交互图的每一页一次，对这一页上的每张图调用 read(figure, name)（figure 是这一页的 Figure）。
    返回 {图名: read 的结果，外加这一页的 "problems" 和 "requests"}。读一张图时出错，这张图是 {"error": …}，
    同一页的别的图照读；页面打不开（或它的第一张图没有画好）时，这一页的每张图都是 {"error": …}。
    错误由用到它的测试报告。"""
    seen: dict[str, dict] = {}
    for docname in dict.fromkeys(page for page, _, _ in FIGURES.values()):
        names = [name for name, (page, _, _) in FIGURES.items() if page == docname]
        found: dict[str, dict] = {}
        fig = None
        try:
            fig = Figure(tab, site, names[0], color_scheme)
            for name in names:
                try:
                    found[name] = read(fig, name)
                except Exception as exc:  # noqa: BLE001
                    found[name] = {"error": f"{name}：读取没能做完：{type(exc).__name__}: {exc}"}
        except Exception as exc:  # noqa: BLE001
            found = {name: {"error": f"{docname}（{names[0]}）打开时出错：{type(exc).__name__}: {exc}"}
                     for name in names}
        finally:
            problems = fig.close() if fig else []
        for name in names:
            seen[name] = {**found[name], "problems": problems, "requests": list(fig.requests) if fig else []}
    return seen


def _checked(seen: dict) -> dict:
    assert "error" not in seen, seen.get("error")
    return seen


def read_light(screenshots):
    def read(fig, name: str) -> dict:
        page = fig.page
        page.wait_for_selector(f'[data-figure="{name}"][data-ready]', timeout=20000)
        root = page.locator(f'[data-figure="{name}"]')
        chart = root.locator(".interactive-figure-chart")
        controls = root.locator(".vega-bindings input, .vega-bindings select")
        figure_id, number = page.evaluate(
            """(name) => { const f = document.querySelector(`[data-figure="${name}"]`).closest('figure');
                 return [f && f.id, f && f.querySelector('.caption-number').textContent.trim()]; }""",
            name)
        fig.shot(screenshots, "", name)
        return {
            "ready": root.get_attribute("data-ready"),
            "svgs": chart.locator("svg").count(),
            "svg_height": chart.locator("svg").first.bounding_box()["height"] if chart.locator("svg").count() else 0,
            "static_visible": root.locator("img.interactive-figure-static").is_visible(),
            # 给读屏软件的说明（vega-embed 把图表说明的 description 写在绘图区的 aria-label 上）
            "chart_label": chart.get_attribute("aria-label") or "",
            "control_names": root.locator(".vega-bind-name").all_inner_texts(),
            "tabindex": [controls.nth(i).get_attribute("tabindex") for i in range(controls.count())],
            "figure_id": figure_id, "number": number,
            "cited": page.locator(f'article a[href="#{figure_id}"]').count(),
            "reader_labels": root.evaluate("""(fig) => {
                const chart = fig.querySelector('.interactive-figure-chart');
                return [chart, ...chart.querySelectorAll('[aria-roledescription], [aria-label]')]
                  .flatMap(e => [e.getAttribute('aria-roledescription'), e.getAttribute('aria-label')])
                  .filter(Boolean);
            }"""),
            "scripts": page.eval_on_selector_all('script[src*="interactive/"]',
                                                 "els => els.map(e => [e.type, e.src])"),
            "specs": page.eval_on_selector_all("script.interactive-figure-spec",
                                               "els => els.map(e => e.textContent)"),
        }
    return read


@pytest.fixture(scope="module")
def in_light(tab, site, screenshots) -> dict[str, dict]:
    """浅色模式下每张图只读得到的一切（见 each_page）。"""
    return each_page(tab, site, read_light(screenshots))


@pytest.mark.parametrize("name", list(FIGURES))
def test_widget_renders_with_chinese_controls_and_shares_number_and_caption(in_light, name):
    seen = _checked(in_light[name])
    assert seen["ready"] == "true", seen["problems"]
    assert seen["svgs"] == 1 and seen["svg_height"] > 100
    assert not seen["static_visible"], "画好后静态图应隐藏"
    assert re.search(r"[\u4e00-\u9fff]", seen["chart_label"]), f"SVG 没有中文说明：{seen['chart_label']!r}"
    # 控件：每个都有中文的名字，都能用 Tab 键到达
    names = seen["control_names"]
    assert names and all(re.search(r"[\u4e00-\u9fff]|query|key|d_k|dₖ", n) for n in names)
    assert seen["tabindex"] and all(t in (None, "0") for t in seen["tabindex"])
    # 图号与图注：交互图就在静态版的 {glue:figure} 里（同一个 id、同一个图注）
    assert seen["figure_id"] == FIGURES[name][1]
    assert re.fullmatch(r"图 (\d+|A)(\.\d+)?", seen["number"]), seen["number"]
    assert seen["cited"] >= 1, "正文没有引用这张图"
    assert not seen["problems"], "\n".join(seen["problems"])


# ---------------------------------------------------------------- 拨动每个控件


def test_score_weight_cells_by_keyboard_and_mouse(tab, site, screenshots):
    t = cases.toy()
    labels = t.labels

    def expected(i: int, j: int) -> list[str]:
        s, w = t.scores[i, j].item(), t.weights[i, j].item()
        return [f"Query {labels[i]}，Key {labels[j]}：q·k = {s:.4f}；"
                f"除以 √{t.d_k} 后 = {s / t.d_k ** 0.5:.4f}；softmax 权重 = {w:.4f}"]

    fig = Figure(tab, site, "s2-score-weight")
    try:
        page, root = fig.page, fig.root
        query = root.locator('select[name="cell_query"]')
        key = root.locator('select[name="cell_key"]')
        # 键盘：Tab 到下拉框，方向键换一行
        query.focus()
        page.keyboard.press("ArrowDown")
        assert fig.wait_readout(expected(1, 2)) == expected(1, 2)
        # 每个格子都能用两个下拉框选中（select_option 与读者选择时触发同样的事件）
        for i in range(len(labels)):
            for j in range(len(labels)):
                query.select_option(labels[i])
                key.select_option(labels[j])
                assert fig.wait_readout(expected(i, j)) == expected(i, j), (i, j)
        # 鼠标：悬停在两张热力图的每个格子上；下拉框跟着变
        for panel in range(2):
            for i in range(len(labels)):
                for j in range(len(labels)):
                    cell = root.locator(
                        f'.mark-rect path[aria-label*="Query {labels[i]}，Key {labels[j]}："]'
                    ).nth(panel)
                    cell.hover()
                    assert fig.wait_readout(expected(i, j)) == expected(i, j), (panel, i, j)
                    assert query.input_value() == labels[i] and key.input_value() == labels[j]
        fig.shot(screenshots, "-hovered")
    finally:
        problems = fig.close()
    assert not problems, "\n".join(problems)


def saturation_lines(d_k: int) -> list[str]:
    r = cases.saturation(d_k)
    return [f"dₖ = {d_k}　这一次抽样的最大权重：不缩放 {r.max_weight:.2f}，"
            f"除以 √dₖ 后 {r.scaled_max_weight:.2f}",
            f"{r.n_trials} 次抽样的最大权重中位数：不缩放 {r.median_max_weight:.2f}，"
            f"除以 √dₖ 后 {r.scaled_median_max_weight:.2f}"]


def test_softmax_saturation_slider_by_keyboard_and_mouse(tab, site, screenshots):
    from minigpt.interactive import SATURATION_DKS

    fig = Figure(tab, site, "s2-softmax-saturation")
    try:
        page, root = fig.page, fig.root
        slider = root.locator('input[type="range"][name="dk"]')
        assert fig.readout() == saturation_lines(64), "默认应停在正文用的 d_k = 64"
        slider.focus()
        page.keyboard.press("Home")
        for step, d_k in enumerate(SATURATION_DKS):
            if step:
                page.keyboard.press("ArrowRight")
            assert fig.wait_readout(saturation_lines(d_k)) == saturation_lines(d_k), d_k
            assert slider.get_attribute("aria-valuetext") == str(d_k)
            assert slider.locator("xpath=following-sibling::span").inner_text() == str(d_k)
        # 不缩放的最大权重随 d_k 变大而趋向 1（one-hot），缩放后的留在 1 以下很多
        assert cases.saturation(256).max_weight > 0.9 > cases.saturation(256).scaled_max_weight
        fig.shot(screenshots, "-dk256")
        # 鼠标：点滑块的最左端回到 d_k = 4
        box = slider.bounding_box()
        page.mouse.click(box["x"] + 2, box["y"] + box["height"] / 2)
        assert fig.wait_readout(saturation_lines(4)) == saturation_lines(4)
    finally:
        problems = fig.close()
    assert not problems, "\n".join(problems)


def mask_lines(masked: bool) -> list[str]:
    t = cases.toy()
    w = t.masked_weights if masked else t.weights
    return [f"因果遮蔽：{'开' if masked else '关'}（每行之和为 1）"] + [
        f"{name} 这一行：" + "　".join(f"{k} {v:.4f}" for k, v in zip(t.labels, row))
        for name, row in zip(t.labels, w.tolist())]


def test_causal_mask_toggle_by_keyboard_and_mouse(tab, site, screenshots):
    fig = Figure(tab, site, "s3-causal-mask")
    try:
        page, root = fig.page, fig.root
        box = root.locator('input[type="checkbox"]')
        assert box.is_checked() and fig.readout() == mask_lines(True), "默认打开遮蔽"
        box.focus()
        page.keyboard.press("Space")
        assert fig.wait_readout(mask_lines(False)) == mask_lines(False)
        fig.shot(screenshots, "-off")
        box.click()
        assert fig.wait_readout(mask_lines(True)) == mask_lines(True)
        # 遮蔽后对角线以上全是 0，每行之和仍为 1
        t = cases.toy()
        assert t.masked_weights.triu(1).abs().max().item() == 0.0
        assert t.masked_weights.sum(-1).tolist() == pytest.approx([1.0] * 3)
    finally:
        problems = fig.close()
    assert not problems, "\n".join(problems)


def head_line(head: int) -> list[str]:
    labels, w = cases.heads()
    return [f"头 {head} 中 sat 这一行：" + "，".join(
        f"{name} {v:.2f}" for name, v in zip(labels, w[head, 2].tolist()))]


def test_head_selector_by_keyboard_and_mouse(tab, site, screenshots):
    fig = Figure(tab, site, "s4-heads")
    try:
        page, root = fig.page, fig.root
        assert fig.readout() == head_line(0)
        root.locator('input[type="radio"][value="0"]').focus()
        page.keyboard.press("ArrowRight")
        assert fig.wait_readout(head_line(1)) == head_line(1)
        assert root.locator('input[type="radio"][value="1"]').is_checked()
        fig.shot(screenshots, "-head1")
        root.get_by_text("头 0", exact=True).click()
        assert fig.wait_readout(head_line(0)) == head_line(0)
        group = root.locator(".vega-bind-radio")
        assert group.get_attribute("role") == "radiogroup"
        assert group.get_attribute("aria-label") == "选择头"
    finally:
        problems = fig.close()
    assert not problems, "\n".join(problems)


def path_line(step: int) -> list[str]:
    fp = cases.path_length()
    n, r, a = fp.lengths[step], fp.rnn[step], fp.attention[step]
    rnn = f"{r:.3e}" if r > 0 else "0（float32 下求范数时平方下溢）"
    return [f"序列长度 {n}：位置 0 的梯度范数 RNN {rnn}，注意力 {a:.3e}"]


def test_path_length_slider_by_keyboard_and_mouse(tab, site, screenshots):
    fp = cases.path_length()
    fig = Figure(tab, site, "ap-path-length")
    try:
        page, root = fig.page, fig.root
        slider = root.locator('input[type="range"][name="len"]')
        last = len(fp.lengths) - 1
        assert fig.readout() == path_line(last), "默认停在最长的序列"
        slider.focus()
        page.keyboard.press("Home")
        for step in range(len(fp.lengths)):
            if step:
                page.keyboard.press("ArrowRight")
            assert fig.wait_readout(path_line(step)) == path_line(step), fp.lengths[step]
            assert slider.get_attribute("aria-valuetext") == str(fp.lengths[step])
        box = slider.bounding_box()
        page.mouse.click(box["x"] + 2, box["y"] + box["height"] / 2)
        assert fig.wait_readout(path_line(0)) == path_line(0)
        fig.shot(screenshots, "-len10")
        # 纵轴是对数轴
        assert page.evaluate("""(name) => [...document.querySelectorAll(
            `[data-figure="${name}"] .role-axis-label text`)].some(t => /e-/.test(t.textContent))""",
            "ap-path-length")
    finally:
        problems = fig.close()
    assert not problems, "\n".join(problems)




def test_trained_head_explorer_by_keyboard_and_mouse(tab, site, screenshots):
    tokens = cases.trained_heads()[0]
    last = len(tokens) - 1
    fig = Figure(tab, site, "s7-trained-heads")
    try:
        page, root = fig.page, fig.root
        assert fig.readout() == cases.trained_head_lines(1, 0, last), "默认：层 1 头 0 的最后一个位置"
        # 键盘：层、头是两组单选按钮，位置是滑块
        root.locator('input[type="radio"][name="layer"][value="1"]').focus()
        page.keyboard.press("ArrowLeft")
        assert fig.wait_readout(cases.trained_head_lines(0, 0, last)) == cases.trained_head_lines(0, 0, last)
        root.locator('input[type="radio"][name="head"][value="0"]').focus()
        page.keyboard.press("ArrowRight")
        assert fig.wait_readout(cases.trained_head_lines(0, 1, last)) == cases.trained_head_lines(0, 1, last)
        assert root.locator('input[type="radio"][name="head"][value="1"]').is_checked()
        slider = root.locator('input[type="range"][name="pos"]')
        slider.focus()
        page.keyboard.press("Home")
        assert fig.wait_readout(cases.trained_head_lines(0, 1, 0)) == cases.trained_head_lines(0, 1, 0)
        for pos in range(1, 4):
            page.keyboard.press("ArrowRight")
            assert fig.wait_readout(cases.trained_head_lines(0, 1, pos)) == cases.trained_head_lines(0, 1, pos)
            assert slider.get_attribute("aria-valuetext") == f"{pos}（{tokens[pos]}）"
        fig.shot(screenshots, "-layer0")
        # 鼠标：点“层 1”，再点滑块的最右端
        root.get_by_text("层 1", exact=True).click()
        assert fig.wait_readout(cases.trained_head_lines(1, 1, 3)) == cases.trained_head_lines(1, 1, 3)
        box = slider.bounding_box()
        page.mouse.click(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
        assert fig.wait_readout(cases.trained_head_lines(1, 1, last)) == cases.trained_head_lines(1, 1, last)
        groups = root.locator(".vega-bind-radio")
        assert [groups.nth(i).get_attribute("aria-label") for i in range(groups.count())] == [
            "选择层", "选择头"]
    finally:
        problems = fig.close()
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- 只在需要的页面加载，分量有上限

BUDGET = 2_000_000  # issue 12：最重的页面最多比原来多传 2 MB


def test_library_loads_only_where_needed_and_fits_the_budget(in_light, tab, site, built_book):
    """有交互图的页面（翻到图之后）以普通脚本加载本站的库与加载器；为交互图多传的字节（库、样式、图表说明）
    在 2 MB 以内；没有交互图的页面根本不加载它。"""
    html_dir = built_book.html
    for name in ("s2-score-weight", "ap-path-length"):
        seen = _checked(in_light[name])
        scripts = seen["scripts"]
        assert sorted(urlsplit(src).path.rsplit("/", 1)[1] for _, src in scripts) == \
            ["book-interactive.js", "book-lazy.js"], scripts
        assert all(kind in ("", "text/javascript") and src.startswith(site) for kind, src in scripts), scripts
        assets = [r for r in seen["requests"] if "/_static/interactive/" in r]
        added = sum((html_dir / urlsplit(r).path.lstrip("/")).stat().st_size for r in assets)
        added += sum(len(x.encode("utf-8")) for x in seen["specs"])
        assert 0 < added <= BUDGET, f"{name}：交互图多传了 {added} 字节"
        assert not seen["problems"], "\n".join(seen["problems"])
    requested: list[str] = []
    try:
        tab.visit(site + "book/s1_intuition.html", "light", lambda route: route.continue_(),
                  {"request": lambda r: requested.append(r.url)}, wait_until="networkidle")
    finally:
        tab.leave()
    assert requested and not [r for r in requested if "/_static/interactive/" in r]


def test_library_waits_until_the_reader_nears_a_figure(tab, site):
    """首屏（手机大小的窗口）不加载库：页面打开、网络空闲时还没有请求它；翻到图时才加载并画好。"""
    requested: list[str] = []
    viewport = tab.page.viewport_size
    tab.page.set_viewport_size({"width": 412, "height": 823})
    try:
        page = tab.visit(site + "book/s2_scaled_dot_product.html", "light", lambda route: route.continue_(),
                         {"request": lambda r: requested.append(r.url)}, wait_until="networkidle")
        assert not [r for r in requested if "book-interactive.js" in r], "首屏就加载了交互图的库"
        figure = page.locator('[data-figure="s2-score-weight"]')
        figure.scroll_into_view_if_needed()
        page.wait_for_selector('[data-figure="s2-score-weight"][data-ready]', timeout=20000)
        assert figure.get_attribute("data-ready") == "true"
        assert [r for r in requested if "book-interactive.js" in r]
    finally:
        tab.leave()
        tab.page.set_viewport_size(viewport)


# ---------------------------------------------------------------- 深色模式、没有 JavaScript

LUMINANCE = """(name) => {
  const lum = (el) => { const m = getComputedStyle(el).fill.match(/\\d+(\\.\\d+)?/g).map(Number);
    return (0.299 * m[0] + 0.587 * m[1] + 0.114 * m[2]) / 255; };
  const root = document.querySelector(`[data-figure="${name}"]`);
  const pick = (sel) => [...root.querySelectorAll(sel)].map(lum);
  return {readout: pick('.readout_marks text, .paneltitle_marks text, .underflowlabel_marks text'), axis: pick('.role-axis-label text, .role-axis-title text'),
          controls: getComputedStyle(root.querySelector('.vega-bind-name')).color};
}"""


def read_dark(screenshots):
    def read(fig, name: str) -> dict:
        fig.page.wait_for_selector(f'[data-figure="{name}"][data-ready]', timeout=20000)
        fig.shot(screenshots, "-dark", name)
        return {"ready": fig.page.locator(f'[data-figure="{name}"]').get_attribute("data-ready"),
                "theme": fig.page.evaluate("document.documentElement.dataset.theme"),
                "colors": fig.page.evaluate(LUMINANCE, name)}
    return read


@pytest.fixture(scope="module")
def in_dark(tab, site, screenshots) -> dict[str, dict]:
    """深色模式下每张图的文字颜色（见 each_page）。"""
    return each_page(tab, site, read_dark(screenshots), color_scheme="dark")


@pytest.mark.parametrize("name", list(FIGURES))
def test_text_is_light_in_dark_mode(in_dark, name):
    seen = _checked(in_dark[name])
    colors = seen["colors"]
    assert seen["ready"] == "true", seen["problems"]
    assert seen["theme"] == "dark"
    assert colors["readout"] and min(colors["readout"]) > 0.6, colors
    assert colors["axis"] and min(colors["axis"]) > 0.6, colors
    channels = [int(c) for c in re.findall(r"\d+", colors["controls"])[:3]]
    assert sum(channels) / 3 > 150, colors["controls"]
    assert not seen["problems"], "\n".join(seen["problems"])


def directive_alt(docname: str, glue_name: str) -> str:
    text = (REPO / f"{docname}.md").read_text(encoding="utf-8")
    block = re.search(r"```\{glue:figure\} " + glue_name + r"\n((?::[a-z]+:.*\n)+)", text)
    assert block, f"{docname}.md 里没有 {glue_name} 的 glue:figure"
    alt = re.search(r"^:alt: (.*)$", block.group(1), re.M)
    assert alt, f"{glue_name} 的 glue:figure 没有 :alt:"
    return alt.group(1).strip()


def read_without_javascript(fig, name: str) -> dict:
    img = fig.page.locator(f'[data-figure="{name}"] img.interactive-figure-static')
    img.scroll_into_view_if_needed()
    fig.page.wait_for_function(
        "(name) => { const i = document.querySelector("
        "`[data-figure=\"${name}\"] img.interactive-figure-static`);"
        " return i.complete && i.naturalWidth > 0; }", arg=name, timeout=5000)
    return {"visible": img.is_visible(), "alt": img.get_attribute("alt"), "src": img.get_attribute("src")}


@pytest.fixture(scope="module")
def without_javascript(tab_without_javascript, site) -> dict[str, dict]:
    """关掉 JavaScript 时每张图的位置上显示的静态图（见 each_page）。"""
    return each_page(tab_without_javascript, site, read_without_javascript)


@pytest.mark.parametrize("name", list(FIGURES))
def test_without_javascript_the_static_figure_shows_with_the_same_alt(without_javascript, name):
    docname, _, glue_name = FIGURES[name]
    seen = _checked(without_javascript[name])
    assert seen["visible"]
    assert seen["alt"] == directive_alt(docname, glue_name)
    assert seen["src"].startswith("../_images/interactive-") and seen["src"].endswith(".svg")
    assert not [r for r in seen["requests"] if "book-interactive.js" in r]
    assert not seen["problems"], "\n".join(seen["problems"])


# ---------------------------------------------------------------- 读屏软件听到的是中文

# Vega 自动写给读屏软件的英文说明里一定出现的词（“rect mark”“X-axis titled … for a linear scale …”）
VEGA_ENGLISH = re.compile(r"\b(mark|container|visualization|axis|titled|scale|values|legend|"
                          r"ending|undefined|bar|point|variant|model|text|title)\b", re.I)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_screen_reader_descriptions_are_chinese(in_light, name):
    """图里每个 aria-roledescription / aria-label 都是中文说明，没有 Vega 默认的英文，也没有 undefined。"""
    seen = _checked(in_light[name])
    assert not seen["problems"], seen["problems"]
    labels = seen["reader_labels"]
    assert labels, f"{name}：图里没有任何给读屏软件的说明"
    english = [label for label in labels if VEGA_ENGLISH.search(label)]
    assert not english, f"{name}：这些说明还是英文：{english[:5]}"
