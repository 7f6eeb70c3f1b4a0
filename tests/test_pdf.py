"""PDF 版（XeLaTeX）的检查：中文字体不缺字、每一页都在、执行出的数字与图都在、代码不出版心、
链接与书签可用、中文的“目录 / 第 N 节 / 图 N”，以及网站上的下载副本。

PDF 由 tools/build_book.py --builder pdflatex 构建一次（conftest 的 built_pdf，英文版是 built_pdf_en），
输出到仓库的 _build：它紧接在 HTML 的构建之后，共用 _build/.doctrees 和执行缓存，页面不再执行第二遍。

开发时可设 BOOK_PREBUILT=<--out 目录>（conftest），改用那里已有的 HTML 与 PDF 构建。
"""

from __future__ import annotations

import re
import subprocess
import unicodedata
from functools import cache
from pathlib import Path

import pytest
import yaml

from support import golden as G
from support.book import REPO, build_book, run_build, toc_docnames
from support.pagekit import load_path

pytestmark = [pytest.mark.book, pytest.mark.pdf]  # 要构建整本书（HTML 与 PDF）

PDF_ON_SITE = build_book.pdf_on_site(REPO)  # _config.yml 的 book_pdf_on_site
# 书里几个由代码算出、正文反复引用的数字（种子 42，见 shared/NOTES.md “The source's own numbers”）：
# 它们必须出现在 PDF 里。其余执行页面的数字从同一次构建的 HTML 输出里取（见 test_every_executed_page…）。
KEY_NUMBERS = {
    "book/s1_intuition": G.S1_X_4F[0][0],             # X[0, 0]
    "book/s2_scaled_dot_product": G.S2_WEIGHTS_4F[0][0],
    "book/appendix_rnn": G.AP_RNN_LOSS_6F,
}
NUMBER = re.compile(r"-?\d+\.\d{3,}")


# ---------------------------------------------------------------- 构建与读取

@pytest.fixture(scope="session")
def latex_dir(built_pdf) -> Path:
    return built_pdf.root / "_build" / "latex"


@pytest.fixture(scope="session")
def pdf(latex_dir) -> Path:
    path = latex_dir / "book.pdf"
    assert path.is_file(), f"没有 {path}"
    return path


@pytest.fixture(scope="session")
def log(latex_dir) -> str:
    return (latex_dir / "book.log").read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="session")
def tex(latex_dir) -> str:
    return (latex_dir / "book.tex").read_text(encoding="utf-8")


def run(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


@cache
def _pdftotext(pdf: Path, first: int | None = None, last: int | None = None) -> str:
    pages = [] if first is None else ["-f", str(first), "-l", str(last or first)]
    return run("pdftotext", "-enc", "UTF-8", *pages, str(pdf), "-")


def squash(text: str) -> str:
    """去掉所有空白（pdftotext 会在中西文之间、换行处插入空格和换行），并做 NFKC（连字 ﬁ → fi）。

    Sphinx 把 ✔ 写成 LaTeX 的 \\checkmark，PDF 里取出来是 ✓。
    """
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text)).replace("✔", "✓")


@pytest.fixture(scope="session")
def text(pdf) -> str:
    return squash(_pdftotext(pdf))


def page_texts(pdf: Path) -> list[str]:
    """每一页的文字（pdftotext 用换页符分页）。"""
    return _pdftotext(pdf).split("\f")


# ---------------------------------------------------------------- 目录与页面

def page_title(docname: str) -> str:
    """页面的第一个一级标题（跳过 jupytext 头和代码块）。"""
    in_fence = False
    for line in (REPO / f"{docname}.md").read_text(encoding="utf-8").split("\n---", 2)[-1].splitlines():
        if line.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and line.startswith("# "):
            return line[2:].strip()
    raise AssertionError(f"{docname}.md 没有一级标题")


def is_notebook_page(docname: str) -> bool:
    text = (REPO / f"{docname}.md").read_text(encoding="utf-8")
    head = text.split("\n---", 1)[0] if text.startswith("---") else ""
    return "kernelspec:" in head


