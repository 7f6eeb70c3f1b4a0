"""代码单元是正文的一部分：读者看得见的单元里没有构建用的机关，按顺序抄下来就是一个能运行的程序。

“看得见的单元”指没有 `remove-cell` 标签的代码单元（myst-nb 的单元级设置同时去掉源码和输出的，
效果相同，也算藏起来）。页面源码用 myst-nb 自己读 MyST 笔记本的函数解析，和构建时读到的单元
一模一样：`:tags:` 写法、`---` 包起来的 YAML 写法、`mystnb` 元数据都由它统一变成单元元数据。
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

import nbformat
import pytest
from myst_nb.core.read import read_myst_markdown_notebook

from support.book import MYST_NOTEBOOK_HEADER, REPO, toc_docnames
from support.pagekit import cell_outputs

FORBIDDEN = ("glue(", "myst_nb")


# ---------------------------------------------------------------- 读单元


def _notebook(text: str, suffix: str = ".md") -> nbformat.NotebookNode:
    if suffix == ".ipynb":
        return nbformat.reads(text, as_version=4)
    return read_myst_markdown_notebook(text)


def is_hidden(cell) -> bool:
    """这个代码单元在页面上完全看不见吗（源码和输出都被去掉）？"""
    meta = cell.get("metadata", {})
    if "remove-cell" in (meta.get("tags") or []):
        return True
    nb_meta = meta.get("mystnb") or {}
    return bool(nb_meta.get("remove_code_source")) and bool(nb_meta.get("remove_code_outputs"))


def visible_cells(text: str, suffix: str = ".md") -> list:
    """页面上看得见的代码单元，按出现顺序。"""
    return [c for c in _notebook(text, suffix).cells if c.cell_type == "code" and not is_hidden(c)]


def visible_code_cells(text: str, suffix: str = ".md") -> list[str]:
    """页面上看得见的代码单元的源码，按出现顺序。"""
    return [c.source for c in visible_cells(text, suffix)]


def forbidden_in(source: str) -> list[str]:
    return [word for word in FORBIDDEN if word in source]


def page_path(doc: str) -> Path:
    return next(p for p in (REPO / f"{doc}.md", REPO / f"{doc}.ipynb") if p.exists())


# ---------------------------------------------------------------- 解析器本身


_HEADER = MYST_NOTEBOOK_HEADER + """
# 页

