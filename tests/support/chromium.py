"""浏览器测试共用：本机网站（一个静默的 HTTP 服务器）、Debian 的 Chromium、一直开着的标签页（Tab）。
conftest 的 site、browser、tab 夹具用它们；tests/test_browser.py 等直接用 Tab 与 settle。"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import sys
import threading
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run", "--disable-quic", "--disable-sync",
]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - 覆盖基类的签名
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    """浏览器翻页或关掉页面时会掐断还没传完的请求：那是正常的，不在测试输出里打印一段 BrokenPipeError 的回溯。
    别的错误照常打印。"""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serving(folder: Path):
    """在 127.0.0.1 的空闲端口上提供 folder，给出根地址；离开时关掉服务器。"""
    handler = functools.partial(QuietHandler, directory=str(folder))
    server = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# 主题的脚本在页面加载完后才把 data-theme="auto" 换成 light/dark；按钮等元素带 CSS 过渡（Bootstrap 的 .btn：0.15 s），
# 颜色要过渡完才是最终的样子。机器忙时，axe 或截图可能正赶上过渡的半路（一个半明半暗的“搜索”按钮）。
# 所以等两件事发生：主题已定下来，所有 CSS 过渡都已结束。等的是事件，不是固定的时间。
SETTLE = """async () => {
  const root = document.documentElement;
  if (document.querySelector('script[src*="pydata-sphinx-theme"]')) {
    while (!["light", "dark"].includes(root.dataset.theme)) {
      await new Promise(r => requestAnimationFrame(r));
    }
  }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const running = document.getAnimations().filter(a => a instanceof CSSTransition);
  await Promise.all(running.map(a => a.finished.catch(() => null)));
}"""


def settle(page) -> None:
    """等页面的主题与 CSS 过渡都定下来（见上面 SETTLE 的说明）。"""
    page.evaluate(SETTLE)


VIEWPORT = {"width": 1280, "height": 900}


class Tab:
    """一个一直开着的浏览器标签页，一次又一次地打开网站的页面（每个工作线程、每个测试模块一个）。

    每开一个新的浏览器上下文，Chromium 就起一个新的渲染进程，重新载入中文字体、重新编译页面的脚本：
    在本机，6 页各开一个新上下文共用 15–20 CPU 秒，在同一个标签页里依次打开只要 6–9 秒。所以各次访问共用
    一个标签页，但做到互不相干：
    - 每次访问（visit）挂上它自己的请求拦截和事件监听，离开（leave）时先回到空白页再摘掉：上一页的请求和
      消息都在回到空白页之前报完，算不到下一次访问头上；
    - 离开时清掉本站的 localStorage、sessionStorage 和 cookie，并且不让页面在卸载时再写进去（主题在卸载时记下
      侧栏的滚动位置，下一页会照着滚）；鼠标移回左上角（不停在下一页的某个元素上）；
    - 拦截请求会关掉浏览器的 HTTP 缓存（Playwright 的规定），所以每次访问照样请求页面用到的每个文件。
    颜色模式每次访问前重新设定（与新上下文的 color_scheme 选项是同一个设置）。离开时出了错（页面崩溃之类），
    就换一个新的上下文，不连累后面的测试。"""

    def __init__(self, browser, javascript: bool = True):
        self.browser, self.javascript = browser, javascript
        self._route = None
        self._listeners: list[tuple[str, object]] = []
        self._open_context()

    def _open_context(self) -> None:
        self.context = self.browser.new_context(viewport=VIEWPORT, locale="zh-CN", service_workers="block",
                                                java_script_enabled=self.javascript)
        self.context.route("**/*", lambda route: self._route(route) if self._route else route.continue_())
        self.page = self.context.new_page()

    def visit(self, url: str, color_scheme: str, route, listeners: dict, wait_until: str = "load"):
        """挂上这次访问的请求拦截 route(route) 与事件监听 {事件: 函数}，按 color_scheme 打开 url，返回页面。"""
        if self._route or self._listeners:  # 上一次访问没有离开（测试半路出错）：先替它离开
            self.leave()
        self.page.emulate_media(color_scheme=color_scheme)
        self._route = route
        for event, handler in listeners.items():
            self.page.on(event, handler)
            self._listeners.append((event, handler))
        self.page.goto(url, wait_until=wait_until)
        return self.page

    def leave(self) -> None:
        try:
            if self.javascript and self.page.url.startswith("http"):
                # 页面离开时（beforeunload、pagehide）还会往存储里写：主题就在这时记下侧栏滚到了哪里，下一页照着滚过去。
                # 所以清空之后让这一页再也写不进去（新页面有新的 Storage 原型，不受影响）
                self.page.evaluate("() => { localStorage.clear(); sessionStorage.clear();"
                                   " Storage.prototype.setItem = () => {}; }")
            self.page.mouse.move(0, 0)
            self.page.goto("about:blank")
            for event, handler in self._listeners:
                self.page.remove_listener(event, handler)
            self.context.clear_cookies()
        except Exception:  # noqa: BLE001  页面坏了：整个换掉
            self.context.close()
            self._open_context()
        finally:
            self._listeners.clear()
            self._route = None

    def close(self) -> None:
        self.context.close()
