"""第 7 节的活模型，在真实浏览器（Debian 的 Chromium，经 Playwright 驱动）里：

- 页面算出的注意力权重与 logits 和 PyTorch 的相差不超过 1e-5（多条序列、每个位置、每个快照）；
- 只用键盘就能改 token、位置和训练步数，读数跟着变；焦点看得见；
- axe-core 在浅色、深色下都不报 serious / critical；深色模式下文字是浅色；
- 从 file:// 打开、网络全关时照样能用（离线 zip 解压后就是这样打开的）；
- 为它多传的字节（数据 + 脚本 + 样式）gzip 后不超过 300 KB，而且只有这一页加载它们。

Chromium 来自 Debian（tools/system_deps.sh install browser）；绝不运行 `playwright install`。
"""

from __future__ import annotations

import copy
import gzip
from urllib.parse import urlsplit

import pytest
import torch

from support import heads_cases
from support.chromium import VIEWPORT, settle
from minigpt import heads as H
from minigpt import live_model as LM

pytestmark = [pytest.mark.browser, pytest.mark.book]

PAGE = "book/s7_trained_heads.html"
ROOT = '[data-live-model="s7-live-model"]'
TOLERANCE = LM.BROWSER_TOLERANCE   # 页面 glue 的同一个数
BUDGET = 300_000   # issue 34：这一页为活模型多传的字节，gzip 后


class LivePage:
    """在标签页（support.chromium.Tab）里打开第 7 节，等活模型画好；记下控制台错误、失败的请求和发往其他主机的请求。"""

    def __init__(self, tab, site: str, color_scheme: str = "light"):
        self.site, self.tab = site, tab
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.page = tab.visit(site + PAGE, color_scheme, self._route, {
            "console": lambda m: m.type in ("error", "warning") and self.problems.append(f"控制台{m.type}: {m.text}"),
            "pageerror": lambda e: self.problems.append(f"脚本异常: {e}"),
            "requestfailed": lambda r: self.problems.append(f"请求失败: {r.url}"),
            "response": lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status}: {r.url}"),
        })
        # 活模型的数据与脚本等读者翻到它时才加载（book_lazy.js）：先翻到它，再等它画好
        self.page.locator(ROOT).scroll_into_view_if_needed()
        self.page.wait_for_selector(f"{ROOT}[data-ready]", timeout=20000)
        # 主题在加载完后才给放不下、要横向滚动的代码块加上 tabindex（axe 查它）：与 test_browser 一样等网络空闲。
        # 主题只在加载时和窗口改变大小时重算；字体晚到时代码块才变宽，所以等字体到齐、再发一次 resize，
        # 直到每个要横向滚动的代码块都能用 Tab 到达（等的是这个条件，不是固定的时间）
        self.page.wait_for_load_state("networkidle")
        self.page.evaluate("async () => { await document.fonts.ready; window.dispatchEvent(new Event('resize')); }")
        self.page.wait_for_function("() => [...document.querySelectorAll('pre')]"
                                    ".every(e => e.scrollWidth <= e.clientWidth || e.tabIndex === 0)", timeout=10000)
        self.root = self.page.locator(ROOT)
        assert self.root.get_attribute("data-ready") == "true", self.problems
        settle(self.page)
        self.root.scroll_into_view_if_needed()

    def _route(self, route):
        url = route.request.url
        self.requests.append(url)
        if url.startswith(self.site) or urlsplit(url).scheme in ("data", "blob", "about"):
            route.continue_()
        else:
            self.problems.append(f"请求了其他主机: {url}")
            route.abort()

    def result(self) -> dict:
        return self.root.evaluate("el => el.bookLiveResult")

    def revision(self) -> int:
        return int(self.root.get_attribute("data-revision"))

    def wait_changed(self, before: int) -> dict:
        """等页面重算一次（data-revision 变了）；返回新的结果。"""
        self.page.wait_for_function(f"() => Number(document.querySelector('{ROOT}').dataset.revision) > {before}",
                                    timeout=5000)
        return self.result()

    def text(self, selector: str) -> str:
        return self.root.locator(selector).inner_text()

    def readouts(self) -> list[str]:
        return self.root.locator(".live-model-readout").all_inner_texts()

    def close(self) -> list[str]:
        self.tab.leave()
        return self.problems


def torch_numbers(model: H.TinyGPT, ids: list[int]) -> tuple[list[torch.Tensor], torch.Tensor]:
    """PyTorch 的注意力权重（每层 [heads, seq, seq]）与 logits [seq, vocab]。"""
    x = torch.tensor([ids])
    with torch.no_grad():
        return [w[0] for w in model.attention_weights(x)], model(x)[0]