def html_facts(html_dir: Path, docname: str):
    """同一次构建里这一页的 HTML 正文（pagekit）：图片、代码单元输出与 glue 进正文的文字、解答。"""
    return load_path(html_dir / f"{docname}.html")


def tex_by_doc(tex: str) -> dict[str, str]:
    """把 book.tex 按页面切开：每页从它的 \\label{...::doc} 开始（Sphinx 在每页开头写这个标签）。"""
    marks = [(m.start(), m.group(1)) for m in re.finditer(r"\\label\{\\detokenize\{([^}]*)::doc\}\}", tex)]
    return {doc: tex[start:(marks[i + 1][0] if i + 1 < len(marks) else len(tex))]
            for i, (start, doc) in enumerate(marks)}


# ---------------------------------------------------------------- 日志

def missing_characters(log: str) -> list[str]:
    return sorted(set(re.findall(r"Missing character: There is no (.+?) in font", log)))


def overfull_boxes(log: str) -> list[tuple[float, int, int]]:
    """日志里的每个 Overfull \\hbox：(超出多少 pt, 起始行, 结束行)，行号是 book.tex 的行号。"""
    boxes = []
    pattern = r"Overfull \\hbox \(([\d.]+)pt too wide\) (?:in paragraph at lines (\d+)--(\d+)|detected at line (\d+))"
    for m in re.finditer(pattern, log):
        first = int(m.group(2) or m.group(4))
        last = int(m.group(3) or m.group(4))
        boxes.append((float(m.group(1)), first, last))
    return boxes


def bookmark_titles(out_file: str) -> list[str]:
    """hyperref 的 .out 文件（PDF 书签）里的标题：UTF-16BE，字节写成 \\ooo 或原样的 ASCII。"""
    titles = []
    for m in re.finditer(r"\\BOOKMARK \[-?\d+\]\[-\]\{[^}]*\}\{(.*)\}\{[^}]*\}% \d+", out_file):
        raw = bytearray()
        for octal, char in re.findall(r"\\([0-7]{3})|(.)", m.group(1)):
            raw.append(int(octal, 8) if octal else ord(char))
        titles.append(bytes(raw).decode("utf-16") if raw[:2] == b"\xfe\xff" else raw.decode("latin-1"))
    return titles


# ---------------------------------------------------------------- 解析函数自己的测试（不需要构建）

def _mtimes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_a_second_make_html_with_nothing_changed_writes_nothing(built_pdf, built_site, built_pdf_en):
    """make html 的两步（网站、PDF）在什么都没改时再跑一遍：不启动 Sphinx、不启动 XeLaTeX，
    _build/html 下每个文件和 _build/latex/book.pdf 的修改时间都不变。
    （英文版的网站与 PDF 也先构建好：它们写进 _build/html/en/，别让另一个工作进程的构建算到这里。）"""
    build_dir = built_pdf.root / "_build"
    out = [] if built_pdf.root == REPO else ["--out", str(built_pdf.root)]
    before = _mtimes(build_dir / "html"), (build_dir / "latex" / "book.pdf").stat().st_mtime_ns
    for builder in ("html", "pdflatex"):
        again = run_build(REPO, "--builder", builder, *out)
        assert again.returncode == 0, again.output[-4000:]
        assert "没有改动" in again.output, again.output[-4000:]
        assert "jupyter-book build" not in again.output and "XeLaTeX" not in again.output
    after = _mtimes(build_dir / "html"), (build_dir / "latex" / "book.pdf").stat().st_mtime_ns
    assert after[1] == before[1], "book.pdf 被重写了"
    changed = sorted(name for name in set(before[0]) | set(after[0]) if before[0].get(name) != after[0].get(name))
    assert not changed, f"空操作构建改动了这些文件：{changed[:20]}"


