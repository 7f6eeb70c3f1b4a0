"""术语表（book/glossary.md）：收齐全书的术语与代码里的别名，各页第一次用到术语时链接到它。"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.book import toc_docnames
from support.pagekit import articles, soup, text_nodes

pytestmark = pytest.mark.book

# 正文里按字面出现、要求“每页第一次出现即链接”的术语（符号类术语 d_model、d_k、d_ff 以公式出现，见下面的 SYMBOL_TERMS；
# “头数”和单字术语“头”太容易误配，不在此列）。长的在前：“多头注意力”里的“注意力”不算“注意力”的一次出现。
PROSE_TERMS = [  # 长的在前：first_uses 先让长的占住位置（“前一个 token 头”里的 token 不算 token 的一次出现）
    "前一个 token 头", "缩放点积注意力", "多头注意力", "注意力分数", "注意力权重", "因果遮蔽", "前馈网络", "残差连接",
    "Transformer Block", "LayerNorm", "RMSNorm", "Post-LN", "Pre-LN", "梯度消失", "路径长度",
    "归纳头", "残差流",
    "注意力", "嵌入", "Query", "Key", "Value", "softmax", "token", "RNN", "批次",
]
# 符号类术语：正文里写成行内公式（$d_\text{model}$、$d_k$、$d_\text{ff}$），也可能直接写成文字 d_model。
# 每页第一次用到它的那个行内公式（或那段文字）要链接到术语表，写法是 [$d_k$](#d_k)。
# 独立成行的公式块不能加链接，不算“正文里的使用”；标题、代码、代码输出同样不算。
SYMBOL_TERMS = {
    "d_model": re.compile(r"d_\{?\\(?:text|mathrm)\{model\}|\bd_model\b"),
    "d_k": re.compile(r"d_\{?k(?![A-Za-z])"),
    "d_ff": re.compile(r"d_\{?\\(?:text|mathrm)\{ff\}|\bd_ff\b"),
}
ALL_TERMS = PROSE_TERMS + ["头", "头数", *SYMBOL_TERMS]
# 术语表开头说：条目按讲解它的那一节分组。“头”是单字，无法按字面找出场位置，只查它在标题里的出现。
ORDER_SKIP = {"头"}
SKIP_PAGES = {"book/glossary", "book/references"}


def glossary_entries(built_book) -> dict[str, tuple[str, str]]:
    """术语表页：每个 <dt id="term-…"> 的术语文字 → (锚点 id, 它的 <dd> 里的全部文字)。"""
    doc = soup(built_book.html / "book" / "glossary.html")
    entries = {}
    for dt in doc.select('dt[id^="term-"]'):
        dd = dt.find_next_sibling("dd")
        # Sphinx 在术语后面加一个永久链接（“#”或“¶”）
        entries[dt.get_text().strip().rstrip("¶#").strip()] = (dt["id"], dd.get_text() if dd else "")
    return entries


SKIP_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "code", "pre", "script", "style"}
SKIP_CLASSES = {"math", "cell_output", "output", "highlight", "headerlink"}


def _pieces(path: Path, inline_math: bool) -> list[tuple[str, str | None]]:
    """按顺序收集 <article> 正文里的文字片段，并记下每段所在的、指向术语表某个锚点的链接。

    跳过标题、代码、代码单元的输出、脚本和公式块（div.math：不能加链接）；行内公式（span.math）
    只在 inline_math 时收集。
    """
    skip = SKIP_CLASSES - {"math"} if inline_math else SKIP_CLASSES
    pieces = []
    for article in articles(soup(path)):
        for node in text_nodes(article):
            if not node.strip():
                continue
            ancestors = [t for t in node.parents if t is not article and article in t.parents]
            if any(t.name in SKIP_TAGS or skip & set(t.get("class") or []) for t in ancestors):
                continue
            if any(t.name == "div" and "math" in (t.get("class") or []) for t in ancestors):
                continue
            link = next((t for t in ancestors if t.name == "a" and "glossary.html#term-" in (t.get("href") or "")),
                        None)
            pieces.append((str(node), link["href"].split("#", 1)[1] if link else None))
    return pieces


def prose_pieces(path: Path) -> list[tuple[str, str | None]]:
    """正文文字：术语的“第一次出现”只算这些（不含任何公式）。"""
    return _pieces(path, inline_math=False)


def symbol_pieces(path: Path) -> list[tuple[str, str | None]]:
    """正文文字加行内公式：符号术语（d_k 之类）也可能第一次出现在公式里。"""
    return _pieces(path, inline_math=True)


def first_symbol_uses(path: Path) -> dict[str, tuple[str, str | None]]:
    """每个符号术语第一次出现的那段文字（或公式）及其链接锚点；没出现的不在结果里。"""
    found: dict[str, tuple[str, str | None]] = {}
    for text, anchor in symbol_pieces(path):
        for term, pattern in SYMBOL_TERMS.items():
            if term not in found and pattern.search(text):
                found[term] = (text.strip(), anchor)
    return found


def test_symbol_patterns_find_the_book_spellings():
    assert SYMBOL_TERMS["d_model"].search(r"\(d_\text{model}\)") and SYMBOL_TERMS["d_model"].search("d_{\\mathrm{model}}")
    assert SYMBOL_TERMS["d_model"].search("宽度 d_model 不变")
    assert SYMBOL_TERMS["d_k"].search(r"\(\sqrt{d_k}\)") and SYMBOL_TERMS["d_k"].search("d_{k}")
    assert not SYMBOL_TERMS["d_k"].search(r"d_{kv}") and not SYMBOL_TERMS["d_k"].search("d_model")
    assert SYMBOL_TERMS["d_ff"].search(r"d_\text{ff}") and not SYMBOL_TERMS["d_ff"].search(r"d_\text{model}")


def first_uses(path: Path, terms: list[str]) -> dict[str, str | None]:
    """每个术语在正文里第一次出现时所在链接的锚点（不在链接里为 None）；没出现的术语不在结果里。"""
    found: dict[str, str | None] = {}
    for text, anchor in prose_pieces(path):
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


# 模型宽度在书里出现过的参数名，以及第一次出现（并说明它就是模型宽度）的那一页
WIDTH_NAMES = {"d_model": "s4_multi_head", "embed_dim": "s4_multi_head",
               "n_embd": "s4_multi_head", "hidden_size": "homework"}


def test_glossary_holds_every_name_the_book_gives_the_model_width(built_book):
    _, d_model_text = glossary_entries(built_book)["d_model"]
    for name, page in WIDTH_NAMES.items():
        text = soup(built_book.html / "book" / f"{page}.html").get_text()
        assert f"`{name}`" in text or name in text, f"{page} 不再提到 {name}"
        assert name in d_model_text, f"术语表 d_model 条目缺少 {name}"
    # 第 4 节由 PyTorch 自己说明：同一个宽度，构造时叫 d_model，读回来叫 embed_dim
    s4 = soup(built_book.html / "book" / "s4_multi_head.html")
    outputs = " ".join(o.get_text() for o in s4.select("div.cell_output"))
    assert "有 .d_model 吗？ False" in outputs, outputs[:400]


@pytest.mark.parametrize("docname", [d for d in toc_docnames() if d not in SKIP_PAGES])
def test_first_use_of_each_term_links_to_the_glossary(built_book, docname):
    entries = glossary_entries(built_book)
    uses = first_uses(built_book.html / f"{docname}.html", PROSE_TERMS)
    wrong = []
    for term, anchor in uses.items():
        expected = entries[term][0]
        if anchor != expected:
            wrong.append(f"{term}（第一次出现{'链接到 #' + anchor if anchor else '没有链接'}，应链接到 #{expected}）")
    assert not wrong, f"{docname}：这些术语第一次出现时没有链接到术语表：" + "；".join(wrong)


@pytest.mark.parametrize("docname", [d for d in toc_docnames() if d not in SKIP_PAGES])
def test_first_use_of_each_symbol_links_to_the_glossary(built_book, docname):
    """d_model、d_k、d_ff 在每页第一次出现的行内公式（或文字）链接到术语表。"""
    entries = glossary_entries(built_book)
    wrong = []
    for term, (text, anchor) in first_symbol_uses(built_book.html / f"{docname}.html").items():
        expected = entries[term][0]
        if anchor != expected:
            wrong.append(f"{term}（第一次出现在“{text[:40]}”，{'链接到 #' + anchor if anchor else '没有链接'}，"
                         f"应链接到 #{expected}）")
    assert not wrong, f"{docname}：这些符号第一次出现时没有链接到术语表：" + "；".join(wrong)


def _first_body_page(built_book, body: list[str]) -> dict[str, int]:
    """每个术语从第 1 节起第一次出现在第几页（body 里的下标）。"""
    first: dict[str, int] = {}
    for i, docname in enumerate(body):
        path = built_book.html / f"{docname}.html"
        for term in first_uses(path, PROSE_TERMS + ["头数"]):
            first.setdefault(term, i)
        for term in first_symbol_uses(path):
            first.setdefault(term, i)
    return first


def _heading_terms(path: Path) -> set[str]:
    """页面标题和二级标题（h1、h2）里出现的术语；长的术语先占位，“多头注意力”里的“注意力”不算。"""
    doc = soup(path)
    found: set[str] = set()
    for article in articles(doc):
        for h in article.find_all(["h1", "h2"]):
            text = h.get_text(" ").replace("#", "").replace("¶", "")
            covered = [False] * len(text)
            for term in [*PROSE_TERMS, "头数", "头"]:
                for m in re.finditer(re.escape(term), text):
                    if not any(covered[m.start():m.end()]):
                        covered[m.start():m.end()] = [True] * (m.end() - m.start())
                        found.add(term)
    return found


def glossary_groups(built_book) -> dict[str, str]:
    """术语表页：每个术语 → 它所在那一组的二级标题文字（不含标题锚点）。"""
    doc = soup(built_book.html / "book" / "glossary.html")
    groups = {}
    for dt in doc.select('dt[id^="term-"]'):
        section = dt.find_parent("section")
        h2 = section.find("h2") if section else None
        assert h2 is not None, f"术语“{dt.get_text()}”不在任何一组（二级标题）下面"
        name = dt.get_text().strip().rstrip("¶#").strip()
        groups[name] = h2.get_text().replace("#", "").replace("¶", "").strip()
    return groups


def _group_page(title: str, body: list[str]) -> str:
    """组标题 → 它说的那一页：“第 N 节：……”是第 N 节，“附录……”是附录页。"""
    m = re.match(r"第 (\d) 节", title)
    if m:
        return body[int(m.group(1)) - 1]
    assert title.startswith("附录"), f"看不懂的组标题：{title}"
    return "book/appendix_rnn"


def test_glossary_groups_each_term_under_the_section_that_explains_it(built_book):
    """术语表开头的承诺：条目按讲解它的那一节分组，也就是它第一次出现的那一节，
    或者更靠后、标题（h1、h2）里有它的那一节；各组按目录顺序排列。"""
    names = toc_docnames()
    body = [d for d in names[names.index("book/s1_intuition"):] if d not in SKIP_PAGES]
    first = _first_body_page(built_book, body)
    headings = {d: _heading_terms(built_book.html / f"{d}.html") for d in body}
    groups = glossary_groups(built_book)
    assert list(groups) == list(glossary_entries(built_book))
    wrong, order = [], []
    for term, title in groups.items():
        page = _group_page(title, body)
        order.append(body.index(page))
        allowed = {d for d in body if term in headings[d] and (term not in first or body.index(d) >= first[term])}
        if term not in ORDER_SKIP:
            assert term in first, f"术语“{term}”从第 1 节起在正文里一次也没出现"
            allowed.add(body[first[term]])
        if page not in allowed:
            wrong.append(f"{term}（列在“{title}”，应在 {sorted(allowed)} 之一）")
    assert not wrong, "术语表里这些术语不在讲解它的那一节的组里：" + "；".join(wrong)
    assert order == sorted(order), "术语表的组没有按目录顺序排列"


def test_group_check_tells_first_use_from_a_later_heading(built_book):
    """上面那条检查确实会把术语和它的讲解页对上：softmax 第一次出现在第 1 节，第 2 节的标题里有它；
    LayerNorm 第一次出现在第 5 节（数参数），第 6 节的标题里有它；批次第一次出现在第 3 节的练习里。"""
    names = toc_docnames()
    body = [d for d in names[names.index("book/s1_intuition"):] if d not in SKIP_PAGES]
    first = _first_body_page(built_book, body)
    assert body[first["softmax"]] == "book/s1_intuition"
    assert "softmax" in _heading_terms(built_book.html / "book" / "s2_scaled_dot_product.html")
    assert "softmax" not in _heading_terms(built_book.html / "book" / "s1_intuition.html")
    assert "LayerNorm" in _heading_terms(built_book.html / "book" / "s6_block.html")
    assert "注意力" not in _heading_terms(built_book.html / "book" / "s4_multi_head.html")  # 只有“多头注意力”


def test_glossary_opening_states_the_grouping_and_keeps_house_rules_off_the_page(built_book):
    doc = soup(built_book.html / "book" / "glossary.html")
    opening = " ".join(p.get_text() for p in articles(doc)[0].find_all("p", recursive=True)[:2])
    assert "分组" in opening and "第一次出现" in opening and "标题" in opening, opening
    # 写给作者的规矩（每页第一次用到术语就链接、公式块里放不了链接）留在源文件的注释里，不上读者的页面
    text = articles(doc)[0].get_text()
    for rule in ("独立成行的公式块", "不算在内", "都链接到这里的条目"):
        assert rule not in text, rule
    source = (Path(__file__).resolve().parents[1] / "book" / "glossary.md").read_text(encoding="utf-8")
    assert re.search(r"^% .*链接到这里的条目", source, re.M), "术语链接的规矩不见了（应留在 glossary.md 的注释里）"


# “batch”只有一个中文名：批次。正文里不再出现“批大小”“一批”“同批”之类，也不把 batch 当中文词用
# （代码、形状注释、代码输出里的 batch 照旧；“批改”是另一个词）。
OTHER_BATCH_WORDS = re.compile(r"批(?![次改])|(?<![A-Za-z_])batch(?![A-Za-z_])")


def test_other_batch_words_pattern():
    for bad in ("批大小为 1", "一批样本", "同批里", "一个 batch 里"):
        assert OTHER_BATCH_WORDS.search(bad), bad
    for good in ("一个批次", "批改程序", "BatchNorm", "batch_first", "按批次归一化"):
        assert not OTHER_BATCH_WORDS.search(good), good


@pytest.mark.parametrize("docname", [d for d in toc_docnames() if d not in SKIP_PAGES])
def test_batch_is_called_pici_in_the_prose(built_book, docname):
    found = [text.strip()[:60] for text, _ in prose_pieces(built_book.html / f"{docname}.html")
             if OTHER_BATCH_WORDS.search(text)]
    assert not found, f"{docname}：正文里 batch 的别的叫法（统一用“批次”）：{found}"


def test_glossary_numbers_of_the_section_7_model_match_its_config():
    """术语表是不执行代码的页面，不能 glue：它写出的第 7 节词表大小和模型宽度，由这里和代码核对。"""
    from minigpt.tasks import REPEAT_VOCAB
    from minigpt.tinygpt import init_model

    text = (Path(__file__).resolve().parents[1] / "book" / "glossary.md").read_text(encoding="utf-8")
    assert f"token 是 0 到 {REPEAT_VOCAB - 1} 这 {REPEAT_VOCAB} 个整数" in text
    assert f"第 7 节训练的小模型取 {init_model().blocks[0].ffn.d_model}，" in text
