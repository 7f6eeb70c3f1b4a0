"""读渲染后页面的正文（<article> 里的文字、链接、图片、glue 填入的文字和公式），供各页面测试共用。

只看正文，不看侧边栏：侧边栏对每一页都列出全部链接。公式在构建时已由 KaTeX 排好（book/_ext/book_math.py）：
排出来的字形与 MathML 不算正文文字，公式只以它的 TeX 源码出现（KaTeX 写在 MathML 的
``<annotation encoding="application/x-tex">`` 里），与页面源文件里写的一样。
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser
from pathlib import Path


@dataclass
class Page:
    path: Path
    title: str = ""
    text: str = ""
    hrefs: list[str] = field(default_factory=list)
    imgs: list[str] = field(default_factory=list)
    figure_ids: list[str] = field(default_factory=list)
    pasted: list[str] = field(default_factory=list)
    math: list[str] = field(default_factory=list)
    captions: list[str] = field(default_factory=list)  # 图注、表题的编号（“图 2.1”“表 A.1”），按出现顺序
    chunks: list[str] = field(default_factory=list)  # <article> 里的文字节点，按出现顺序
    outputs: list[str] = field(default_factory=list)  # 代码单元输出（div.cell_output）和 glue 进正文的文字节点
    solutions: dict[str, list[str]] = field(default_factory=dict)  # 解答（div.solution）的 id → 其中每个 <pre> 的文字
    html: str = ""  # 只读了一节（section）时，那一节的 HTML（fragment 读它）


class ArticleParser(HTMLParser):
    """收集 <article> 里的文字、链接、图片、图的 id、glue 填入的文字、公式源码和图表编号。"""

    def __init__(self, page: Page):
        super().__init__()
        self.page = page
        self.depth = 0          # 在 <article> 里的嵌套深度
        self.skip = 0           # 在 <script>/<style> 里
        self.in_h1 = False
        self.capture: list[str] | None = None  # 正在收集的 span/div（pasted-text 或 math）
        self.capture_kind = ""
        self.capture_depth = 0  # 收集中遇到的 span/div 嵌套层数（公式编号也是一个 span）
        self.chunks: list[str] = []
        # 打开着的元素：(标签, 在输出里?, 所在解答的 id, 在 <pre> 里?)
        self.stack: list[tuple[str, bool, str | None, bool]] = []
        # 打开着的元素各自是否在 KaTeX 排好的公式里、是否在它的 TeX 源码（annotation）里
        self.formula: list[tuple[str, bool, bool]] = []

    VOID = ("img", "br", "hr", "input", "meta", "link", "source", "wbr", "col", "area")

    def _open(self, tag: str, classes: list[str], a: dict):
        if tag in self.VOID:
            return
        _, in_output, solution, in_pre = self.stack[-1] if self.stack else ("", False, None, False)
        in_output = in_output or "cell_output" in classes or "pasted-text" in classes
        if solution is None and tag == "div" and "solution" in classes:
            solution = a.get("id") or f"solution-{len(self.page.solutions)}"
            self.page.solutions[solution] = []
        if solution is not None and tag == "pre":
            in_pre = True
            self.page.solutions[solution].append("")
        self.stack.append((tag, in_output, solution, in_pre))

    def _close(self, tag: str):
        if tag in self.VOID:
            return
        while self.stack:  # 容忍没有闭合的元素（如 <p>）
            if self.stack.pop()[0] == tag:
                break

    def _in_rendered_formula(self) -> bool:
        """正在 KaTeX 排出的字形或 MathML 里（不在 TeX 源码里）：这些文字不算。"""
        return bool(self.formula) and self.formula[-1][1] and not self.formula[-1][2]

    def _track_formula(self, tag: str, classes: list[str], a: dict) -> None:
        katex, source = self.formula[-1][1:] if self.formula else (False, False)
        if tag not in self.VOID:
            self.formula.append((tag, katex or "katex" in classes,
                                 source or (tag == "annotation" and a.get("encoding") == "application/x-tex")))

    def _untrack_formula(self, tag: str) -> None:
        if tag in self.VOID:
            return
        while self.formula:
            if self.formula.pop()[0] == tag:
                break

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "article":
            self.depth += 1
        if not self.depth:
            return
        self._track_formula(tag, (a.get("class") or "").split(), a)
        self._open(tag, (a.get("class") or "").split(), a)
        if tag in ("script", "style"):
            self.skip += 1
        classes = (a.get("class") or "").split()
        if tag == "h1" and not self.page.title:
            self.in_h1 = True
        if tag == "a" and a.get("href"):
            self.page.hrefs.append(a["href"])
        if tag == "img" and a.get("src"):
            self.page.imgs.append(a["src"])
        if tag == "figure" and a.get("id"):
            self.page.figure_ids.append(a["id"])
        if self.capture is not None and tag in ("span", "div"):
            self.capture_depth += 1
        elif tag in ("span", "div"):
            if "pasted-text" in classes:
                self.capture, self.capture_kind = [], "pasted"
            elif "math" in classes:
                self.capture, self.capture_kind = [], "math"
            elif "caption-number" in classes:
                self.capture, self.capture_kind = [], "caption"

    def handle_endtag(self, tag):
        if not self.depth:
            return
        self._close(tag)
        self._untrack_formula(tag)
        if tag in ("script", "style"):
            self.skip -= 1
        if tag == "h1" and self.in_h1:
            self.in_h1 = False
            self.page.title = re.sub(r"\s+", " ", self.page.title).replace("#", "").strip()
        if tag in ("span", "div") and self.capture is not None and self.capture_depth:
            self.capture_depth -= 1
        elif tag in ("span", "div") and self.capture is not None:
            value = "".join(self.capture).strip()
            {"pasted": self.page.pasted, "math": self.page.math,
             "caption": self.page.captions}[self.capture_kind].append(value)
            self.capture = None
        if tag == "article":
            self.depth -= 1

    def handle_data(self, data):
        if not self.depth or self.skip or self._in_rendered_formula():
            return
        self.chunks.append(data)
        if self.stack and self.stack[-1][1]:
            self.page.outputs.append(data)
        if self.stack and self.stack[-1][2] is not None and self.stack[-1][3]:
            solution = self.page.solutions[self.stack[-1][2]]
            solution[-1] += data
        if self.in_h1:
            self.page.title += data
        if self.capture is not None:
            self.capture.append(data)


def load(built_book, name: str) -> Page:
    return load_path(built_book.html / "book" / f"{name}.html")


def load_path(path: Path) -> Page:
    """读一页 HTML 的正文（<article>），不含侧边栏。"""
    name = path.stem
    assert path.is_file(), f"没有生成 {path}"
    page = Page(path)
    parser = ArticleParser(page)
    parser.feed(path.read_text(encoding="utf-8"))
    page.chunks = parser.chunks
    page.text = "".join(parser.chunks)
    assert page.text.strip(), f"{name}.html 的 <article> 是空的"
    return page


def assert_figures(page: Page, expected: dict[str, str]):
    """expected: {图的 id: 编号}。每张图恰好一张图片、图片文件存在、正文里按编号引用了它。"""
    assert sorted(page.figure_ids) == sorted(expected), page.figure_ids
    assert len(page.imgs) == len(expected), f"图片数 {len(page.imgs)} ≠ 图数 {len(expected)}（有图显示了两次？）"
    for src in page.imgs:
        assert (page.path.parent / src).resolve().is_file(), f"图片文件不存在：{src}"
    for fig_id, number in expected.items():
        assert f'#{fig_id}' in page.hrefs, f"正文没有引用 {fig_id}"
        assert f"图 {number}" in page.text, f"页面上没有“图 {number}”"


def plain(html: str) -> str:
    """去掉 HTML 标签、还原字符实体、合并空白之后的文字。"""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", html))).strip()


def self_check(page: Page) -> list[tuple[str, str]]:
    """页面末尾“想一想”一节里的（问题, 答案）对，按顺序。

    要求：它是正文最后一个二级标题，或者后面只跟着一节开放的“练习”；每道题是一个编号列表项，
    紧跟一个标题为“答案”的折叠块（`admonition` + `dropdown`）；没有落单的问题或答案。
    """
    html = page.path.read_text(encoding="utf-8")
    article = html[html.index("<article"):html.index("</article>")]
    heads = [m.start() for m in re.finditer(r"<h2[ >]", article)]
    start = next((h for h in heads if "想一想<" in article[h:h + 200]), None)
    assert start is not None, f"{page.path.name} 没有“想一想”一节"
    after = [h for h in heads if h > start]
    assert all("练习<" in article[h:h + 200] for h in after) and len(after) <= 1, \
        f"{page.path.name} 的“想一想”后面只能跟一节“练习”"
    section = article[start:after[0] if after else len(article)]
    pairs = re.findall(
        r'<ol class="arabic simple"(?: start="\d+")?>\s*<li>(.*?)</li>\s*</ol>\s*'
        r'<div class="dropdown admonition">\s*<p class="admonition-title">答案</p>(.*?)</div>',
        section, re.S)
    assert len(pairs) == section.count("<li>") == section.count("admonition-title"), \
        f"{page.path.name}：“想一想”里的问题和折叠的答案没有一一对应"
    return [(plain(q), plain(a)) for q, a in pairs]


# ---- 界面文字（正文之外）-------------------------------------------------------------------------

UI_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt", "data-bs-title", "value")
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


class InterfaceParser(HTMLParser):
    """收集一页里读者看得到的界面文字：<article> 之外的文字，以及各处的提示类属性（title、aria-label……）。
    标明了另一种语言的元素（lang 不是页面的语言：到另一种语言版本的链接）不算。"""

    def __init__(self):
        super().__init__()
        self.depth = 0  # 在 <article> 里
        self.skip = 0   # 在 <script>/<style> 里
        self.foreign: list[str] = []  # 标明了别的语言的元素（lang 属性），从外到里
        self.page_lang = ""
        self.strings: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self.depth += 1
        if tag in ("script", "style"):
            self.skip += 1
        a = dict(attrs)
        if tag == "html":
            self.page_lang = a.get("lang", "")
        elif a.get("lang") and a["lang"] != self.page_lang:
            self.foreign.append(tag)
        if self.foreign:
            return
        if self.depth and not (tag == "button" or "headerlink" in (a.get("class") or "").split()):
            return  # 正文里只有按钮和标题锚点的提示是界面；图的 alt、引文链接的 title 是内容
        self.strings += [a[k] for k in UI_ATTRIBUTES if a.get(k) and not (tag == "input" and k == "value")]

    def handle_endtag(self, tag):
        if tag == "article":
            self.depth -= 1
        if tag in ("script", "style"):
            self.skip -= 1
        if self.foreign and self.foreign[-1] == tag:
            self.foreign.pop()

    def handle_data(self, data):
        if not self.depth and not self.skip and not self.foreign and data.strip():
            self.strings.append(data.strip())


def interface_strings(path: Path) -> list[str]:
    parser = InterfaceParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.strings


class _ShownParser(HTMLParser):
    """整页（不只是正文）读者看得见的文字：文字节点（不含脚本、样式），以及 alt、title、aria-label、
    data-bs-title、placeholder 这些会显示出来或被读出来的属性。"""

    SHOWN_ATTRIBUTES = ("alt", "title", "aria-label", "data-bs-title", "placeholder")

    def __init__(self):
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1
        self.parts += [value for name, value in attrs if name in self.SHOWN_ATTRIBUTES and value]

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def shown_strings(path: Path) -> list[str]:
    """一页上读者看得见的全部文字（见 _ShownParser），按出现顺序。"""
    parser = _ShownParser()
    parser.feed(Path(path).read_text(encoding="utf-8"))
    return parser.parts


def allowed_latin_words(repo: Path, docnames: list[str], title: str) -> set[str]:
    """界面上允许出现的拉丁字母词：书名与作者（title 传二者）、各页标题与小节标题里的词（目录、页首、上一页/下一页会显示它们），
    以及几个不是英文句子的记号：文件类型（.md、.ipynb）、PDF、快捷键 Ctrl+K、JavaScript（浏览器功能名）、
    页脚里的许可名称 CC BY-SA、MIT。"""
    words = set(LATIN_WORD.findall(title)) | {"md", "ipynb", "PDF", "Ctrl", "K", "JavaScript",
                                              "CC", "BY-SA", "MIT"}
    for doc in docnames:
        for line in (repo / f"{doc}.md").read_text(encoding="utf-8").splitlines():
            if re.match(r"#{1,6} ", line):
                words |= set(LATIN_WORD.findall(re.sub(r"\$[^$]*\$", "", line)))
    return words


def english_words(strings: list[str], allowed: set[str]) -> dict[str, list[str]]:
    """{不在 allowed 里的拉丁字母词: 含它的界面文字（最多 3 条）}。公式（\\( … \\)）不算。"""
    found: dict[str, list[str]] = {}
    for string in strings:
        plain = re.sub(r"\\\(.*?\\\)|\\\[.*?\\\]", "", string)
        for word in LATIN_WORD.findall(plain):
            if word not in allowed:
                found.setdefault(word, [])
                if len(found[word]) < 3 and string not in found[word]:
                    found[word].append(string[:80])
    return found


# ---- 整页（正文之外）：资源、语言、标题、下载菜单 -------------------------------------------------

@dataclass
class Resources:
    """一页 HTML 里会被浏览器自动加载的资源、<html lang>、<title>、跳转、搜索框提示与下载菜单。"""
    lang: str | None = None
    title: str = ""
    refresh: str | None = None                                       # <meta http-equiv="refresh"> 的 content
    loads: list[str] = field(default_factory=list)                   # 打开页面就会请求的地址
    links: list[tuple[str, str]] = field(default_factory=list)       # <link>：(rel, href)
    placeholders: list[str] = field(default_factory=list)            # <input placeholder>
    buttons: dict[str, list[str]] = field(default_factory=dict)      # 主题按钮 btn-<label> → 它们的 href
    math: int = 0                                                    # class 含 math 的元素个数（待 MathJax 排版的公式）


class ResourceParser(HTMLParser):
    LOADS = {"script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src",
             "audio": "src", "embed": "src", "object": "data"}
    PRELOADED = ("stylesheet", "icon", "preload", "modulepreload", "manifest", "shortcut icon",
                 "apple-touch-icon")

    def __init__(self, result: Resources):
        super().__init__()
        self.r = result
        self.in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        r = self.r
        if tag == "html":
            r.lang = a.get("lang")
        if tag == "title":
            self.in_title = True
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "refresh":
            r.refresh = a.get("content")
        if tag in self.LOADS and a.get(self.LOADS[tag]):
            r.loads.append(a[self.LOADS[tag]])
        if tag == "img" and a.get("srcset"):
            r.loads += [part.split()[0] for part in a["srcset"].split(",") if part.strip()]
        if tag == "link" and a.get("href"):
            r.links.append((a.get("rel") or "", a["href"]))
            if a.get("rel") in self.PRELOADED:
                r.loads.append(a["href"])
        if tag == "input" and a.get("placeholder") is not None:
            r.placeholders.append(a["placeholder"])
        if "math" in (a.get("class") or "").split():
            r.math += 1
        if tag in ("a", "button"):
            for cls in (a.get("class") or "").split():
                if cls.startswith("btn-") and cls not in ("btn-sm",):
                    r.buttons.setdefault(cls.removeprefix("btn-"), []).append(a.get("href") or "")

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False

    def handle_data(self, data):
        if self.in_title:
            self.r.title += data


def resources(path: Path) -> Resources:
    """读一整页（不只是正文）：加载的资源、语言、标题、跳转、搜索框提示与主题的按钮。"""
    result = Resources()
    ResourceParser(result).feed(path.read_text(encoding="utf-8"))
    result.title = result.title.strip()
    return result


# ---------------------------------------------------------------- 按元素查找（BeautifulSoup）
# 表格的某一行、段落、glue 值所在的句子、整页的 CSS 选择器：这些用 BeautifulSoup（requirements.txt 的 beautifulsoup4）。

from bs4 import BeautifulSoup, Comment, Tag  # noqa: E402
from bs4.element import Declaration, Doctype, ProcessingInstruction  # noqa: E402

_NOT_TEXT = (Comment, Declaration, Doctype, ProcessingInstruction)


def soup(path: Path) -> BeautifulSoup:
    """整页 HTML 的 BeautifulSoup 对象。"""
    path = Path(path)
    assert path.is_file(), f"没有生成 {path}"
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def articles(doc: BeautifulSoup) -> list[Tag]:
    """页面正文：最外层的 <article>（主题把正文放在 article.bd-article 里）。"""
    return [a for a in doc.find_all("article") if a.find_parent("article") is None]


def text_nodes(node: Tag) -> list:
    """node 里的文字节点，按出现顺序（不含注释、脚本与样式）。"""
    return [s for s in node.find_all(string=True)
            if not isinstance(s, _NOT_TEXT) and s.find_parent(["script", "style"]) is None]


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def pasted_after(page: Page, before: str) -> list[str]:
    """紧跟在文字 before 后面（中间只隔空白）的 glue 值：检查“这个数出现在它该出现的句子里”，
    而不是“页面上某处有这个子串”。"""
    found, text = [], ""
    for article in articles(soup(page.path)):
        pasted = article.find_all(["span", "div"], class_="pasted-text")
        starts = {id(nodes[0]): tag for tag in pasted if (nodes := text_nodes(tag))}
        for node in text_nodes(article):
            if id(node) in starts and text.rstrip().endswith(before):
                found.append(starts[id(node)].get_text().strip())
            text += str(node)
    return found


def table_rows(table: Tag) -> list[list[str]]:
    """表格每一行（含表头）各单元格的文字（合并空白）。"""
    return [[_squash(cell.get_text()) for cell in tr.find_all(["th", "td"])] for tr in table.find_all("tr")]


def find_table_row(page: Page, first_cell: str) -> list[str]:
    """正文表格里第一格是 first_cell 的那一行；没有就让测试失败。"""
    for article in articles(soup(page.path)):
        for table in article.find_all("table"):
            for row in table_rows(table):
                if row and row[0] == first_cell:
                    return row
    raise AssertionError(f"{page.path.name} 的正文表格里没有以“{first_cell}”开头的行")


def paragraphs(page: Page) -> list[str]:
    """正文里普通段落（不带 class 的 <p>，不含图注、提示框标题等）的文字，合并空白。"""
    return [_squash(p.get_text()) for p in articles(soup(page.path))[0].find_all("p") if not p.attrs]


def prose_text(page: Page) -> str:
    """正文去掉代码（<pre>、<code>）之后的文字，合并空白。"""
    article = BeautifulSoup(str(articles(soup(page.path))[0]), "html.parser")
    for tag in article.find_all(["pre", "code"]):
        tag.decompose()
    return _squash(article.get_text())


def tables(page: Page) -> list[tuple[list[str], list[list[str]]]]:
    """正文里每张表的（表头单元格, 表体各行的单元格），都是合并空白后的文字。"""
    found = []
    for table in articles(soup(page.path))[0].find_all("table"):
        head = [_squash(th.get_text()) for th in table.find_all("th") if th.find_parent("tbody") is None]
        body = table.find("tbody")
        rows = [[_squash(td.get_text()) for td in tr.find_all("td")] for tr in body.find_all("tr")] if body else []
        found.append((head, rows))
    return found


def visible_text(path: Path) -> str:
    """<article> 里读者看得见的文字：公式取 KaTeX 排出的字形，不取给屏幕阅读器的 MathML 与 TeX 源码
    （搜索结果的摘要就是这样取的，见 book/_ext/search_snippets.js）。"""
    parts = []
    for article in articles(soup(path)):
        for mathml in article.select(".katex-mathml"):
            mathml.decompose()
        parts.append(article.get_text())
    return "\n".join(parts)


def section(path: Path, heading: str) -> Page:
    """页面里标题文字以 heading 结尾（不计编号）的那一节（含其子节），读成 Page（与整页同一个读法，
    page.path 仍是整页的文件）；那一节的 HTML 在 page.html 里（fragment 把它读成 BeautifulSoup）。"""
    path = Path(path)
    for sec in soup(path).find_all("section"):
        h = sec.find(re.compile(r"^h[1-6]$"))
        if h is None or h.find_parent("section") is not sec:
            continue
        title = "".join(str(t) for t in text_nodes(h)
                        if not t.find_parent(class_=["section-number", "headerlink"])).strip()
        if title.endswith(heading):
            raw = str(sec)
            with tempfile.TemporaryDirectory() as tmp:
                part = Path(tmp) / path.name
                part.write_text(f"<html><body><article>{raw}</article></body></html>", encoding="utf-8")
                page = load_path(part)
            page.path, page.html = path, raw
            return page
    raise AssertionError(f"{path.name} 里没有标题为“{heading}”的一节")


def fragment(page: Page) -> BeautifulSoup:
    """section 读出的那一节的 BeautifulSoup 对象。"""
    assert page.html, f"{page.path.name}：fragment 只读 section 读出的一节"
    return BeautifulSoup(page.html, "html.parser")


def cell_outputs(html: str) -> list[list[str]]:
    """渲染后的页面（HTML 文本）里，每个代码单元打印出的文字（stream 输出与表达式的值），按单元排列。"""
    cells = []
    for cell in BeautifulSoup(html, "html.parser").find_all("div", class_="cell"):
        if "docutils" not in cell["class"]:
            continue
        outputs = cell.find_all("div", class_="output")
        cells.append([pre.get_text() for out in outputs if {"stream", "text_plain"} & set(out["class"])
                      for pre in out.find_all("pre")])
    return cells
