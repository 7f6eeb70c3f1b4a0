"""学生版网站（tools/build_book.py --student，见「教师指南」）：作业页的参考答案从网站的每一处消失，其余照旧。

参考答案的“指纹”取自作业页的源文件：解答指令（solution-start … solution-end）里的每一行，去掉学生版笔记本
（初始代码）和其他页面里也有的行，剩下的只属于参考答案。整本书的网站里找得到它们（所以这项检查会失败），
学生版网站的任何文件里——网页、检索索引、.md 源文件、读者笔记本、两个 zip 里的文件——都找不到。
"""

from __future__ import annotations

import html
import posixpath
import sys
import zipfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from bs4 import BeautifulSoup

from support.book import REPO, toc_docnames
from support.pagekit import soup

sys.path.insert(0, str(REPO / "book" / "_ext"))
sys.path.insert(0, str(REPO / "tools"))
import book_exercises  # noqa: E402
import dist  # noqa: E402  make html 发布学生版网站 zip 的那个函数

TEXT_SUFFIXES = (".html", ".js", ".md", ".txt", ".ipynb", ".json")


def solution_lines(root: Path = REPO) -> set[str]:
    """只在作业页的参考答案里出现的行（代码与文字）。root 是书的根目录（英文版：生成的 _build/en/）。"""
    page = (root / "book" / "homework.md").read_text(encoding="utf-8")
    kept = book_exercises.strip_solutions(page)
    removed = [m.group(0) for m in book_exercises.SOLUTION_SOURCE.finditer(page)]
    assert removed and len(kept) < len(page), "作业页上找不到解答指令"
    elsewhere = [kept, (root / "book" / "homework_student.ipynb").read_text(encoding="utf-8")]
    elsewhere += [p.read_text(encoding="utf-8") for p in (root / "book").glob("*.md") if p.name != "homework.md"]
    lines = {line.strip() for block in removed for line in block.splitlines()}
    return {line for line in lines
            if len(line) >= 12 and not line.startswith(("```", ":::", ":class:", "#"))
            and not any(line in text for text in elsewhere)}


def texts(site: Path):
    """网站里每个文本文件（连同 zip 里的）：(名字, 文字)。"""
    for path in sorted(p for p in site.rglob("*") if p.is_file()):
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as zf:
                for name in zf.namelist():
                    if name.endswith(TEXT_SUFFIXES):
                        yield f"{path.name}:{name}", zf.read(name).decode("utf-8", errors="ignore")
        elif path.suffix in TEXT_SUFFIXES:
            yield path.relative_to(site).as_posix(), path.read_text(encoding="utf-8", errors="ignore")


def found(site: Path, lines: set[str]) -> dict[str, set[str]]:
    hits: dict[str, set[str]] = {}
    for name, text in texts(site):
        unescaped = html.unescape(text)
        for line in lines:
            if line in text or line in unescaped:
                hits.setdefault(name, set()).add(line)
    return hits


def test_strip_solutions_removes_gated_and_plain_solution_directives_and_nothing_else():
    text = ("前\n\n```{solution-start} ex\n:class: dropdown\n```\n答案文字\n\n```{code-cell} ipython3\nx = 1\n```\n\n"
            "```{solution-end}\n```\n中\n\n:::{solution} ex2\n另一个答案\n:::\n后\n")
    note = book_exercises.HIDDEN_NOTE
    assert book_exercises.strip_solutions(text) == f"前\n\n{note}\n中\n\n{note}\n后\n"


@pytest.mark.book
def test_the_student_site_has_no_solution_text_anywhere_and_the_full_site_has_it(built_book, student_site):
    lines = solution_lines()
    assert len(lines) >= 5, lines
    full = found(built_book.html, lines)
    assert "book/homework.html" in full and set().union(*full.values()) == lines, "整本书的网站里应当有每一行参考答案"
    assert found(student_site.html, lines) == {}


