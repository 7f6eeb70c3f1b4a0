"""页面的公共设置：每一页的第一个（隐藏的）代码单元调用 `setup_notebook()`。

集中在这里，改图的输出格式、字体只需改一处。
"""

from __future__ import annotations


def setup_notebook() -> None:
    """让 matplotlib 图同时输出 SVG（网页用，矢量、清晰）和 PDF（PDF 版用，矢量），
    并装载中文字体（`minigpt.plots.setup_chinese_font`），避免 "Glyph missing" 警告。

    matplotlib 的全局设置只在这里改；导入 `minigpt.plots` 本身不改任何设置。
    """
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    from minigpt import plots

    plots.setup_chinese_font()
    set_matplotlib_formats("svg", "pdf")

