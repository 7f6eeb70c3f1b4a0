"""book_math 与 book_assets 里不依赖构建的部分（单元测试，不构建书）。

在构建出的网站上的检查见 test_formulas.py（公式）与 test_page_weight.py（每页下载多少）。
"""

from __future__ import annotations

import subprocess
import sys

from support.book import REPO

sys.path.insert(0, str(REPO / "book" / "_ext"))
import book_assets  # noqa: E402
import book_math  # noqa: E402


def test_multiline_blocks_are_wrapped_like_sphinx_does_for_mathjax():
    assert book_math.wrap_like_sphinx("a + b") == "a + b"
    assert book_math.wrap_like_sphinx("x &= 1 \\\\\ny &= 2") == "\\begin{split}x &= 1 \\\\\ny &= 2\\end{split}"
    two = book_math.wrap_like_sphinx("a = 1\n\nb = 2")
    assert two == "\\begin{aligned}a = 1\\\\b = 2\\end{aligned}"


def test_wrapped_blocks_render_in_the_locked_katex():
    """包好的多行公式，npm 锁里的 KaTeX 排得出来（不包就排不出来：这正是要包的原因）。"""
    katex = book_math.find_katex(REPO)
    assert katex is not None, "没有 node_modules/katex：先 make setup"
    script = ("const k = require(process.argv[1]); const ok = t => { try { k.renderToString(t, "
              "{displayMode: true, throwOnError: true}); return 'ok'; } catch (e) { return 'error'; } };"
              "console.log(ok(process.argv[2]), ok(process.argv[3]));")
    raw = "x' &= x + 1 \\\\\ny &= x'"
    out = subprocess.run(["node", "-e", script, str(katex / "dist" / "katex.min.js"), raw,
                          book_math.wrap_like_sphinx(raw)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["error", "ok"]


def test_katex_css_keeps_only_woff2_and_swaps_fonts():
    css = ('@font-face{font-family:KaTeX_AMS;src:url(fonts/A.woff2) format("woff2"),url(fonts/A.woff) '
           'format("woff"),url(fonts/A.ttf) format("truetype")}.katex{x:1}')
    out = book_math.woff2_only(css)
    assert out == ('@font-face{font-display:swap;font-family:KaTeX_AMS;src:url(fonts/A.woff2) format("woff2")}'
                   '.katex{x:1}')


def test_katex_is_found_above_the_book_or_on_node_path(tmp_path):
    package = tmp_path / "modules" / "katex" / "dist"
    package.mkdir(parents=True)
    (package / "katex.min.js").write_text("", encoding="utf-8")
    book = tmp_path / "a" / "b"
    book.mkdir(parents=True)
    assert book_math.find_katex(book) is None
    assert book_math.find_katex(book, str(tmp_path / "modules")) == package.parent
    (tmp_path / "node_modules").symlink_to(tmp_path / "modules")
    assert book_math.find_katex(book) == package.parent


def test_icon_codepoints_are_read_from_the_theme_rules():
    css = '.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}.fa-sun:before{content:"\\f185"}'
    assert book_assets.icon_codepoints(css) == {"bars": 0xF0C9, "navicon": 0xF0C9, "sun": 0xF185}