def test_log_and_layout_parsers_find_what_they_look_for():
    """下面的检查所用的解析函数，对人造的日志 / 词框能找出问题：确保 PDF 测试真的会失败。"""
    log = ("Missing character: There is no ᵀ (U+1D40) in font Foo!\n"
           "Overfull \\hbox (12.5pt too wide) in paragraph at lines 3--3\n"
           "Overfull \\hbox (1.0pt too wide) detected at line 9\n"
           "book_pdf: textblock left=71.13188pt,\n  width=455.24411pt, paperwidth=597.50787pt\n")
    assert missing_characters(log) == ["ᵀ (U+1D40)"]
    assert overfull_boxes(log) == [(12.5, 3, 3), (1.0, 9, 9)]
    left, right = text_block(log)
    assert (round(left, 1), round(right, 1)) == (70.9, 524.4)
    bbox = ('<page width="595" height="842">'
            '<word xMin="70.9" yMin="1" xMax="120.0" yMax="9">fits</word>'
            '<word xMin="500.0" yMin="1" xMax="531.0" yMax="9">标签，</word>'
            '<word xMin="501.3" yMin="1" xMax="581.9" yMax="9">{tuple(k.shape)}")</word>'
            '<word xMin="60.0" yMin="1" xMax="80.0" yMax="9">left</word></page>')  # 左边不查
    assert words_outside(bbox, right) == [(1, 57.5, '{tuple(k.shape)}")')]
    out = "\\BOOKMARK [0][-]{chapter.1}{\\376\\377\\000A\\000t\\116\\343\\170\\001}{}% 1\n"
    assert bookmark_titles(out) == ["At代码"]
    assert squash("Dot-\n Product ﬁ  1.92\n69 ✔") == "Dot-Productfi1.9269✓"


# ---------------------------------------------------------------- 字体与中文

def test_no_missing_characters(log):
    """缺字不会让 XeLaTeX 失败，只在日志里留一行 “Missing character”。"""
    assert not missing_characters(log), f"PDF 里缺字（字体里没有这些字符）：{missing_characters(log)}"


def test_cjk_fonts_are_embedded(pdf):
    fonts = run("pdffonts", str(pdf))
    for family in ("NotoSerifCJK", "NotoSansCJK"):
        assert family in fonts, f"PDF 没有嵌入 {family}：\n{fonts}"
    not_embedded = [line for line in fonts.splitlines()[2:] if line.split()[-5:-4] == ["no"]]
    assert not not_embedded, "有字体没有嵌入：\n" + "\n".join(not_embedded)


def test_title_page_has_chinese_title_and_author(pdf):
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    first = squash(_pdftotext(pdf, 1))
    assert squash(config["title"]) in first
    assert squash(config["author"]) in first
    info = run("pdfinfo", str(pdf))
    assert re.search(r"^Title:\s+" + re.escape(config["title"]) + "$", info, re.M), f"PDF 的标题元数据不对：\n{info}"
    assert re.search(r"^Author:\s+" + re.escape(config["author"]) + "$", info, re.M), f"PDF 的作者元数据不对：\n{info}"


ENGLISH_CHROME = ("CHAPTER", "Chapter", "Contents", "Index", "Release", "Bibliography", "Appendix", "Listing")


def test_chinese_chrome_not_english(pdf, text):
    """目录、章、页眉、文献表都是中文；没有 Sphinx 默认的英文字样（CHAPTER 1、Contents、Index、Release…）。"""
    pages = page_texts(pdf)
    assert "目录" in squash(pages[1]) and "Contents" not in pages[1], "第 2 页应是中文的“目录”"
    for number, page in enumerate(pages, 1):
        lines = [line.strip() for line in page.splitlines() if line.strip()]
        if not lines:
            continue
        header = lines[0]  # 页眉（或章首页的第一行）
        assert not any(word in header for word in ENGLISH_CHROME), f"第 {number} 页页眉是英文：{header!r}"
        for line in lines:
            assert not re.fullmatch(r"(?:CHAPTER|Chapter|Appendix)\s*[\dA-Z]*|Contents|Index|Bibliography|Release.*",
                                    line), f"第 {number} 页有英文的版式字样：{line!r}"
    assert "第1节" in text and "第1章" not in text, "正文的章应排成 “第 1 节”（正文引用它们时也这样叫）"
    headed = [p for p in pages if squash(p).startswith("第1节")]
    assert len(headed) >= 2, "第 1 节除了首页，其余页的页眉应以 “第 1 节 …” 开头"


