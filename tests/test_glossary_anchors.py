"""术语表的锚点稳定、可读（book/_ext/book_glossary.py）：中文术语的锚点取自英文名，加一条术语不挪动别的锚点，
旧的编号锚点仍指向原来的术语。"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.book import REPO, toc_docnames
from support.pagekit import soup

sys.path.insert(0, str(REPO / "book" / "_ext"))
import book_glossary  # noqa: E402

GLOSSARY = REPO / "book" / "glossary.md"

CONF = textwrap.dedent(f"""
    import sys
    sys.path.insert(0, {str(REPO / "book" / "_ext")!r})
    extensions = ["myst_parser", "book_glossary"]
    myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "substitution"]
    language = "zh_CN"
    root_doc = "glossary"
    html_theme = "basic"
""")

NEW_TERM = textwrap.dedent("""\
    位置编码
      给每个位置一个向量，加到 token 的嵌入上（这是测试临时加进来的一条）。

      **英文** positional encoding；**符号** $P$。

    """)


def _anchors(html: Path) -> dict[str, list[str]]:
    """术语文字 → [<dt> 的 id, <dt> 里其余的 id（旧锚点）……]。"""
    out = {}
    for dt in soup(html).select("dl.glossary dt"):
        name = dt.get_text().strip().rstrip("¶#").strip()
        out[name] = [dt["id"], *[s["id"] for s in dt.select("span[id]")]]
    return out


def _write_source(src: Path, text: str) -> None:
    """小书：术语表，加上它用 {doc} 链接的各页的空壳（孤页，只有标题）。"""
    src.mkdir(parents=True)
    (src / "conf.py").write_text(CONF, encoding="utf-8")
    (src / "glossary.md").write_text(text, encoding="utf-8")
    for doc in set(re.findall(r"\{doc\}`[^`<]*<([^>`]+)>`|\{doc\}`([^`<]+)`", text)):
        name = doc[0] or doc[1]
        (src / f"{name}.md").write_text(f"---\norphan: true\n---\n# {name}\n", encoding="utf-8")


def _build(tmp: Path, text: str) -> dict[str, list[str]]:
    src = tmp / "src"
    _write_source(src, text)
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(tmp / "out")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return _anchors(tmp / "out" / "glossary.html")


def english_name_of(term: str) -> str | None:
    """术语表源文件里术语 term 那一条的英文名（用扩展自己的 english_name 读）。"""
    text = GLOSSARY.read_text(encoding="utf-8")
    m = re.search(rf"^{re.escape(term)}\n((?:[ \t]+.*\n|\n)+)", text, re.M)
    return book_glossary.english_name(m.group(1)) if m else None


def _with_term_first(text: str, entry: str) -> str:
    """把一条术语插到术语表的第一条之前（中文术语的旧编号就都会挪一位）。"""
    m = re.search(r"^```\{glossary\}\n", text, re.M)
    assert m, "glossary.md 里没有 {glossary} 块"
    return text[:m.end()] + entry + text[m.end():]


def test_a_new_term_moves_no_other_anchor_and_old_numbered_anchors_stay(tmp_path):
    text = GLOSSARY.read_text(encoding="utf-8")
    before = _build(tmp_path / "before", text)
    after = _build(tmp_path / "after", _with_term_first(text, NEW_TERM))
    assert after.pop("位置编码") == ["term-positional-encoding"]
    assert after == before
    for name, old in book_glossary.LEGACY_IDS.items():
        if name in before:
            assert old in before[name][1:], f"旧锚点 {old} 应仍在 “{name}” 上"


def test_every_anchor_is_readable_and_unique(tmp_path):
    anchors = _build(tmp_path, GLOSSARY.read_text(encoding="utf-8"))
    main = [ids[0] for ids in anchors.values()]
    assert len(set(main)) == len(main)
    for name, ids in anchors.items():
        assert re.fullmatch(r"term-[A-Za-z][A-Za-z0-9_-]*", ids[0]), (name, ids)
        if not name.isascii():
            assert ids[0] == f"term-{book_glossary.slug(english_name_of(name))}"


def test_a_chinese_term_without_an_english_name_fails_the_build_naming_it(tmp_path):
    entry = "无名术语\n  没有英文名的一条。\n\n"
    src = tmp_path / "src"
    _write_source(src, _with_term_first(GLOSSARY.read_text(encoding="utf-8"), entry))
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "无名术语" in proc.stderr and "英文" in proc.stderr


@pytest.mark.book
def test_term_links_in_the_book_reach_the_readable_anchors(built_book):
    html = built_book.html
    targets = {i for ids in _anchors(html / "book" / "glossary.html").values() for i in ids}
    seen = 0
    for docname in toc_docnames():
        for a in soup(html / f"{docname}.html").select('a[href*="glossary.html#term-"]'):
            anchor = a["href"].split("#", 1)[1]
            assert anchor in targets, (docname, anchor)
            assert not re.fullmatch(r"term-\d+", anchor), (docname, anchor)
            seen += 1
    assert seen > 50


@pytest.mark.book
def test_every_link_into_the_glossary_has_words_besides_math(built_book):
    """只包着公式的链接（[$d_k$](#d_k)）在读屏软件里没有名字（axe 的 link-name）：链接里要有文字，如“维度 $d_k$”。"""
    html = built_book.html
    bare = []
    for docname in toc_docnames():
        for a in soup(html / f"{docname}.html").select('a[href*="glossary.html#term-"]'):
            words = "".join(t for t in a.find_all(string=True)
                            if not any("math" in (p.get("class") or []) for p in t.parents))
            if not words.strip():
                bare.append((docname, str(a)[:120]))
    assert bare == []
