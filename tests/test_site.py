"""网站的静态检查（不开浏览器）：离线、中文、可访问性的基本要求，以及中文检索索引。

都读整本书的一次全新构建（conftest 的 built_book）。在浏览器里的检查见 test_browser.py。
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from support.book import REPO, build_book, toc_docnames
from support.pagekit import allowed_latin_words, english_words, interface_strings, load, load_path, resources

pytestmark = pytest.mark.book

SEARCH_DICT = REPO / "book" / "search_dict.txt"
CJK = re.compile(r"[\u4e00-\u9fff]")


def is_notebook_page(docname: str) -> bool:
    """有 jupytext 头和 kernelspec 的 MyST 页面才会执行，也才有 .ipynb 可下载。"""
    text = (REPO / f"{docname}.md").read_text(encoding="utf-8")
    head = text.split("\n---", 1)[0] if text.startswith("---") else ""
    return "kernelspec:" in head


def parse(path: Path):
    return resources(path)


def is_remote(url: str) -> bool:
    return bool(re.match(r"^(?:[a-z][a-z0-9+.-]*:)?//", url, re.I))


@pytest.fixture(scope="module")
def html(built_site) -> Path:
    """整个网站（两种语言）。"""
    return built_site.html


def site_pages(html: Path, *, english: bool = False) -> list[Path]:
    """网站上的 HTML 页面：中文版（默认），或 en/ 下的英文版（english=True）。"""
    return sorted(p for p in html.rglob("*.html")
                  if "_static" not in p.parts and "reports" not in p.parts
                  and (p.relative_to(html).parts[0] == "en") is english)


@pytest.fixture(scope="module")
def pages(html) -> list[Path]:
    """中文版的页面（本模块检查中文界面；英文版的界面在 tests/test_english_edition.py 里检查）。"""
    found = site_pages(html)
    assert found, f"{html} 下没有 HTML 页面"
    return found


def test_every_toc_page_is_built(html):
    missing = [d for d in toc_docnames() if not (html / f"{d}.html").is_file()]
    assert not missing, f"目录里的这些页面没有生成 HTML: {missing}"


def test_html_lang_matches_the_edition(html, pages):
    """中文版的页面 lang="zh-CN"，英文版（en/ 下）的页面 lang="en"。"""
    english = site_pages(html, english=True)
    assert len(english) >= len(pages) - 1   # 英文版没有根目录的跳转页以外的差别
    pages = pages + english
    expected = {p: "en" if p.relative_to(html).parts[0] == "en" else "zh-CN" for p in pages}
    wrong = {str(p.relative_to(html)): parse(p).lang for p in pages if parse(p).lang != expected[p]}
    assert not wrong, f'这些页面的 <html lang> 不对: {wrong}'


def test_no_page_loads_anything_from_another_host(html, pages):
    """离线优先：脚本、样式、图片、图标都来自本站，页面里没有任何指向其他主机的加载。"""
    remote = {str(p.relative_to(html)): [u for u in parse(p).loads if is_remote(u)] for p in pages}
    remote = {k: v for k, v in remote.items() if v}
    assert not remote, f"这些页面从其他主机加载资源: {remote}"


def test_stylesheets_pull_no_fonts_or_css_from_another_host(html):
    bad = {}
    for css in (html / "_static").rglob("*.css"):
        text = css.read_text(encoding="utf-8", errors="replace")
        hits = re.findall(r"""(?:url\(\s*['"]?|@import\s+['"]?)((?:https?:)?//[^'")\s]+)""", text)
        if hits:
            bad[str(css.relative_to(html))] = hits
    assert not bad, f"样式表里有指向其他主机的 url()/@import（字体或 CSS 走了 CDN）: {bad}"


def test_no_page_of_either_edition_loads_a_math_script(html, pages):
    """公式在构建时排好（book/_ext/book_math.py）：两种语言的任何一页都不加载 MathJax 或 KaTeX 的脚本，
    网站里也没有 MathJax 的副本；每页挂的脚本不多（没有大目录被放进 html_static_path）。"""
    everything = pages + site_pages(html, english=True)
    for page in everything:
        scripts = [s for s in parse(page).loads if s.endswith(".js") or ".js?" in s]
        math = [s for s in scripts if "mathjax" in s.lower() or "katex" in s.lower()]
        assert not math, f"{page.relative_to(html)} 加载了公式脚本: {math}"
        inline = page.read_text(encoding="utf-8")
        assert "MathJax" not in inline, f"{page.relative_to(html)} 里还有 MathJax 的配置或脚本"
        assert len(scripts) < 40, f"{page.name} 挂了 {len(scripts)} 个脚本：是不是有大目录被放进了 html_static_path？"
    copies = [p for p in html.rglob("*") if "mathjax" in p.name.lower()]
    assert not copies, f"网站里不该再有 MathJax: {copies[:5]}"


def test_search_box_placeholder_is_chinese(html, pages):
    themed = [p for p in pages if 'http-equiv="refresh"' not in p.read_text(encoding="utf-8")]
    wrong = {p.name: parse(p).placeholders for p in themed
             if not parse(p).placeholders or not all(CJK.search(t) for t in parse(p).placeholders)}
    assert not wrong, f"这些页面的搜索框提示不是中文: {wrong}"


def test_interface_has_no_english_words(html, pages):
    """正文之外读者看得到的文字和提示（title、aria-label、placeholder、alt……）里没有英文词。

    允许的只有书名、作者、各页标题与小节标题里的词（目录和页首会显示它们），以及文件类型、PDF、Ctrl+K 这类记号
    （pagekit.allowed_latin_words）。主题默认的 “.pdf” 打印项、aria-label="Page"、“Click to show” 都会被抓到。
    """
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    allowed = allowed_latin_words(REPO, toc_docnames(), f"{config['title']} {config['author']}")
    found = {str(p.relative_to(html)): english_words(interface_strings(p), allowed) for p in pages}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"这些页面还有英文界面文字（词: 出处）: {found}"


def test_footer_states_the_open_licences_not_all_rights_reserved(html, pages):
    """主题的 copyright.html 在中文界面里印“© 2026 版权所有。”（像是保留一切权利），和 LICENSE 的开放许可矛盾。
    每一页的页脚应写明 LICENSE 里的两种许可。"""
    licence = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in licence and "MIT License" in licence
    themed = [p for p in pages if 'class="bd-footer-content' in p.read_text(encoding="utf-8")]
    assert len(themed) >= len(toc_docnames())
    wrong = {}
    for p in themed:
        footer = " ".join(interface_strings(p))
        if "版权所有" in footer or "CC BY-SA 4.0" not in footer or "MIT 许可" not in footer:
            wrong[str(p.relative_to(html))] = footer[-200:]
    assert not wrong, f"这些页面的页脚没有写明许可，或写着“版权所有”: {wrong}"


def test_english_word_check_catches_the_theme_defaults():
    """上面的检查对主题的英文默认值确实会失败（防止允许的词表把它们放过去）。"""
    allowed = allowed_latin_words(REPO, toc_docnames(), "Attention 机制与 Transformer Block")
    theme_defaults = [".pdf", "Page", "Click to show", "Print to PDF", "Search this book...", "Color mode",
                      "Link to this heading", "Toggle primary sidebar"]
    assert set(english_words(theme_defaults, allowed)) >= {"pdf", "Page", "Click", "Print", "Search", "Color",
                                                            "Link", "Toggle"}


def test_root_index_redirects_to_the_book(html):
    root = parse(html / "index.html")
    assert root.refresh == "0; url=book/index.html", root.refresh
    assert root.title == "Attention 机制与 Transformer Block", root.title
    assert root.lang == "zh-CN"


def test_page_title_and_favicon(html):
    title = parse(html / "book" / "index.html").title
    assert title.endswith("Attention 机制与 Transformer Block"), title
    for page in (html / "book").glob("*.html"):
        icons = [href for rel, href in parse(page).links if "icon" in rel]
        assert icons, f"{page.name} 没有 favicon"
        assert all((page.parent / h).resolve().is_file() for h in icons), f"{page.name}: {icons}"


@pytest.mark.parametrize("docname", [d for d in toc_docnames()])
def test_page_offers_md_and_ipynb_downloads(html, docname):
    """每页的下载菜单里有 .md 源文件；会执行的页面还有执行后的 .ipynb（含输出）。"""
    page = html / f"{docname}.html"
    hrefs = parse(page).buttons.get("download-source-button", []) + parse(page).buttons.get(
        "download-notebook-button", [])
    assert all("_sources/" in h for h in hrefs), hrefs
    md = [h for h in hrefs if h.endswith(".md")]
    assert md, f"{docname}: 下载菜单里没有 .md"
    assert (page.parent / md[0]).resolve().is_file(), md[0]
    if is_notebook_page(docname):
        nb = [h for h in hrefs if h.endswith(".ipynb")]
        assert nb, f"{docname}: 下载菜单里没有 .ipynb"
        notebook = json.loads((page.parent / nb[0]).resolve().read_text(encoding="utf-8"))
        # 读者笔记本的安装单元（标签 book-install）是给读者运行的，构建时不执行
        unexecuted = [c["source"][:60] for c in notebook["cells"]
                      if c["cell_type"] == "code" and c.get("execution_count") is None
                      and "book-install" not in c.get("metadata", {}).get("tags", [])]
        assert not unexecuted, f"{docname}: 下载的 .ipynb 里有没执行过的单元: {unexecuted}"


def test_download_menu_links_the_whole_book_pdf(html, pages):
    """每页的下载菜单都指向 make pdf 放到网站根目录的那一份 PDF（文件名取自 _config.yml 的 book_pdf_on_site）。"""
    on_site = build_book.pdf_on_site(REPO)
    for page in (html / "book").glob("*.html"):
        links = parse(page).buttons.get("download-book-pdf-button")
        assert links, f"{page.name}: 下载菜单里没有整本书的 PDF"
        assert (page.parent / links[0]).resolve() == (html / on_site).resolve(), links


def book_appendices() -> dict[str, str]:
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    return config["sphinx"]["config"]["book_appendices"]


@pytest.mark.parametrize("docname, letter", sorted(book_appendices().items()))
def test_appendix_figures_and_tables_are_numbered_with_its_letter(built_book, docname, letter):
    """附录页的图注、表题编号为 “图 A.1”“图 A.2”……“表 A.1”，各自从 1 连续编号，图的个数与页面上的图一致；
    正文里对它们的 {numref} 引用也是这个编号。"""
    page = load(built_book, docname.removeprefix("book/"))
    assert page.captions, f"{docname} 上没有图注或表题"
    for kind in ("图", "表"):
        numbers = [c for c in page.captions if c.startswith(kind)]
        assert numbers == [f"{kind} {letter}.{i}" for i in range(1, len(numbers) + 1)], page.captions
    assert len([c for c in page.captions if c.startswith("图")]) == len(page.figure_ids), page.captions
    referenced = set(re.findall(rf"[图表] {letter}\.\d+", page.text)) - set(page.captions)
    assert not referenced, f"正文引用了不存在的编号：{referenced}"
    assert page.text.count(f"图 {letter}.1") >= 2, "正文没有按 “图 A.1” 引用第一张图（只有图注本身）"


def test_only_appendices_carry_letter_numbers(built_book):
    """编号的章（s1–s6）的图表按章编号（“图 2.1”），其他页面都不带附录字母。"""
    appendices = book_appendices()
    for docname in toc_docnames():
        if docname in appendices:
            continue
        captions = load(built_book, docname.removeprefix("book/")).captions
        lettered = [c for c in captions if re.match(r"[图表] [A-Z]\.", c)]
        assert not lettered, f"{docname} 不是附录，却有 {lettered}"


def test_index_links_the_whole_book_pdf(html):
    """首页正文里的 “下载 PDF 版” 链接（{book-pdf} 角色）指向网站根目录上的那一份 PDF。"""
    page = load_path(html / "book" / "index.html")
    links = [h for h in page.hrefs if h.endswith(".pdf")]
    assert links == [f"../{build_book.pdf_on_site(REPO)}"], links


# ---- 中文检索 --------------------------------------------------------------------------------

def load_search_index(html: Path) -> dict:
    text = (html / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1: text.rindex(")")])


def search(index: dict, word: str) -> set[str]:
    """照 Sphinx 的 searchtools.js 查一个词：精确匹配，长于 2 个字时也按子串匹配。返回文档名。"""
    found: set[int] = set()
    for table in (index["terms"], index["titleterms"]):
        keys = [word] if word in table or len(word) <= 2 else [t for t in table if word in t]
        for key in keys:
            files = table.get(key)
            if files is None:
                continue
            found.update(files if isinstance(files, list) else [files])
    return {index["docnames"][i] for i in found}


def dictionary_terms() -> list[str]:
    return [line.split()[0] for line in SEARCH_DICT.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def test_search_dictionary_is_well_formed():
    terms = dictionary_terms()
    assert len(terms) == len(set(terms)), "词典里有重复的词"
    assert all(len(t) >= 2 for t in terms), "单字词不会被检索（Sphinx 丢弃一个字的词）"
    for line in SEARCH_DICT.read_text(encoding="utf-8").splitlines():
        assert re.fullmatch(r"\S+( \d+)?( [a-z]+)?", line), f"jieba 词典行格式不对: {line!r}"


def article_text(page: Path) -> str:
    """一页正文里的文字（大致就是 Sphinx 为检索收录的内容）。"""
    return "\n".join(load_path(page).chunks)  # Sphinx 按文字节点分词，跨标签的词不算


def uses_standalone(term: str, text: str, terms: list[str]) -> bool:
    """term 在 text 里出现在词典里更长的术语之外（不只是“缩放点积注意力”里的“缩放点积”）。"""
    for longer in sorted((t for t in terms if term in t and t != term), key=len, reverse=True):
        text = text.replace(longer, "\0")
    return term in text


def test_uses_standalone_ignores_a_term_inside_a_longer_term():
    terms = ["缩放点积", "缩放点积注意力"]
    assert not uses_standalone("缩放点积", "缩放点积注意力的定义", terms)
    assert uses_standalone("缩放点积", "先算缩放点积，再看缩放点积注意力", terms)
    assert uses_standalone("缩放点积注意力", "缩放点积注意力的定义", terms)


def test_chinese_search_finds_every_page_that_uses_each_term(html):
    """词典里的每个术语：正文里用到它的每一页，搜这个词都能找到（讲它的那一页自然在内）。

    没有 jieba 词典时，“因果遮蔽”会被切成“因果”“遮蔽”，搜整个词什么也找不到。
    “用到”指单独出现：词典里更长的术语（“缩放点积注意力”）整个是一个检索词，jieba 只给它补两三个字的子词，
    其中四个字的“缩放点积”不单独成词——更长的术语自己也在词典里，另行检查。
    """
    index = load_search_index(html)
    texts = {d: article_text(html / f"{d}.html") for d in toc_docnames()}
    terms = dictionary_terms()
    problems = []
    used = 0
    for term in terms:
        pages = {d for d, t in texts.items() if uses_standalone(term, t, terms)}
        if not pages:
            continue  # 书里（还）没有这个词
        used += 1
        missing = pages - search(index, term)
        if missing:
            problems.append(f"{term}: 搜不到 {sorted(missing)}")
    assert used >= 10, f"词典里只有 {used} 个词出现在书中：词典和正文对不上？"
    assert not problems, "中文检索找不到用到这些术语的页面:\n" + "\n".join(problems)


@pytest.mark.parametrize("term, docname", [
    ("因果遮蔽", "book/s3_causal_mask"),
    ("多头注意力", "book/s4_multi_head"),
])
def test_search_index_key_terms(html, term, docname):
    assert docname in search(load_search_index(html), term)


def test_no_link_of_the_site_points_to_an_automatically_numbered_anchor(html):
    """r36t2 第 11、12 条：全是中文的标题、引文的目标在 docutils 里得到按出现次序编的 id（#id19、#id40），
    前面多一个标题或一条引文，链接就指到别处。两种语言的每一页，页内目录、标题旁的链接、引文，都不指向这种锚点。
    （参考文献表里从条目跳回引用处的回链 role="doc-backlink" 除外：它指向 sphinxcontrib-bibtex 给引用处编的 id，
    没有配置项可改。）"""
    numbered = re.compile(r'href="([^"]*#id\d+)"')
    bad = {}
    for page in sorted(html.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        for tag in re.findall(r"<a\b[^>]*>", text):
            found = numbered.search(tag)
            if found and 'role="doc-backlink"' not in tag:
                bad.setdefault(page.relative_to(html).as_posix(), []).append(found.group(1))
    assert bad == {}, {k: v[:5] for k, v in bad.items()}
