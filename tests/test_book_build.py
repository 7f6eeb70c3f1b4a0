"""整本书的构建是一项测试：从全新的 Sphinx 环境构建，退出码为 0，目录里每一页都带着执行结果。

另外检查全书的两条写作规矩：正文里没有手打的计算结果（三位以上小数必须 glue），
源章节里的句子没有原样出现在书里。
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from support.book import REPO, toc_docnames
from support.pagekit import soup

# 读构建结果的测试由 conftest 自动标记为 book / kernel；写作规矩的检查只读源文件，make unit 也跑

# 源章节（内容规格）不随仓库分发。默认在仓库旁边的 shared/source/ 里（../shared/source/…），
# 也可以用环境变量 BOOK_SOURCE_TEXT 指向它；两处都没有时，依赖它的检查跳过并说明原因。
_SOURCE_NAME = Path("source") / "000_1f33ab0ac3668d6e.txt"
SOURCE = Path(os.environ.get("BOOK_SOURCE_TEXT") or REPO.parent / "shared" / _SOURCE_NAME)


def page_source(doc: str) -> str:
    return (REPO / f"{doc}.md").read_text(encoding="utf-8")


def has_visible_code_cells(doc: str) -> bool:
    """页面里有没有不带 remove-cell 标签的代码单元（它们的输出应出现在 HTML 里）。"""
    cells = re.findall(r"^```\{code-cell\}[^\n]*\n((?::[^\n]*\n)*)", page_source(doc), re.M)
    return any("remove-cell" not in options for options in cells)


def test_book_builds_from_a_fresh_sphinx_environment(built_book):
    if built_book.returncode is None:
        pytest.skip("BOOK_PREBUILT：这次没有运行构建，构建本身是否成功由那次构建的输出说明")
    assert built_book.returncode == 0
    assert "--all" in built_book.output, "整本书的构建测试必须从全新的 Sphinx 环境开始"
    assert "build succeeded" in built_book.output


@pytest.mark.parametrize("doc", toc_docnames())
def test_every_toc_page_is_rendered_with_its_executed_output(built_book, doc):
    html_file = built_book.html / f"{doc}.html"
    assert html_file.exists(), f"{doc} 没有生成 HTML"
    if has_visible_code_cells(doc):
        assert soup(html_file).select("div.cell_output"), f"{doc} 有代码单元，但 HTML 里没有任何执行输出"


def test_index_page_shows_the_torch_version_it_was_built_with(built_book):
    import torch

    text = soup(built_book.html / "book" / "index.html").get_text()
    assert f"PyTorch {torch.__version__}" in text


# ---------- 写作规矩 ----------

_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.S | re.M)
_MATH_OR_CODE = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$|\{glue[^}]*\}`[^`]*`|`[^`\n]*`", re.S)
_LONG_DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d{3,}(?:e[+-]?\d+)?%?")


def prose_of(text: str) -> str:
    """去掉代码块、指令块、数学和行内代码/glue 之后剩下的正文。"""
    return _MATH_OR_CODE.sub("", _FENCE.sub("", text))


@pytest.mark.parametrize("doc", toc_docnames())
def test_prose_has_no_hand_typed_computed_numbers(doc):
    """正文里三位以上的小数只能来自 glue；表格里的也算正文。"""
    found = _LONG_DECIMAL.findall(prose_of(page_source(doc)))
    assert not found, f"{doc} 的正文里有手打的数字 {found}：请用 glue 填入"


def test_prose_number_check_can_fail():
    assert _LONG_DECIMAL.findall(prose_of("权重是 0.2454，而 {glue:text}`x:.4f` 不算。"))  == ["0.2454"]
    assert not _LONG_DECIMAL.findall(prose_of("公式 $0.2454$ 与 `0.2454` 不算。"))


def source_sentences(min_cjk: int = 15) -> list[str]:
    cjk = re.compile(r"[\u4e00-\u9fff]")
    parts = re.split(r"[。！？\n；]", SOURCE.read_text(encoding="utf-8"))
    return [s.strip() for s in parts if len(cjk.findall(s)) >= min_cjk]


@pytest.mark.skipif(not SOURCE.is_file(), reason=f"没有找到源章节 {SOURCE}（放在仓库旁边的 shared/source/ 下，"
                    "或用环境变量 BOOK_SOURCE_TEXT 指向它）")
def test_no_sentence_of_the_source_stands_word_for_word_in_the_book():
    norm = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    book = norm("\n".join(p.read_text(encoding="utf-8") for p in (REPO / "book").rglob("*.md")))
    copied = [s for s in source_sentences() if norm(s) in book]
    assert not copied, f"{len(copied)} 句源文原样出现在书里，例如：{copied[:3]}"