def site_captions(built_pdf) -> dict[str, list[str]]:
    """网站上每页的图注、表题编号（“图 2.1”“表 A.1”），由 pagekit 从同一次构建的 HTML 读出。"""
    html = built_pdf.root / "_build" / "html"
    return {d: [c for c in load_path(html / f"{d}.html").captions if c[:1] in "图表"] for d in toc_docnames()}


# 图注、表题在 pdftotext 的原文里各起一行：“图 2.1 …”“表 A.1”。只认行首的编号（正文里的引用如
# “（含表 2.1）”说的可能是别人论文里的表），不先去空白：否则 “图 A.4” 会和下一行的坐标刻度连成一个数
CAPTION_NUMBER = re.compile(r"^[ \t]*([图表])[ \u00a0\u2009]?((?:[A-Z]\.|\d+\.)?\d+)(?![\d.])", re.M)


def test_figures_and_tables_are_numbered_as_on_the_site(built_pdf, pdf):
    """PDF 里图注、表题的编号与网站一致：网站上的每个编号 PDF 里都有一条以它开头的图注或表题，
    PDF 里也没有网站上没有的编号（LaTeX 自己编号，书的结构由 book_pdf.sty 与 book_appendix 调成和网站一样）。"""
    on_site = {squash(c) for captions in site_captions(built_pdf).values() for c in captions}
    assert on_site, "网站上一个图注都没有"
    in_pdf = {kind + number for kind, number in CAPTION_NUMBER.findall(_pdftotext(pdf))}
    assert on_site - in_pdf == set(), f"PDF 里缺这些编号：{sorted(on_site - in_pdf)}"
    assert in_pdf - on_site == set(), f"PDF 里有网站上没有的编号：{sorted(in_pdf - on_site)}"


def test_appendix_figures_carry_the_appendix_letter(built_pdf, pdf, tex):
    """附录的图、表在 PDF 里编号为 “图 A.1”“表 A.1”……，而且就印在附录那一章的页面上
    （那一页的页眉或章标题是附录的标题）。"""
    appendices = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"][
        "book_appendices"]
    pages = [squash(p) for p in page_texts(pdf)]
    for docname, letter in appendices.items():
        assert f"\\bookappendix{{{letter}}}" in tex, f"book.tex 里没有附录 {docname} 的 \\bookappendix"
        captions = site_captions(built_pdf)[docname]
        assert captions and all(re.fullmatch(rf"[图表] {letter}\.\d+", c) for c in captions), captions
        title = squash(page_title(docname))
        chunks = [c.strip() for c in load_path(built_pdf.root / "_build" / "html" / f"{docname}.html").chunks]
        chunks = [c for c in chunks if c]
        for caption in captions:
            # 找图注本身（编号接着图注文字的开头），不找正文里的引用：教师手册等处也会写 “图 A.6（附录）”
            text = chunks[chunks.index(caption) + 1]
            printed = squash(caption + text[:6])
            where = [i + 1 for i, page in enumerate(pages) if printed in page]
            assert where, f"PDF 里没有 {caption} 的图注（找的是 “{printed}”）"
            assert all(title in pages[i - 1] for i in where), (
                f"{caption} 印在第 {where} 页，其中有的页不属于附录“{page_title(docname)}”")


@pytest.mark.parametrize("edition", ["zh", "en"])
def test_appendix_equations_carry_the_appendix_letter(built_pdf, request, edition):
    """附录的公式在 PDF 里编号为 (A.1)、(A.2)……，与网站一致（不是接着全书的 (1)、(2)）。"""
    if edition == "en":
        request.getfixturevalue("built_pdf_en")  # 英文版的 PDF 只在要看它时才等它
    root = built_pdf.root / "_build" if edition == "zh" else built_pdf.root / "_build" / "en" / "_build"
    text = _pdftotext(root / "latex" / "book.pdf")
    appendices = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"][
        "book_appendices"]
    for docname, letter in appendices.items():
        count = len(re.findall(r"^:label:", (REPO / f"{docname}.md").read_text(encoding="utf-8"), re.M))
        assert count, f"{docname} 里没有编号的公式：这个测试量不到东西"
        numbers = set(re.findall(rf"^\(({letter}\.\d+)\)$", text, re.M))
        assert numbers == {f"{letter}.{n}" for n in range(1, count + 1)}, (edition, sorted(numbers))


