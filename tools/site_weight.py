"""读者下载多少：在本机像静态主机那样（文本文件 gzip 压缩、静态文件可缓存）提供已构建的网站，用 Debian 的
Chromium 打开每一页，记下每个文件实际传输的字节数。

用法：
    python tools/site_weight.py [--site _build/html] [--json FILE]   # 网站的每一页：首次访问与再次访问的传输量

两种量（都按 gzip 之后、浏览器实际收到的字节，含响应头）：
- **首次访问**：全新的浏览器缓存，打开这一页，等网络空闲（字体、懒加载之外的图片都已下载）；
- **再次访问**：同一个浏览器先把两种语言的每一页读一遍（共用的主题、脚本、字体、图都进了缓存），再打开这一页时
  下载的字节。服务器像常见的静态主机那样给 HTML 发 ``Cache-Control: no-cache``（每次都重新取，这里不答 304，
  所以是整页 HTML，略多于真实主机），其余文件可缓存 CACHE_SECONDS 秒。

预算（tests/test_page_weight.py 守着它们）：每页首次访问 ≤ 1 MB；纯文字的页（没有图，也没有交互图）首次访问
≤ 400 KB、再次访问 ≤ 30 KB。有图的页只守 1 MB：它们的 HTML 本身就长（§6 的 HTML gzip 后约 32 KB），图是读者来看的内容。

tools/lighthouse.py 也用这里的服务器。
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import io
import json
import shutil
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# 静态主机（GitHub Pages 之类）压缩的类型
COMPRESSED = {".html", ".css", ".js", ".mjs", ".json", ".svg", ".xml", ".txt", ".map", ".ipynb", ".md", ".inv"}
CACHE_SECONDS = 600   # GitHub Pages 给每个文件的 Cache-Control: max-age

KB = 1000
FIRST_VISIT_TEXT = 400 * KB     # 纯文字的页：首次访问
REPEAT_VISIT_TEXT = 30 * KB     # 纯文字的页：再次访问
FIRST_VISIT_ANY = 1000 * KB     # 任何一页：首次访问
# 唯一的例外：教师指南是给老师的长参考页，它自己的 HTML 在 gzip 后就超过 40 KB。
# 它只守首次访问的两条预算，不守再次访问的那条（拆成几页之前）
LONG_REFERENCE_PAGES = ("book/teacher_guide.html",)


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """像静态主机那样提供文件：文本类型 gzip 压缩（浏览器声明支持时），每个文件可缓存 CACHE_SECONDS 秒。"""

    _cache: dict[Path, bytes] = {}
    _lock = threading.Lock()

    def log_message(self, format, *args):  # noqa: A002 - 覆盖基类的签名
        pass

    def end_headers(self):
        page = self.path.split("?")[0].split("#")[0]
        html = page.endswith((".html", "/"))
        self.send_header("Cache-Control", "no-cache" if html else f"max-age={CACHE_SECONDS}")
        super().end_headers()

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if (path.suffix not in COMPRESSED or not path.is_file()
                or "gzip" not in self.headers.get("Accept-Encoding", "")):
            return super().send_head()
        with self._lock:
            body = self._cache.get(path)
            if body is None:
                body = self._cache[path] = gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


class QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class GzipSite:
    """with GzipSite(目录) as url: 在 127.0.0.1 的空闲端口上提供这个目录，url 是根地址。"""

    def __init__(self, root: Path):
        self.root = Path(root)

    def __enter__(self) -> str:
        handler = functools.partial(GzipHandler, directory=str(self.root))
        self.server = QuietServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@dataclass
class Visit:
    page: str                                        # 相对网站根目录的路径，例如 book/s2_scaled_dot_product.html
    files: dict[str, int] = field(default_factory=dict)   # 网址（相对根目录）→ 传输字节

    @property
    def total(self) -> int:
        return sum(self.files.values())

    @property
    def without_images(self) -> int:
        """不算本页的图（_images/ 下的文件）。"""
        return sum(n for url, n in self.files.items() if not url.startswith(("_images/", "en/_images/")))


def site_pages(site: Path) -> list[str]:
    """网站里的内容页（中文版与 en/ 下的英文版），按目录顺序：首页之后是 book/ 下的各页。"""
    sys.path.insert(0, str(REPO / "tools"))
    from build_book import toc_pages

    pages = [p.relative_to(REPO).with_suffix(".html").as_posix() for p in toc_pages(REPO, REPO / "_toc.yml")]
    found = [p for p in pages if (site / p).is_file()]
    english = [f"en/{p}" for p in found if (site / "en" / p).is_file()]
    return found + english


def chromium_args() -> list[str]:
    return ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--no-first-run", "--disable-quic", "--disable-sync"]


class Meter:
    """在一个浏览器上下文（一份缓存）里打开页面，记下每一页新传输的文件与字节。"""

    def __init__(self, browser, base: str, width: int = 1280, height: int = 800):
        self.base = base
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page = self.context.new_page()
        self.cdp = self.context.new_cdp_session(self.page)
        self.cdp.send("Network.enable")
        self.urls: dict[str, str] = {}
        self.sizes: dict[str, int] = {}
        self.cdp.on("Network.requestWillBeSent", lambda e: self.urls.__setitem__(e["requestId"], e["request"]["url"]))
        self.cdp.on("Network.loadingFinished",
                    lambda e: self.sizes.__setitem__(e["requestId"], self.sizes.get(e["requestId"], 0)
                                                     + int(e.get("encodedDataLength", 0))))

    def visit(self, page: str) -> Visit:
        self.urls.clear()
        self.sizes.clear()
        self.page.goto(self.base + page, wait_until="load")
        self.page.wait_for_load_state("networkidle")
        visit = Visit(page)
        for request_id, size in self.sizes.items():
            url = self.urls.get(request_id, "?")
            if size > 0 and not url.startswith("data:"):
                key = url.removeprefix(self.base).split("#")[0]
                visit.files[key] = visit.files.get(key, 0) + size
        return visit

    def fresh_cache(self) -> None:
        """回到空白页、清空浏览器的 HTTP 缓存：下一次 visit 像第一次来的读者那样取每一个文件。"""
        self.page.goto("about:blank")
        self.cdp.send("Network.clearBrowserCache")

    def close(self) -> None:
        self.context.close()


def measure(site: Path, pages: list[str] | None = None) -> dict[str, dict]:
    """{页: {"first": Visit, "repeat": Visit}}：每一页的首次访问与再次访问（见模块说明）。"""
    from playwright.sync_api import sync_playwright

    pages = pages or site_pages(site)
    results: dict[str, dict] = {p: {} for p in pages}
    with GzipSite(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=chromium_args())
        try:
            reader = Meter(browser, base)
            for page in pages:                      # 同一份缓存：先把每一页读一遍
                reader.visit(page)
            for page in pages:                      # 再次访问
                results[page]["repeat"] = reader.visit(page)
            reader.close()
            meter = Meter(browser, base)            # 每页一份全新的缓存：先清空浏览器缓存、回到空白页，再打开这一页
            for page in pages:                      # （同一个上下文，不必每页起一个新的渲染进程；量到的字节与每页
                meter.fresh_cache()                 # 开一个新上下文时相同，只有 favicon 在两种办法下都时有时无）
                results[page]["first"] = meter.visit(page)
            meter.close()
        finally:
            browser.close()
    return results


def has_interactive_figure(site: Path, page: str) -> bool:
    return 'class="interactive-figure"' in (site / page).read_text(encoding="utf-8")


def is_text_page(site: Path, page: str) -> bool:
    """纯文字的页：没有交互图，正文里也没有图（_images/ 下的文件）。"""
    text = (site / page).read_text(encoding="utf-8")
    return 'class="interactive-figure"' not in text and "_images/" not in text


def budget_problems(site: Path, results: dict[str, dict]) -> list[str]:
    """超出预算的页面，一页一行（空表示都在预算内）。"""
    problems = []
    for page, r in results.items():
        first, repeat = r["first"].total, r["repeat"].without_images
        if first > FIRST_VISIT_ANY:
            problems.append(f"{page}: 首次访问 {first / KB:.0f} KB > {FIRST_VISIT_ANY / KB:.0f} KB")
        if is_text_page(site, page):
            if first > FIRST_VISIT_TEXT:
                problems.append(f"{page}: 首次访问 {first / KB:.0f} KB > {FIRST_VISIT_TEXT / KB:.0f} KB（纯文字的页）")
            if repeat > REPEAT_VISIT_TEXT and not page.endswith(LONG_REFERENCE_PAGES):
                problems.append(f"{page}: 再次访问 {repeat / KB:.1f} KB > {REPEAT_VISIT_TEXT / KB:.0f} KB（纯文字的页）："
                                + ", ".join(f"{u} {n / KB:.1f} KB" for u, n in sorted(
                                    r["repeat"].files.items(), key=lambda x: -x[1])[:5]))
    return problems


def report(site: Path, results: dict[str, dict], top: int = 0) -> str:
    lines = [f"{'页面':<44} {'首次访问':>10} {'再次访问':>9} {'其中的图':>9}  页面"]
    for page, r in results.items():
        mark = "交互图" if has_interactive_figure(site, page) else "纯文字" if is_text_page(site, page) else "有图"
        images = r["repeat"].total - r["repeat"].without_images
        lines.append(f"{page:<46} {r['first'].total / KB:>8.1f} KB {r['repeat'].total / KB:>7.1f} KB "
                     f"{images / KB:>7.1f} KB  {mark}")
        for url, size in sorted(r["first"].files.items(), key=lambda x: -x[1])[:top]:
            lines.append(f"    {size / KB:>8.1f} KB  {url}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=REPO / "_build" / "html")
    parser.add_argument("--json", type=Path, default=None, help="把每页每个文件的字节数写成 JSON")
    parser.add_argument("--top", type=int, default=0, help="每页列出首次访问最大的几个文件")
    parser.add_argument("pages", nargs="*", help="只测这几页（相对网站根目录），默认全部")
    args = parser.parse_args(argv)
    site = args.site.resolve()
    results = measure(site, args.pages or None)
    print(report(site, results, args.top))
    if args.json:
        args.json.write_text(json.dumps({p: {k: v.files for k, v in r.items()} for p, r in results.items()},
                                        ensure_ascii=False, indent=1), encoding="utf-8")
    problems = budget_problems(site, results)
    for line in problems:
        print("超出预算：" + line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
