"""书页用 literalinclude 展示的源码，文档字符串里不写指回这一页本身的“见第 N 节”。

读者正在第 N 节读这段源码，“（见第 N 节 …）”只是噪音；指向别的节的说明照常保留。
讲解源码的那一节改写在函数上方的注释里（注释不在 :pyobject: 截取的范围内）。
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "book"
# _toc.yml 里自动编号的七节：文件名 → 节号
SECTIONS = {"s1_intuition": 1, "s2_scaled_dot_product": 2, "s3_causal_mask": 3, "s4_multi_head": 4,
            "s5_ffn": 5, "s6_block": 6, "s7_trained_heads": 7}
INCLUDE = re.compile(r"```\{literalinclude\}\s+(\S+)\n(?:(?!```).)*?:pyobject:\s*(\S+)", re.S)


def shown_objects(page: Path) -> list[tuple[Path, str]]:
    """页面里每个 literalinclude 的 (源文件, pyobject 名)。"""
    text = page.read_text(encoding="utf-8")
    return [((page.parent / src).resolve(), obj) for src, obj in INCLUDE.findall(text)]


def docstring(path: Path, dotted: str) -> str:
    """源文件里 pyobject（可以是 Class.method）的文档字符串。"""
    node: ast.AST = ast.parse(path.read_text(encoding="utf-8"))
    for name in dotted.split("."):
        node = next(n for n in ast.iter_child_nodes(node)
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name)
    return ast.get_docstring(node) or ""


def test_shown_objects_finds_the_includes_of_section_two():
    names = [obj for _, obj in shown_objects(BOOK / "s2_scaled_dot_product.md")]
    assert {"attention_scores", "scale_scores", "softmax_weights", "weighted_sum",
            "scaled_dot_product_attention"} <= set(names), names


@pytest.mark.parametrize("name", SECTIONS)
def test_docstrings_shown_on_a_section_do_not_point_back_to_it(name):
    number = SECTIONS[name]
    own = re.compile(rf"第 ?{number} ?节")
    wrong = [f"{path.name}:{obj}：{doc.splitlines()[0] if doc else ''}"
             for path, obj in shown_objects(BOOK / f"{name}.md")
             if own.search(doc := docstring(path, obj))]
    assert not wrong, f"第 {number} 节展示的源码里，文档字符串又写着“见第 {number} 节”：" + "；".join(wrong)
