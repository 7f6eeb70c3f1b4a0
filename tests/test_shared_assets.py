"""英文版并进中文网站（en/）时，两种语言逐字节相同的静态文件只留一份（tools/build_book.py 的 sync_tree）。

单元测试：在临时目录里搭两个小“网站”，不构建书。
"""

from __future__ import annotations

from support.book import build_book


def make_site(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_identical_static_files_are_shared_and_pages_point_to_the_root_copy(tmp_path):
    site, english = tmp_path / "html", tmp_path / "en-build"
    make_site(site, {"_static/theme.css": "same", "_static/lang.js": "zh", "book/a.html": "zh page"})
    make_site(english, {
        "_static/theme.css": "same", "_static/lang.js": "en",
        "book/a.html": '<link href="../_static/theme.css?v=1"><script src="../_static/lang.js"></script>',
        "index.html": '<link href="_static/theme.css">',
    })
    build_book.sync_tree(english, site / "en", shared=site)
    assert not (site / "en" / "_static" / "theme.css").exists()        # 只有网站根目录那一份
    assert (site / "en" / "_static" / "lang.js").read_text() == "en"     # 内容不同的照样复制
    page = (site / "en" / "book" / "a.html").read_text()
    assert 'href="../../_static/theme.css?v=1"' in page and 'src="../_static/lang.js"' in page
    assert (site / "en" / "index.html").read_text() == '<link href="../_static/theme.css">'
    # 英文版自己的构建不动：单独拿出来照样能用
    assert (english / "_static" / "theme.css").is_file()
    assert 'href="../_static/theme.css?v=1"' in (english / "book" / "a.html").read_text()


def test_a_second_sync_writes_nothing_and_a_changed_root_file_is_copied_again(tmp_path):
    site, english = tmp_path / "html", tmp_path / "en-build"
    make_site(site, {"_static/theme.css": "same"})
    make_site(english, {"_static/theme.css": "same", "page.html": '<link href="_static/theme.css">'})
    assert build_book.sync_tree(english, site / "en", shared=site) == 1
    assert build_book.sync_tree(english, site / "en", shared=site) == 0
    (site / "_static" / "theme.css").write_text("changed", encoding="utf-8")  # 中文版的这一份变了
    build_book.sync_tree(english, site / "en", shared=site)
    assert (site / "en" / "_static" / "theme.css").read_text() == "same"
    assert (site / "en" / "page.html").read_text() == '<link href="_static/theme.css">'