"""


@pytest.mark.parametrize("cell, hidden", [
    ("```{code-cell} ipython3\n:tags: [remove-cell]\n\nglue('a', 1)\n```\n", True),
    ("```{code-cell} ipython3\n:tags: [\"hide-input\", \"remove-cell\"]\nglue('a', 1)\n```\n", True),
    ("```{code-cell} ipython3\n---\ntags: [remove-cell]\n---\nglue('a', 1)\n```\n", True),
    ("```{code-cell} ipython3\n---\ntags:\n  - remove-cell\n---\nglue('a', 1)\n```\n", True),
    ("```{code-cell} ipython3\n---\nmystnb:\n  remove_code_source: true\n  remove_code_outputs: true\n---\n"
     "glue('a', 1)\n```\n", True),
    ("```{code-cell} ipython3\n---\nmystnb:\n  remove_code_source: true\n---\nglue('a', 1)\n```\n", False),
    ("```{code-cell} ipython3\n:tags: [remove-input]\nglue('a', 1)\n```\n", False),
    ("```{code-cell} ipython3\n:tags: [hide-cell]\nfrom myst_nb import glue\n```\n", False),
    ("````{code-cell} ipython3\nprint('```')\nglue('a', 1)\n````\n", False),
    ("```{code-cell} ipython3\n# :tags: [remove-cell]\nglue('a', 1)\n```\n", False),
])
def test_cell_reader_tells_hidden_cells_from_visible_ones(cell, hidden):
    sources = visible_code_cells(_HEADER + cell)
    if hidden:
        assert sources == []
    else:
        assert len(sources) == 1 and forbidden_in(sources[0]), sources


def test_cell_reader_reads_ipynb_pages_too():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("glue('x', 1)", metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_code_cell("from myst_nb import glue"),
    ])
    sources = visible_code_cells(nbformat.writes(nb), ".ipynb")
    assert sources == ["from myst_nb import glue"]


# ---------------------------------------------------------------- 全书


@pytest.mark.parametrize("doc", toc_docnames())
def test_no_visible_code_cell_uses_glue_or_myst_nb(doc):
    path = page_path(doc)
    sources = visible_code_cells(path.read_text(encoding="utf-8"), path.suffix)
    bad = [f"第 {i} 个看得见的单元含 {forbidden_in(s)}：{s.strip().splitlines()[0][:60]}"
           for i, s in enumerate(sources, 1) if forbidden_in(s)]
    assert not bad, f"{doc}：构建用的 glue/myst_nb 应放进带 remove-cell 标签的单元：\n" + "\n".join(bad)


# 网页的代码栏在 1280 像素宽的窗口里约能放 80 个显示列（中文记 2 列，中文字形还略宽），PDF 约 80 列：
# 看得见的单元每行不超过 78 列，就不用横向滚动，也不会被 PDF 截断
VISIBLE_CODE_COLUMNS = 78


def _columns(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


@pytest.mark.parametrize("doc", toc_docnames())
def test_visible_code_lines_fit_the_code_column(doc):
    path = page_path(doc)
    text = path.read_text(encoding="utf-8")
    sources = visible_code_cells(text, path.suffix)
    # 练习里的起始代码是普通的 ```python 代码块（可能缩进在列表项里）：去掉围栏的缩进再量
    for indent, body in re.findall(r"^( *)`{3,}python[ \t]*\n(.*?)^ *`{3,}", text, re.S | re.M):
        sources.append("\n".join(line[len(indent):] for line in body.splitlines()))
    wide = [f"{_columns(line)} 列：{line.strip()[:50]}" for s in sources for line in s.splitlines()
            if _columns(line) > VISIBLE_CODE_COLUMNS]
    assert not wide, f"{doc} 有看得见的代码行超过 {VISIBLE_CODE_COLUMNS} 列，网页上要横向滚动：\n" + "\n".join(wide)


@pytest.fixture(scope="module")
def english_translator():
    import sys

    sys.path.insert(0, str(REPO / "tools"))
    import i18n

    return i18n.Translator(REPO)


@pytest.mark.parametrize("doc", toc_docnames())
def test_english_visible_code_lines_fit_the_code_column(doc, english_translator):
    """英文版的页面由 tools/i18n.py 生成（注释与字符串换成英文）：看得见的代码行同样不超过 VISIBLE_CODE_COLUMNS 列。"""
    text = english_translator.page(page_path(doc))
    sources = visible_code_cells(text, ".md")
    for indent, body in re.findall(r"^( *)`{3,}python[ \t]*\n(.*?)^ *`{3,}", text, re.S | re.M):
        sources.append("\n".join(line[len(indent):] for line in body.splitlines()))
    wide = [f"{_columns(line)} 列：{line.strip()[:70]}" for s in sources for line in s.splitlines()
            if _columns(line) > VISIBLE_CODE_COLUMNS]
    assert not wide, (f"英文版的 {doc} 有看得见的代码行超过 {VISIBLE_CODE_COLUMNS} 列"
                      "（缩短 locale/en/LC_MESSAGES/code.po 里的译文）：\n" + "\n".join(wide))


# ---------------------------------------------------------------- 抄下来能运行


def _normalise(text: str) -> str:
    """比较时不计空白的多少：myst-nb 合并输出流时会去掉每一段输出末尾的空白，
    于是 `print("标题:\n", t)` 里换行后的那个空格在页面上时有时无（取决于内核怎样分段发送）。"""
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _pages_with_code() -> list[str]:
    docs = []
    for doc in toc_docnames():
        path = page_path(doc)
        if visible_code_cells(path.read_text(encoding="utf-8"), path.suffix):
            docs.append(doc)
    return docs


@pytest.mark.book
@pytest.mark.parametrize("doc", _pages_with_code())
def test_visible_cells_copied_in_order_run_and_print_what_the_page_shows(built_book, fork_runner, doc, tmp_path):
    path = page_path(doc)
    cells = visible_cells(path.read_text(encoding="utf-8"), path.suffix)
    if any("raises-exception" in (c.metadata.get("tags") or []) for c in cells):
        pytest.skip(f"{doc} 有故意报错的单元（作业的起始代码），抄下来本来就不是一个能跑完的程序")
    program = "\n\n".join(c.source for c in cells)
    script = tmp_path / "page.py"
    script.write_text(program, encoding="utf-8")
    env = {**os.environ, "MPLBACKEND": "Agg"}
    # 与 `python page.py` 相同，只是 torch 已在母体里 import 好（conftest.fork_runner，tests/support/forkrun.py）
    proc = fork_runner.run(script, cwd=path.parent, env=env, timeout=600)
    assert proc.returncode == 0, f"{doc}：抄下来的程序运行失败：\n{proc.stderr[-2000:]}"
    assert not proc.stderr.strip(), f"{doc}：抄下来的程序写了 stderr：\n{proc.stderr[-2000:]}"

    cells = cell_outputs((built_book.html / f"{doc}.html").read_text(encoding="utf-8"))
    shown = "".join(t if t.endswith("\n") else t + "\n" for cell in cells for t in cell)
    assert _normalise(proc.stdout) == _normalise(shown), (
        f"{doc}：抄下来的程序打印的内容和页面上显示的不一样"
        f"（页面上显示了表达式的值，或者隐藏的单元改变了可见单元的输出？）\n"
        f"--- 程序打印 ---\n{proc.stdout[:1500]}\n--- 页面显示 ---\n{shown[:1500]}"
    )


def test_output_reader_collects_stream_and_value_outputs_per_cell():
    html = """<article>
    <div class="cell docutils container"><div class="cell_input docutils container"><pre>x</pre></div>
    <div class="cell_output docutils container"><div class="output stream highlight-myst-ansi notranslate">
    <div class="highlight"><pre><span></span>a &lt; b
</pre></div></div></div></div>
    <div class="cell docutils container"><div class="cell_output docutils container">
    <div class="output text_plain highlight-myst-ansi notranslate"><div class="highlight"><pre><span></span>42</pre>
    </div></div></div></div></article>"""
    assert cell_outputs(html) == [["a < b\n"], ["42"]]