@pytest.mark.book
def test_the_english_student_site_has_no_solution_text_anywhere_and_the_english_site_has_it(built_site,
                                                                                           student_site):
    lines = solution_lines(built_site.root / "_build" / "en")
    assert len(lines) >= 5, lines
    full = found(built_site.html / "en", lines)
    assert "book/homework.html" in full and set().union(*full.values()) == lines, "英文网站里应当有每一行参考答案"
    english = student_site.html / "en"
    assert (english / "book" / "homework.html").is_file() and (english / "minigpt-homework.zip").is_file()
    assert 'lang="en"' in (english / "book" / "homework.html").read_text(encoding="utf-8")
    assert found(english, lines) == {}


@pytest.mark.book
def test_the_student_site_keeps_every_page_exercise_and_starter_cell(built_book, student_site):
    missing = [d for d in toc_docnames() if not (student_site.html / f"{d}.html").is_file()]
    assert missing == []
    full, student = soup(built_book.html / "book" / "homework.html"), soup(student_site.html / "book" / "homework.html")
    assert student.select("div.solution") == [] and len(full.select("div.solution")) >= 3
    notes = [p.get_text(strip=True) for p in student.select("article p.solution-hidden")]
    assert notes == [book_exercises.HIDDEN_NOTE] * len(full.select("div.solution"))
    assert [e.get("id") for e in student.select("div.exercise")] == [e.get("id") for e in full.select("div.exercise")]
    starters = [c.get("class") for c in full.select("div.cell") if any(k.startswith("tag_hw-starter-") for k in c["class"])]
    assert starters and starters == [c.get("class") for c in student.select("div.cell")
                                     if any(k.startswith("tag_hw-starter-") for k in c["class"])]
    assert (student_site.html / "minigpt-homework.zip").is_file()


@pytest.mark.book
def test_the_student_build_is_hide_solutions_on_top_of_the_books_own_config(student_site):
    import yaml

    generated = yaml.safe_load((student_site.root / "_build" / "student-config.yml").read_text(encoding="utf-8"))
    own = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    assert generated["sphinx"]["config"].pop("hide_solutions") is True
    # 学生版自己的 PDF 没建好时（make test 只建网站），学生版不链接 PDF（见下一个测试）；建好了（make html）才链接
    import build_book

    ready = build_book.student_pdf_ready(student_site.root / "_build")
    assert generated["sphinx"]["config"].pop("book_pdf_offered", True) is ready
    assert {k: Path(v) for k, v in generated["sphinx"].pop("local_extensions").items()} == {
        k: (REPO / v).resolve() for k, v in own["sphinx"].pop("local_extensions").items()}
    assert generated == own


def dead_local_links(zf: zipfile.ZipFile) -> dict[str, list[str]]:
    """zip 里每一页（主题放进 _static/ 的 Jinja 模板片段不是页面）的 href/src 中，指向本地却在 zip 里找不到的：
    {目标: [链接它的页面]}。外部地址、页内锚点、data: 与 mailto: 不算。"""
    names = set(zf.namelist())
    dead: dict[str, list[str]] = {}
    for name in sorted(names):
        if not name.endswith(".html") or "/_static/" in name:
            continue
        for tag in BeautifulSoup(zf.read(name).decode("utf-8"), "html.parser").select("[href], [src]"):
            for attr in ("href", "src"):
                url = tag.get(attr)
                if not url or url.startswith(("#", "data:", "mailto:", "javascript:")):
                    continue
                parts = urlsplit(url)
                if parts.scheme or parts.netloc or not parts.path:
                    continue
                target = posixpath.normpath(posixpath.join(posixpath.dirname(name), unquote(parts.path)))
                if target not in names and f"{target}/index.html" not in names:
                    dead.setdefault(target, []).append(name)
    return dead