def largest_difference(result: dict, model: H.TinyGPT) -> float:
    attn, logits = torch_numbers(model, result["ids"])
    diffs = [(torch.tensor(result["logits"], dtype=torch.float64) - logits.double()).abs().max().item()]
    for layer, w in zip(result["attn"], attn, strict=True):
        diffs.append((torch.tensor(layer, dtype=torch.float64) - w.double()).abs().max().item())
    return max(diffs)


def sequences() -> list[list[int]]:
    """几条序列：页面的示例、三条训练时那样的重复序列（另取的数据种子）、一条不重复的、两条短的。"""
    seq_len = heads_cases.run2().model.seq_len
    out = [heads_cases.example().ids[0, :-1].tolist()]
    for seed in (7, 8, 9):
        out.append(H.repeat_batch(1, torch.Generator().manual_seed(seed)).ids[0, :-1].tolist())
    out.append(H.repeat_batch(1, torch.Generator().manual_seed(10), repeat=False).ids[0, :-1].tolist())
    out += [[3], [5, 9, 1, 5, 9]]
    assert all(1 <= len(s) <= seq_len for s in out)
    return out


@pytest.fixture()
def live(tab, site):
    page = LivePage(tab, site)
    yield page
    problems = page.close()
    assert not problems, "\n".join(problems)


def test_page_matches_pytorch_within_1e_5_on_every_sequence_position_and_step(live):
    """页面的 JavaScript 前向（全部位置的注意力权重与 logits）与 PyTorch 逐个相比，最大绝对差 ≤ 1e-5。
    序列经输入框送进页面，训练步数经滑块选择（与读者的操作触发同样的事件）。"""
    run = heads_cases.run2()
    models = [run.snapshots[s] for s in LM.SNAPSHOT_STEPS] + [run.model]
    steps = [*LM.SNAPSHOT_STEPS, len(run.losses)]
    doubles = [copy.deepcopy(m).double() for m in models]
    seq_input = live.root.locator('input[name="sequence"]')
    step_input = live.root.locator('input[name="step"]')
    worst = 0.0
    checked = 0
    for ids in sequences():
        before = live.revision()
        seq_input.fill(" ".join(map(str, ids)))
        result = live.wait_changed(before)
        assert result["ids"] == ids
        for k, model in enumerate(models):
            before = live.revision()
            step_input.evaluate("(el, k) => { el.value = String(k);"
                                " el.dispatchEvent(new Event('input', {bubbles: true})); }", k)
            result = live.wait_changed(before)
            assert result["step"] == steps[k] and result["ids"] == ids
            assert len(result["logits"]) == len(ids) and len(result["attn"]) == len(model.blocks)
            diff = largest_difference(result, model)
            assert diff <= TOLERANCE, (ids, steps[k], diff)
            # 页面用 64 位浮点数算：与 PyTorch 的 float64 前向几乎逐位相同，上面的差几乎全是 float32 的舍入
            assert largest_difference(result, doubles[k]) <= 1e-9, (ids, steps[k])
            worst = max(worst, diff)
            checked += 1
    assert checked == len(sequences()) * len(models)
    print(f"最大绝对差 {worst:.2e}（{checked} 组）")


