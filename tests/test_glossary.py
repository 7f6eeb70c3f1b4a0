"""术语表（book/glossary.md）：收齐全书的术语与代码里的别名，各页第一次用到术语时链接到它。"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from conftest import toc_docnames

pytestmark = pytest.mark.book

# 正文里按字面出现、要求“每页第一次出现即链接”的术语（符号类术语 d_model、d_k、d_ff、头数 以公式或代码出现，不在此列；
# 单字术语“头”太容易误配，也不在此列）。长的在前：“多头注意力”里的“注意力”不算“注意力”的一次出现。
PROSE_TERMS = [
    "缩放点积注意力", "多头注意力", "注意力分数", "注意力权重", "因果遮蔽", "前馈网络", "残差连接",
    "Transformer Block", "LayerNorm", "RMSNorm", "Post-LN", "Pre-LN", "梯度消失", "路径长度",
    "注意力", "嵌入", "Query", "Key", "Value", "softmax", "token", "RNN",
]
ALL_TERMS = PROSE_TERMS + ["头", "头数", "d_model", "d_k", "d_ff"]
SKIP_PAGES = {"book/glossary", "book/references"}


class _Glossary(HTMLParser):
    """术语表页：每个 <dt id="term-…"> 的术语文字，以及它的 <dd> 里的全部文字。"""

    def __init__(self):
        super().__init__()
        self.entries: dict[str, tuple[str, str]] = {}  # 术语 → (锚点 id, 释义文字)
        self._dt_id = None
        self._term: list[str] | None = None
        self._dd: list[str] | None = None
        self._dd_depth = 0
        self._current = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "dt" and (a.get("id") or "").startswith("term-"):
            self._dt_id, self._term = a["id"], []
        elif tag == "dd" and self._current is not None:
            if self._dd is None:
                self._dd, self._dd_depth = [], 0
            self._dd_depth += 1
        elif tag == "dd" and self._dd is not None:
            self._dd_depth += 1

    def handle_endtag(self, tag):
        if tag == "dt" and self._term is not None:
            self._current = ("".join(self._term).strip(), self._dt_id)
            self._term = None
        elif tag == "dd" and self._dd is not None:
            self._dd_depth -= 1
            if self._dd_depth == 0:
                name, anchor = self._current
                self.entries[name] = (anchor, "".join(self._dd))
                self._dd, self._current = None, None

    def handle_data(self, data):
        if self._term is not None:
            self._term.append(data)
        elif self._dd is not None:
            self._dd.append(data)


def glossary_entries(built_book) -> dict[str, tuple[str, str]]:
    parser = _Glossary()
    parser.feed((built_book.html / "book" / "glossary.html").read_text(encoding="utf-8"))
    # Sphinx 在术语后面加一个永久链接（“#”或“¶”）
    return {name.rstrip("¶#").strip(): value for name, value in parser.entries.items()}


class _ProseWalker(HTMLParser):
    """按顺序收集 <article> 正文里的文字片段，并记下每段是否在指向术语表某个锚点的链接里。

    跳过标题、代码、公式、代码单元的输出、脚本：术语的“第一次出现”只算正文文字。
    """

    SKIP_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "code", "pre", "script", "style"}
    SKIP_CLASSES = {"math", "cell_output", "output", "highlight", "headerlink"}

    def __init__(self):
        super().__init__()
        self.in_article = 0
        self.stack: list[tuple[str, bool, str | None]] = []  # (tag, 是否跳过, 术语锚点)
        self.pieces: list[tuple[str, str | None]] = []  # (文字, 所在链接的术语锚点)

    def _skipping(self) -> bool:
        return any(skip for _, skip, _ in self.stack)

    def _anchor(self) -> str | None:
        for _, _, anchor in reversed(self.stack):
            if anchor:
                return anchor
        return None

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self.in_article += 1
        if not self.in_article or tag in ("br", "img", "hr", "input", "meta", "link", "wbr"):
            return
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        skip = tag in self.SKIP_TAGS or bool(classes & self.SKIP_CLASSES)
        anchor = None
        href = a.get("href") or ""
        if tag == "a" and "glossary.html#term-" in href:
            anchor = href.split("#", 1)[1]
        self.stack.append((tag, skip, anchor))

    def handle_endtag(self, tag):
        if tag == "article":
            self.in_article -= 1
            return
        if not self.in_article:
            return
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if self.in_article and not self._skipping() and data.strip():
            self.pieces.append((data, self._anchor()))


def first_uses(html: str, terms: list[str]) -> dict[str, str | None]:
    """每个术语在正文里第一次出现时所在链接的锚点（不在链接里为 None）；没出现的术语不在结果里。"""
    walker = _ProseWalker()
    walker.feed(html)
    found: dict[str, str | None] = {}
    for text, anchor in walker.pieces:
        covered = [False] * len(text)
        for term in terms:  # 长的术语在前，先占住位置
            for m in re.finditer(re.escape(term), text):
                if any(covered[m.start():m.end()]):
                    continue
                for i in range(m.start(), m.end()):
                    covered[i] = True
                found.setdefault(term, anchor)
    return found


def test_glossary_defines_every_term_of_the_book(built_book):
    entries = glossary_entries(built_book)
    missing = [t for t in ALL_TERMS if t not in entries]
    assert not missing, f"术语表缺少这些术语：{missing}；现有：{sorted(entries)}"
    for name, (_, text) in entries.items():
        assert "英文" in text or "中文" in text, f"术语“{name}”没有给出另一种语言的名字：{text[:80]}"


def _width_names_table(html: str) -> list[str]:
    """第 4 节“同一个量在不同框架里的名字”表格第一列里的代码名。"""
    m = re.search(r'<table[^>]*id="tab-s4-width-names".*?</table>', html, re.S)
    assert m, "第 4 节没有 id 为 tab-s4-width-names 的表格"
    body = m.group(0).split("<tbody>", 1)[1]
    names = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
        first_cell = re.search(r"<td[^>]*>(.*?)</td>", row, re.S).group(1)
        names += re.findall(r'<span class="pre">([^<]+)</span>', first_cell)
    return names


def test_glossary_holds_every_row_of_the_width_names_table(built_book):
    s4 = (built_book.html / "book" / "s4_multi_head.html").read_text(encoding="utf-8")
    names = _width_names_table(s4)
    assert len(names) >= 4, names
    _, d_model_text = glossary_entries(built_book)["d_model"]
    missing = [n for n in names if n not in d_model_text]
    assert not missing, f"术语表 d_model 条目缺少第 4 节表格里的名字：{missing}"


@pytest.mark.parametrize("docname", [d for d in toc_docnames() if d not in SKIP_PAGES])
def test_first_use_of_each_term_links_to_the_glossary(built_book, docname):
    entries = glossary_entries(built_book)
    html = (built_book.html / f"{docname}.html").read_text(encoding="utf-8")
    uses = first_uses(html, PROSE_TERMS)
    wrong = []
    for term, anchor in uses.items():
        expected = entries[term][0]
        if anchor != expected:
            wrong.append(f"{term}（第一次出现{'链接到 #' + anchor if anchor else '没有链接'}，应链接到 #{expected}）")
    assert not wrong, f"{docname}：这些术语第一次出现时没有链接到术语表：" + "；".join(wrong)
