"""供人查看的截图（make screenshots）：make test 不截，见下面的说明。"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# 截图是给人看的，不是检查：整页截图每张要一个多 CPU 秒（Chromium 把整页从头画到尾、再编码成 PNG），
# 全书浅色、深色各一张就是 30 多 CPU 秒。所以 make test 不截；要看时运行 make screenshots
# （即设环境变量 BOOK_SCREENSHOTS=1 跑浏览器测试），截图存到 <构建目录>/_build/screenshots/。
SCREENSHOTS_ENV = "BOOK_SCREENSHOTS"


@dataclass
class Screenshots:
    folder: Path
    enabled: bool

    def page(self, tab_page, name: str, full_page: bool = True, always: bool = False) -> None:
        """把页面存成 name（默认整页）；不要截图时什么都不做，除非 always（测试失败时留给人看的那一张）。"""
        if self.enabled or always:
            self.folder.mkdir(parents=True, exist_ok=True)
            tab_page.screenshot(path=str(self.folder / name), full_page=full_page)

    def element(self, locator, name: str) -> None:
        """只截页面上的一个元素（交互图）；不要截图时什么都不做。"""
        if self.enabled:
            self.folder.mkdir(parents=True, exist_ok=True)
            locator.screenshot(path=str(self.folder / name))


def screenshots_wanted(environ=os.environ) -> bool:
    """BOOK_SCREENSHOTS 设为非空、也不是 0 时截图（与 BOOK_KERNEL_PRELOAD=0 一样，0 表示关）。"""
    return environ.get(SCREENSHOTS_ENV, "") not in ("", "0")