@pytest.mark.book
def test_every_local_link_of_the_published_student_site_zip_resolves_inside_the_zip(student_site, tmp_path):
    """make html 发布的学生版网站 zip（dist.publish_student_site，两种语言）离线打开时没有死链接：每一页的每个本地
    href/src 都在 zip 里。make test 只建学生版网站、不建它的 PDF：那时“整本书 PDF”不该出现在任何一页上；
    make html 建了学生版的 PDF：那时 zip 里有它，页面链接它。"""
    import build_book

    ready = build_book.student_pdf_ready(student_site.root / "_build")
    published = dist.publish_student_site(student_site.html, tmp_path)
    with zipfile.ZipFile(published) as zf:
        pages = [n for n in zf.namelist() if n.endswith(".html") and "/_static/" not in n]
        assert any("/en/book/" in n for n in pages) and any("/book/" in n and "/en/" not in n for n in pages)
        assert dead_local_links(zf) == {}
        assert any(n.endswith(".pdf") for n in zf.namelist()) is ready
        assert any("book-pdf-link" in zf.read(n).decode("utf-8") for n in pages) is ready


def test_the_student_site_offers_the_book_pdf_only_once_its_own_pdf_is_built(tmp_path):
    """学生版网站的“整本书 PDF”：构建脚本只在学生版自己的 PDF 成功建好之后才让网站链接它（make html、make dist
    都先建 PDF），否则配置里写 book_pdf_offered: false，下载菜单就没有这一项。"""
    import types

    import yaml
    sys.path.insert(0, str(REPO / "tools"))
    import book_downloads
    import build_book

    assert not build_book.student_pdf_ready(tmp_path)
    (tmp_path / "latex").mkdir()
    (tmp_path / "latex" / "book.pdf").write_bytes(b"%PDF-")
    assert not build_book.student_pdf_ready(tmp_path)  # 上一次 PDF 构建没有成功
    (tmp_path / ".last-pdflatex-ok").write_text("x\n")
    assert build_book.student_pdf_ready(tmp_path)

    def offered(offer_pdf: bool):
        config = yaml.safe_load(build_book.write_student_config(REPO, tmp_path, offer_pdf).read_text(encoding="utf-8"))
        return config["sphinx"]["config"].get("book_pdf_offered", True)

    assert offered(True) is True and offered(False) is False

    def menu(offer: bool) -> list[str]:
        app = types.SimpleNamespace(config=types.SimpleNamespace(book_pdf_offered=offer, book_pdf_on_site="b.pdf"))
        context = {"header_buttons": [{"label": "download-buttons", "buttons": []}],
                   "pathto": lambda name, _: name}
        book_downloads.chinese_download_menu(app, "index", "page.html", context, None)
        return [b["label"] for b in context["header_buttons"][0]["buttons"]]

    assert menu(True) == ["download-book-pdf-button"] and menu(False) == []


def test_student_pages_do_not_point_search_engines_to_the_full_site(built_book, student_site):
    """r36t2 第 11 条：学生版网站的网页不带指向完整网站（有参考答案）的 og:url、hreflang 和 canonical，
    也没有列着完整网站网址的 sitemap.xml；语言切换按钮是相对链接，照旧。完整网站保留它们。"""
    pointing = ('property="og:url"', 'rel="alternate" hreflang=', 'rel="canonical"')
    pages = sorted(student_site.html.rglob("*.html"))
    assert len(pages) > 20
    bad = {p.relative_to(student_site.html).as_posix(): [m for m in pointing if m in p.read_text(encoding="utf-8")]
           for p in pages}
    assert {k: v for k, v in bad.items() if v} == {}
    assert not (student_site.html / "sitemap.xml").exists() and not (student_site.html / "en" / "sitemap.xml").exists()
    assert 'class="book-edition-switch"><a href="../en/book/homework.html"' in \
        (student_site.html / "book" / "homework.html").read_text(encoding="utf-8")
    full = (built_book.html / "book" / "homework.html").read_text(encoding="utf-8")
    assert all(m in full for m in pointing) and (built_book.html / "sitemap.xml").is_file()