def test_keyboard_alone_changes_token_position_and_step(live):
    page, root = live.page, live.root
    first = live.result()
    start_pos = first["pos"]
    readouts = live.readouts()
    summary = live.text(".live-model-summary")
    # 每个控件都能用 Tab 键到达：从序列输入框开始一路按 Tab
    root.locator('input[name="sequence"]').focus()
    reached = []
    for _ in range(60):
        reached.append(page.evaluate("() => { const a = document.activeElement;"
                                     " return a.name || a.className || a.tagName; }"))
        if reached[-1] == "step":
            break
        page.keyboard.press("Tab")
    assert reached[0] == "sequence" and "live-model-random" in reached and reached[-1] == "step", reached
    assert {"position", "token"} <= set(reached), reached
    # 焦点看得见：键盘到达的控件有轮廓线
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", ""), outline

    # 训练步数：Home 到第一个快照，读数与预测都变
    before = live.revision()
    page.keyboard.press("Home")
    result = live.wait_changed(before)
    assert result["step"] == LM.SNAPSHOT_STEPS[0]
    step = root.locator('input[name="step"]')
    assert step.get_attribute("aria-valuetext") == f"第 {LM.SNAPSHOT_STEPS[0]} 步"
    assert live.readouts() != readouts and live.text(".live-model-summary") != summary
    before = live.revision()
    page.keyboard.press("ArrowRight")
    assert live.wait_changed(before)["step"] == LM.SNAPSHOT_STEPS[1]

    # 位置：方向键左移一格
    pos = root.locator('input[name="position"]')
    pos.focus()
    readouts = live.readouts()
    before = live.revision()
    page.keyboard.press("ArrowLeft")
    result = live.wait_changed(before)
    assert result["pos"] == start_pos - 1
    assert pos.get_attribute("aria-valuetext") == f"{start_pos - 1}（token {result['ids'][start_pos - 1]}）"
    assert live.readouts() != readouts
    assert root.locator(".live-model-strip button[aria-pressed='true']").get_attribute("aria-label") == \
        f"位置 {start_pos - 1}：token {result['ids'][start_pos - 1]}"

    # 这个位置的 token：上方向键加 1，序列与输入框跟着变，模型重算
    token = root.locator('input[name="token"]')
    token.focus()
    old = result["ids"][start_pos - 1]
    readouts = live.readouts()
    before = live.revision()
    page.keyboard.press("ArrowUp" if old < 15 else "ArrowDown")
    result = live.wait_changed(before)
    new = result["ids"][start_pos - 1]
    assert new == (old + 1 if old < 15 else old - 1)
    assert result["ids"][:start_pos - 1] == first["ids"][:start_pos - 1]
    assert root.locator('input[name="sequence"]').input_value().split()[start_pos - 1] == str(new)
    assert live.readouts() != readouts
    assert token.evaluate("el => el === document.activeElement"), "改 token 后焦点应留在输入框里"

    # 序列条上的按钮：Tab 到第 2 个，回车选中位置 2
    button = root.locator(".live-model-strip button").nth(2)
    button.focus()
    before = live.revision()
    page.keyboard.press("Enter")
    assert live.wait_changed(before)["pos"] == 2
    assert button.evaluate("el => el === document.activeElement"), "选位置后焦点应留在按钮上"

    # 随机生成：回车换一条训练时那样的重复序列
    root.locator(".live-model-random").focus()
    before = live.revision()
    page.keyboard.press("Enter")
    ids = live.wait_changed(before)["ids"]
    assert len(ids) == heads_cases.run2().model.seq_len and all(0 <= t < 16 for t in ids)
    # 结尾是一段重复：最后 L 个与再往前 L 个相同（L 在 4–10 之间；模型只读前 23 个，所以比 L - 1 个）
    assert any(ids[len(ids) - L + 1:] == ids[len(ids) - 2 * L + 1:len(ids) - L] for L in range(4, 11))


def test_bad_input_gets_a_clear_message_and_keeps_the_last_result(live):
    root = live.root
    seq = root.locator('input[name="sequence"]')
    before = live.result()
    seq.fill("1 2 16 3")
    error = root.locator(".live-model-error")
    error.wait_for(state="visible")
    live.page.wait_for_function(f"() => document.querySelector('{ROOT} .live-model-error').textContent !== ''")
    assert error.inner_text() == "第 3 个数“16”不对：每个 token 应是 0 到 15 之间的整数。"
    assert seq.get_attribute("aria-invalid") == "true"
    seq.fill(" ".join(["1"] * 24))
    live.page.wait_for_function(f"() => /24/.test(document.querySelector('{ROOT} .live-model-error').textContent)")
    assert error.inner_text() == "序列应有 1 到 23 个 token，现在是 24 个。"
    assert live.result()["ids"] == before["ids"]
    n = live.revision()
    seq.fill("4 5 6")
    assert live.wait_changed(n)["ids"] == [4, 5, 6]
    assert error.inner_text() == "" and seq.get_attribute("aria-invalid") is None


@pytest.mark.parametrize("color_scheme", ["light", "dark"])
def test_axe_finds_nothing_serious_on_the_live_model(tab, site, screenshots, color_scheme):
    from test_browser import axe_violations

    live = LivePage(tab, site, color_scheme)
    try:
        # 改过一次序列之后再查：动态生成的控件和读数也在里面
        live.root.locator(".live-model-random").click()
        screenshots.element(live.page.locator(f"figure:has({ROOT})"), f"live-model-{color_scheme}.png")
        # 页面自己的问题在 axe 运行之前取：axe 预读样式表时自己会请求出一个 404（见 test_browser.axe_violations）
        problems = list(live.problems)
        violations = axe_violations(live.page)
        colors = live.page.evaluate("""(sel) => {
          const lum = (el) => { const m = getComputedStyle(el).color.match(/\\d+(\\.\\d+)?/g).map(Number);
            return (0.299 * m[0] + 0.587 * m[1] + 0.114 * m[2]) / 255; };
          const root = document.querySelector(sel);
          return [...root.querySelectorAll('.live-model-readout, .live-model-summary, label, caption, td')].map(lum);
        }""", ROOT)
    finally:
        live.close()
    assert not violations, "\n".join(violations)
    assert not problems, "\n".join(problems)
    if color_scheme == "dark":
        assert colors and min(colors) > 0.6, colors
    else:
        assert colors and max(colors) < 0.4, colors


def vega_module_blocked(message) -> bool:
    return "book-interactive.js" in message.text or "book-interactive.js" in message.location.get("url", "")