# ---------------------------------------------------------------- 每一页、每一个数、每一张图

@pytest.mark.parametrize("docname", toc_docnames())
def test_every_page_title_is_in_the_pdf(docname, text):
    assert squash(page_title(docname)) in text, f"PDF 里没有 {docname} 的标题 “{page_title(docname)}”"


@pytest.mark.parametrize("docname", sorted(KEY_NUMBERS))
def test_key_numbers_are_in_the_pdf(docname, text, tex):
    """这个数印在 PDF 里，而且就在它那一页的那一章里（book.tex 按页面切开后，在那一页的部分里）。"""
    assert KEY_NUMBERS[docname] in text, f"PDF 里没有 {docname} 算出的 {KEY_NUMBERS[docname]}"
    assert KEY_NUMBERS[docname] in tex_by_doc(tex)[docname], f"{KEY_NUMBERS[docname]} 不在 PDF 的 {docname} 一章里"


@pytest.mark.parametrize("docname", [d for d in toc_docnames() if is_notebook_page(d)])
def test_every_executed_page_shows_its_numbers(docname, built_pdf, text, tex):
    """同一次构建的 HTML 里，这页代码输出（和 glue 进正文）的小数，PDF 里都要有。"""
    facts = html_facts(built_pdf.root / "_build" / "html", docname)
    numbers = sorted(set(NUMBER.findall(" ".join(facts.outputs))))
    if not numbers:  # 输出里没有小数的页面（如首页的版本号）：改查输出里的每个词
        numbers = sorted(set(re.findall(r"[A-Za-z0-9][A-Za-z0-9.+]{3,}", " ".join(facts.outputs))))
    if not numbers:  # 也没有长一点的词（如教师指南打印的分值）：查输出里的每个整数
        numbers = sorted(set(re.findall(r"\d+", " ".join(facts.outputs))))
    assert numbers, f"{docname} 是执行的页面，HTML 里却没有任何输出"
    # 折行的代码行：断点处印一个 ␣（断在空格处）、下一行开头一个 ↪（pdftotext 取出来是 “,→”）
    unwrapped = text.replace("␣", "").replace(",→", "")
    missing = [n for n in numbers if n not in unwrapped]
    assert not missing, f"{docname}：HTML 输出里的这些数 PDF 里没有：{missing[:20]}（共 {len(numbers)} 个）"
    # 而且在这一页自己的那一章里（不是碰巧在别的章出现）：book.tex 里这一页的部分
    chapter = tex_by_doc(tex)[docname]
    elsewhere = [n for n in numbers if n.lstrip("-") not in chapter]
    assert not elsewhere, f"{docname}：这些数不在 PDF 的这一章里：{elsewhere[:20]}"


@pytest.mark.parametrize("docname", toc_docnames())
def test_every_figure_is_in_the_pdf(docname, built_pdf, tex, log, latex_dir):
    """HTML 里这页有几张图，LaTeX 里这页就有几个 \\includegraphics；图是矢量 PDF，并被 XeLaTeX 读入。"""
    html_images = [src for src in html_facts(built_pdf.root / "_build" / "html", docname).imgs
                   if "_images/" in src]
    chunk = tex_by_doc(tex).get(docname)
    assert chunk is not None, f"book.tex 里没有 {docname}"
    included = re.findall(r"\\sphinxincludegraphics(?:\[[^\]]*\])?\{\{([^}]*)\}(\.[a-z]+)\}", chunk)
    assert len(included) == len(html_images), (
        f"{docname}：HTML 有 {len(html_images)} 张图，PDF 里 {len(included)} 张")
    for stem, ext in included:
        assert (latex_dir / f"{stem}{ext}").is_file(), f"{stem}{ext} 没有复制到 {latex_dir}"
        if html_images and any(src.endswith(".svg") for src in html_images):
            assert ext == ".pdf", f"{docname}：矢量图在 PDF 里应是 .pdf（myst-nb 的 application/pdf 输出），而不是 {ext}"
        assert f"{stem}{ext}" in log.replace("\n", ""), f"XeLaTeX 的日志里没有读入 {stem}{ext}"


