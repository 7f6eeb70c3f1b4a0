"""书页用 literalinclude 原样展示 src/minigpt 的源码：每一行都要放得进印刷页面。

HTML 的代码栏约 90 列，PDF 约 80 列；这里取 86 个显示列为上限。
中文字符和全角标点（，。：（）「」等）在等宽字体里占两列，
所以按 unicodedata.east_asian_width 为 W / F 的字符记 2 列来计算宽度。
"""

import re
import unicodedata
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "minigpt"
MAX_COLUMNS = 86


def display_width(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def test_display_width_counts_cjk_as_two_columns():
    assert display_width("abc") == 3
    assert display_width("中文") == 4
    assert display_width("（，。：）「」") == 14
    assert display_width("x: [batch, seq]，形状") == 15 + 2 + 4


def test_package_source_fits_the_printed_page():
    files = sorted(PACKAGE.glob("*.py"))
    assert files, f"在 {PACKAGE} 下没有找到源文件"
    too_wide = [
        f"{path.name}:{number}（{display_width(line)} 列）：{line.strip()[:40]}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if display_width(line) > MAX_COLUMNS
    ]
    assert not too_wide, (
        f"{len(too_wide)} 行超过 {MAX_COLUMNS} 个显示列（中文记 2 列），"
        "在书页里会被截断或需要横向滚动：\n" + "\n".join(too_wide)
    )


# ---- 英文版：译过的注释、文档字符串与字符串也要放得进同样的宽度 ----------------------------------------

def shown_modules() -> list[Path]:
    """书页用 literalinclude 展示的 src/minigpt 模块（读者在网页与 PDF 上读到的源码）。"""
    pages = (PACKAGE.parents[1] / "book").glob("*.md")
    names = {m for page in pages
             for m in re.findall(r"literalinclude\}\s+\.\./src/minigpt/(\w+\.py)", page.read_text(encoding="utf-8"))}
    return [PACKAGE / name for name in sorted(names)]


def test_english_package_source_fits_the_printed_page():
    """英文版的源码由 tools/i18n.py 从中文源码换掉注释与字符串得来：书页展示的模块，英文的每一行也不超过 MAX_COLUMNS。"""
    import sys

    sys.path.insert(0, str(PACKAGE.parents[1] / "tools"))
    import i18n

    tr = i18n.Translator(PACKAGE.parents[1])
    files = shown_modules()
    assert len(files) >= 5, f"书页展示的模块只找到 {[f.name for f in files]}：literalinclude 的写法变了？"
    too_wide = [
        f"{path.name}:{number}（{display_width(line)} 列）：{line.strip()[:60]}"
        for path in files
        for number, line in enumerate(tr.file(path, "py", {}).splitlines(), 1)
        if display_width(line) > MAX_COLUMNS
    ]
    assert tr.missing == [], tr.missing[:5]
    assert not too_wide, (
        f"英文版有 {len(too_wide)} 行超过 {MAX_COLUMNS} 列（缩短 locale/en/LC_MESSAGES/code.po 里的译文）：\n"
        + "\n".join(too_wide)
    )