def test_works_from_file_url_with_the_network_off(browser, built_book):
    """离线 zip 解压后从 file:// 打开：网络全关（offline），页面照样加载数据、画出界面、算出结果。"""
    context = browser.new_context(viewport=VIEWPORT, locale="zh-CN", offline=True)
    problems: list[str] = []
    try:
        page = context.new_page()
        # 同一页上 Vega 的交互图以 type=module 加载（book_interactive.py），Chromium 在 file:// 下拒绝模块脚本：
        # 那是它的事（那张图留着静态图），不算活模型的问题；别的控制台错误都算
        page.on("console", lambda m: m.type == "error" and not vega_module_blocked(m) and problems.append(m.text))
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on("request", lambda r: not r.url.startswith(("file:", "data:", "blob:", "about:"))
                and problems.append(f"请求了网络: {r.url}"))
        page.goto((built_book.html / PAGE).as_uri())
        page.locator(ROOT).scroll_into_view_if_needed()
        page.wait_for_selector(f"{ROOT}[data-ready]", timeout=20000)
        assert page.locator(ROOT).get_attribute("data-ready") == "true"
        result = page.locator(ROOT).evaluate("el => el.bookLiveResult")
        assert result["ids"] == heads_cases.example().ids[0, :-1].tolist()
        assert largest_difference(result, heads_cases.run2().model) <= TOLERANCE
    finally:
        context.close()
    assert not problems, problems


def test_added_bytes_fit_300_kb_gzipped_and_load_only_on_this_page(tab, site, built_book):
    live = LivePage(tab, site)
    requests = list(live.requests)
    problems = live.close()
    assert not problems, problems
    html = built_book.html
    added = [r for r in requests if "live-model" in urlsplit(r).path]
    paths = sorted({urlsplit(r).path for r in added})
    assert paths == sorted(["/book/s7_trained_heads.s7-live-model.js", "/_static/interactive/book-live-model.js",
                            "/_static/interactive/book-live-model.css"]), paths
    sizes = {p: len(gzip.compress((html / p.lstrip("/")).read_bytes(), 9)) for p in paths}
    total = sum(sizes.values())
    print("gzip 后的字节数：", sizes, "合计", total)
    assert 0 < total <= BUDGET, sizes
    requested: list[str] = []
    try:
        tab.visit(site + "book/s6_block.html", "light", lambda route: route.continue_(),
                  {"request": lambda r: requested.append(r.url)}, wait_until="networkidle")
    finally:
        tab.leave()
    assert requested and not [r for r in requested if "live-model" in r]


def test_english_edition_runs_with_english_controls(tab, site, built_book_en):
    """英文版（网站的 en/）：同一个模型、同样的数，界面文字是英文（JS 里的字符串来自 code.po 的译文，
    译文坏了语法，整段脚本就不运行）。"""
    import re

    problems: list[str] = []
    page = tab.visit(site + "en/" + PAGE, "light", lambda route: route.continue_(), {
        "pageerror": lambda e: problems.append(f"脚本异常: {e}")})
    try:
        page.locator(ROOT).scroll_into_view_if_needed()
        page.wait_for_selector(f"{ROOT}[data-ready]", timeout=20000)
        root = page.locator(ROOT)
        assert root.get_attribute("data-ready") == "true", problems
        ui = root.locator(".live-model-ui").inner_text()
        assert "Sequence (integers 0–15" in ui and "Training step" in ui
        assert not re.search(r"[\u4e00-\u9fff]", ui), ui[:300]
        result = root.evaluate("el => el.bookLiveResult")
        assert largest_difference(result, heads_cases.run2().model) <= TOLERANCE
    finally:
        tab.leave()
    assert not problems, problems


def test_without_javascript_the_static_figure_shows_with_the_page_alt(browser, site):
    """关掉 JavaScript：活模型的位置上是静态图（存在 _images/ 里），替代文字与页面上 glue:figure 的 :alt: 相同。"""
    from support.chromium import Tab
    from test_interactive_browser import directive_alt

    tab = Tab(browser, javascript=False)
    try:
        page = tab.visit(site + PAGE, "light", lambda route: route.continue_(), {})
        img = page.locator(f"{ROOT} img.interactive-figure-static")
        img.scroll_into_view_if_needed()
        page.wait_for_function(f"() => {{ const i = document.querySelector('{ROOT} img');"
                               " return i.complete && i.naturalWidth > 0; }", timeout=5000)
        assert img.is_visible()
        assert img.get_attribute("alt") == directive_alt("book/s7_trained_heads", "s7_fig_live")
        assert img.get_attribute("src").startswith("../_images/interactive-")
        assert page.locator(f"{ROOT} .live-model-ui").inner_text() == ""
    finally:
        tab.leave()
        tab.close()