def test_interactive_figures_print_their_static_figure(built_pdf, tex):
    """网站上的交互图在 PDF 里是同一张 matplotlib 静态图（矢量 PDF），带同样的图号；
    LaTeX 里没有任何交互图的 HTML 或 JavaScript 残留。"""
    html_dir = built_pdf.root / "_build" / "html"
    chunks = tex_by_doc(tex)
    found = {}
    for docname in toc_docnames():
        html = (html_dir / f"{docname}.html").read_text(encoding="utf-8")
        # 交互图所在的 <figure id=...>（{glue:figure} 的 :name:）
        ids = re.findall(r'<figure[^>]*id="([^"]+)"[^>]*>(?:(?!</figure>).)*?data-figure=',
                         html, re.S)
        assert len(ids) == html.count('class="interactive-figure"'), (docname, ids)
        if ids:
            found[docname] = ids
    assert sum(len(ids) for ids in found.values()) == 6, found   # 第 2 节两张，第 3、4、7 节和附录各一张
    for docname, ids in found.items():
        for fig_id in ids:
            label = re.escape(f"\\label{{\\detokenize{{{docname}:{fig_id}}}}}")
            block = re.search(r"\\begin\{figure\}(?:(?!\\end\{figure\}).)*?" + label,
                              chunks[docname], re.S)
            assert block, f"{docname}：PDF 里没有图 {fig_id}"
            assert re.search(r"\\sphinxincludegraphics(?:\[[^\]]*\])?\{\{[^}]*\}\.pdf\}",
                             block.group(0)), f"{docname}：{fig_id} 在 PDF 里不是矢量 PDF 静态图"
    for leftover in ("interactive-figure", "vegaEmbed", "application/json", "alt.Chart", "交互图 "):
        assert leftover not in tex, f"book.tex 里有交互图的残留：{leftover}"


def test_homework_solutions_are_printed(built_pdf, tex, text):
    """作业的解答在网页上折叠，PDF 里要展开印出来：每个解答里的每段代码（和输出）的第一行都在 PDF 里。"""
    solutions = html_facts(built_pdf.root / "_build" / "html", "book/homework").solutions
    assert solutions, "作业页（HTML）里没有解答"
    homework = tex_by_doc(tex)["book/homework"]
    for solution_id, blocks in solutions.items():
        assert f"-{solution_id.rsplit('-', 1)[-1]}}}" in homework and solution_id.split("/")[-1] in homework, (
            f"PDF 的作业一章里没有解答 {solution_id}")
        assert blocks, f"解答 {solution_id} 里没有代码"
        for block in blocks:
            first = next((line for line in block.splitlines() if line.strip()), "")
            assert squash(first) in text, f"解答 {solution_id} 的 “{first.strip()}” 没有印在 PDF 里"


# ---------------------------------------------------------------- 版面：代码不出版心

def text_block(log: str) -> tuple[float, float]:
    """版心左右边界（PDF 的 bp），由 book_pdf.sty 写进日志。"""
    m = re.search(r"book_pdf: textblock left=([\d.]+)pt,\s*width=([\d.]+)pt", log)
    assert m, "日志里没有 book_pdf.sty 写的版心位置"
    left, width = (float(v) / 1.00375 for v in m.groups())  # TeX pt → PDF bp
    return left, left + width


# 行末的中文标点：xeCJK 把它压成半个字宽，pdftotext 给的框却是整个字宽
CJK_CLOSING = "，。、；：？！）」』】》〉”’…—"


def words_outside(bbox_html: str, right: float, tolerance: float = 1.5) -> list[tuple[int, float, str]]:
    """pdftotext -bbox 的每个词：右边伸出版心（超过 right）的 (页码, 超出的 bp, 词)。

    只查右边：LaTeX 的文字只会向右伸出（过长的代码行、排不下的词）；左边只有图里旋转的轴标签，
    而 pdftotext 给旋转文字（matplotlib 的 Type 3 字体）的框不准。
    """
    found = []
    for number, page in enumerate(bbox_html.split("<page ")[1:], 1):
        for m in re.finditer(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>',
                             page):
            x_min, y_min, x_max, y_max = (float(v) for v in m.groups()[:4])
            word = m.group(5)
            if len(word) > 1 and y_max - y_min > x_max - x_min:
                continue  # 竖排的字（图里旋转 90° 的轴标签）：pdftotext 按字体的上下伸部估框，不准
            if x_max > right + tolerance + (10.0 * word.endswith(tuple(CJK_CLOSING))):
                found.append((number, round(x_max - right, 1), word))
    return found


def test_no_text_outside_the_text_block(pdf, log):
    """量出来的：每一个词（代码、输出、正文、表格）都在版心之内。长代码行与长输出在 PDF 里自动折行
    （sphinxsetup 的 verbatimwrapslines / verbatimforcewraps），不会伸到页边去。

    XeLaTeX 对伸出代码框的代码行不报 Overfull，所以这里直接量 PDF：pdftotext -bbox 给出每个词的位置。
    """
    _, right = text_block(log)
    bbox = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    outside = words_outside(bbox, right)
    detail = "\n".join(f"  第 {page} 页：{word[:60]!r} 伸出 {over} bp" for page, over, word in outside[:30])
    assert not outside, f"{len(outside)} 个词伸出版心：\n{detail}"


def test_no_text_sticks_far_into_the_margin(log, tex):
    """正文也不应明显伸出版心（几 pt 以内的溢出肉眼看不出，不算）。"""
    lines = tex.splitlines()
    wide = [(pt, a, b) for pt, a, b in overfull_boxes(log) if pt > 6]
    detail = "\n".join(f"  {pt:.1f}pt 过宽，book.tex 第 {a}–{b} 行：{lines[a - 1][:100]}" for pt, a, b in wide)
    assert not wide, f"{len(wide)} 处排版超出版心 6pt 以上：\n{detail}"


RUNNING_HEAD = re.compile(r"book_pdf: running head page=(\S+) left=([\d.]+)pt\s+right=([\d.]+)pt\s+"
                          r"width=([\d.]+)pt\s+title=(\w+)")


def running_heads(log_text: str) -> list[tuple[str, float, float, float, str]]:
    """book_pdf.sty 每排一个页眉就在日志里记一行：(页码, 左边章名的宽, 右边书名的宽, 页眉宽, shown/dropped)。
    日志按 79 列折行，先把折行接回去。"""
    joined, lines = [], log_text.split("\n")
    for line in lines:  # TeX 把长于 max_print_line（79）的行折开：满 79 个字符的行与下一行接起来
        joined.append(line + ("" if len(line.encode()) == 79 else "\n"))
    joined = "".join(joined)
    return [(m[0], float(m[1]), float(m[2]), float(m[3]), m[4]) for m in RUNNING_HEAD.findall(joined)]


def test_running_head_parser_reads_a_wrapped_log_line():
    first = "book_pdf: running head page=12 left=130.5pt right=160.2pt width=340.0pt title=shown"
    log_text = (first[:79] + "\n" + first[79:] + "\n"
                "book_pdf: running head page=13 left=300.0pt right=160.2pt width=340.0pt title=dropped\n")
    assert running_heads(log_text) == [("12", 130.5, 160.2, 340.0, "shown"), ("13", 300.0, 160.2, 340.0, "dropped")]


@pytest.mark.parametrize("edition", ["zh", "en"])
def test_running_heads_never_overprint_the_book_title(built_pdf, request, edition):
    """页眉左边是章名（英文版取冒号前的短标题），右边是书名：每一页两者并排都放得下（中间至少 1.5em），
    book_pdf.sty 从没有因为放不下而去掉书名。宽度是 XeLaTeX 排页眉时量的（见 book_pdf.sty 的“页眉页脚”）。"""
    if edition == "en":
        request.getfixturevalue("built_pdf_en")  # 英文版的 PDF 只在要看它时才等它
    root = built_pdf.root / "_build" if edition == "zh" else built_pdf.root / "_build" / "en" / "_build"
    heads = running_heads((root / "latex" / "book.log").read_text(encoding="utf-8", errors="replace"))
    assert len(heads) > 40, f"日志里只有 {len(heads)} 个页眉记录：book_pdf.sty 的页眉改了？"
    crowded = [h for h in heads if h[4] != "shown" or h[1] + h[2] > h[3]]
    detail = "\n".join(f"  第 {p} 页：章名 {l:.0f}pt + 书名 {r:.0f}pt，页眉宽 {w:.0f}pt" for p, l, r, w, _ in crowded[:20])
    assert not crowded, f"{edition}：{len(crowded)} 页的页眉放不下章名和书名：\n{detail}"


# ---------------------------------------------------------------- 链接与书签

def test_no_undefined_references(log):
    """交叉引用（{numref}、{ref}、公式编号、引文）在 LaTeX 里都解析了：没有 “??”。"""
    undefined = re.findall(r"LaTeX Warning: (?:Reference|Citation|Hyper reference) `([^']+)'.*undefined", log)
    assert not undefined and "There were undefined references" not in log, f"未定义的引用：{undefined}"


def test_bookmarks_list_every_page(latex_dir):
    titles = [squash(t) for t in bookmark_titles((latex_dir / "book.out").read_text(encoding="utf-8", errors="replace"))]
    for docname in toc_docnames()[1:]:
        assert squash(page_title(docname)) in titles, f"PDF 书签里没有 “{page_title(docname)}”：{titles}"


def test_toc_links_jump_to_the_chapters(pdf):
    """目录里每一章的链接都指向该章标题所在的页。"""
    # 目录从第 2 页起，有几页要看书多长：取到第一条目录链接（前言）指向的那一页之前
    xml = run("pdftohtml", "-xml", "-i", "-stdout", "-q", "-f", "2", "-l", "12", str(pdf))
    by_page = {int(n): body for n, body in re.findall(r'<page number="(\d+)"(.*?)</page>', xml, re.S)}
    first = re.search(r'<a href="[^"]*#(\d+)">', by_page.get(2, ""))
    assert first, "目录里没有链接"
    toc = "".join(body for n, body in sorted(by_page.items()) if n < int(first.group(1)))
    links = re.findall(r'<a href="[^"]*#(\d+)">(.*?)</a>', toc)
    by_target: dict[int, str] = {}  # 目标页 → 指向它的所有链接文字（pdftohtml 把一行拆成几段）
    for page, label in links:
        by_target[int(page)] = by_target.get(int(page), "") + squash(re.sub(r"<[^>]+>", "", label))
    pages = page_texts(pdf)
    for docname in toc_docnames()[1:]:
        title = squash(page_title(docname))
        targets = [page for page, labels in by_target.items() if title in labels]
        assert targets, f"目录里没有指向 “{title}” 的链接"
        assert any(title in squash(pages[page - 1]) for page in targets), (
            f"目录里 “{title}” 的链接指向第 {targets} 页，那里没有这个标题")


# ---------------------------------------------------------------- 网站上的下载

def test_pdf_is_offered_on_the_website(built_pdf, pdf):
    html = built_pdf.root / "_build" / "html"
    copy = html / PDF_ON_SITE
    assert copy.is_file(), f"PDF 没有复制到网站目录 {copy}"
    assert copy.read_bytes() == pdf.read_bytes(), "网站上的 PDF 不是最新构建的那一份"
    links = [h for h in load_path(html / "book" / "index.html").hrefs if h.endswith(".pdf")]
    assert links == [f"../{PDF_ON_SITE}"], f"首页正文里的“下载 PDF”链接不对：{links}"
