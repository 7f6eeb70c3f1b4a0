"""包的结构约定（见 issue 13 §4、issue 10 §4）。

- `minigpt.attention` 只有注意力算子与 mask；√d_k 的实验在 `minigpt.experiments`。
- 书页用 `literalinclude :pyobject:` 展示的函数“数学在前”：函数体里没有 raise，
  输入检查放在小的辅助函数里；attention.py 里展示的函数体（文档字符串之外）不超过 3 条语句。
- 公开函数都有完整的类型标注（参数与返回值）。
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import minigpt.attention as attention
import minigpt.experiments as experiments

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "minigpt"
# homework.py 由作业的维护者改写，这里暂不检查它的标注
TYPED_MODULES = ["attention", "claims", "data", "experiments", "interventions", "layers", "leak", "notebook", "plots",
                 "probes", "seeds", "tasks", "tinygpt", "training"]


def test_attention_module_holds_only_the_operator_and_the_mask():
    public = {n for n, v in vars(attention).items()
              if not n.startswith("_") and inspect.isfunction(v) and v.__module__ == attention.__name__}
    assert public == {
        "attention_scores", "scale_scores", "softmax_weights", "weighted_sum",
        "scaled_dot_product_attention", "causal_mask", "apply_mask", "check_mask_shape",
        "to_nn_mha_mask", "to_sdpa_mask",
    }
    assert not [n for n, v in vars(attention).items() if inspect.isclass(v)
                and v.__module__ == attention.__name__], "attention.py 里不该有类（结果数据类属于 experiments）"
    for name in ("dot_product_stats", "softmax_saturation", "DotProductStat", "SoftmaxSaturation"):
        assert hasattr(experiments, name), name


# 正文逐个展示的计算步骤：函数体（文档字符串之外）最多 3 条语句，其中至多一条是输入检查
STEPS = {"attention_scores", "scale_scores", "softmax_weights", "weighted_sum",
         "causal_mask", "apply_mask"}


def _shown_objects() -> list[tuple[str, str, str]]:
    """书页里 literalinclude :pyobject: 展示的对象：(页面, 源文件, 对象名)。"""
    found = []
    block = re.compile(r"```\{literalinclude\}\s+(\S+)\n((?::[^\n]*\n)*)")
    for page in sorted((REPO / "book").glob("*.md")):
        for path, options in block.findall(page.read_text(encoding="utf-8")):
            m = re.search(r":pyobject:\s*(\S+)", options)
            if m:
                found.append((page.name, (page.parent / path).resolve().name, m.group(1)))
    return found


def _find(tree: ast.Module, dotted: str) -> ast.AST:
    node: ast.AST = tree
    for part in dotted.split("."):
        node = next(n for n in ast.iter_child_nodes(node)
                    if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part)
    return node


def test_pages_show_some_objects():
    shown = _shown_objects()
    assert ("s2_scaled_dot_product.md", "attention.py", "attention_scores") in shown
    assert ("s2_scaled_dot_product.md", "attention.py", "softmax_weights") in shown


@pytest.mark.parametrize("page, source, name", _shown_objects())
def test_shown_code_reads_math_first(page, source, name):
    tree = ast.parse((PACKAGE / source).read_text(encoding="utf-8"))
    node = _find(tree, name)
    raises = [n.lineno for n in ast.walk(node) if isinstance(n, ast.Raise)]
    assert not raises, f"{page} 展示的 {name} 里有 raise（第 {raises} 行）：把输入检查挪进小的辅助函数"
    if name in STEPS:
        body = node.body[1:] if ast.get_docstring(node) else node.body
        assert len(body) <= 3, f"{name} 的函数体有 {len(body)} 条语句，数学应当一眼看完（≤ 3）"


def test_math_first_check_can_fail():
    tree = ast.parse("def f(x):\n    '''doc'''\n    if x < 0:\n        raise ValueError\n    return x\n")
    assert [n for n in ast.walk(_find(tree, "f")) if isinstance(n, ast.Raise)]


def _untyped(module_name: str, source: str | None = None) -> list[str]:
    if source is None:
        source = (PACKAGE / f"{module_name}.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    missing = []
    nodes = [(n, "") for n in tree.body]
    nodes += [(m, f"{n.name}.") for n in tree.body if isinstance(n, ast.ClassDef)
              and not n.name.startswith("_") for m in n.body]
    for node, prefix in nodes:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_") and node.name != "__init__":
            continue
        args = [a for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                if a.arg not in ("self", "cls")]
        bad = [a.arg for a in args if a.annotation is None]
        if bad:
            missing.append(f"{module_name}.{prefix}{node.name} 的参数 {bad}")
        if node.returns is None and node.name != "__init__":
            missing.append(f"{module_name}.{prefix}{node.name} 的返回值")
    return missing


@pytest.mark.parametrize("module_name", TYPED_MODULES)
def test_public_functions_are_fully_typed(module_name):
    missing = _untyped(module_name)
    assert not missing, "缺少类型标注：\n" + "\n".join(missing)


def test_type_hint_check_can_fail():
    src = "def f(x: int, y) -> int: ...\nclass C:\n    def g(self, z: int): ...\ndef _h(a): ...\n"
    assert _untyped("m", src) == ["m.f 的参数 ['y']", "m.C.g 的返回值"]


# 第 3、4 节展示的对象：展示出来的那段源码不指向它所在的这一页（读者已经在这一页上了），
# 指向本页的说明写在 def / class 上面一行的注释里，包的读者照样知道去哪一节看。
# （其他页面的对象由各页的维护者按同一规则处理后，可以把页面加进这个集合。）
NAV_CHECKED_PAGES = {"s3_causal_mask.md": 3, "s4_multi_head.md": 4, "s7_trained_heads.md": 7}


@pytest.mark.parametrize("page, source, name",
                         [t for t in _shown_objects() if t[0] in NAV_CHECKED_PAGES])
def test_shown_code_does_not_point_to_the_page_it_is_shown_on(page, source, name):
    section = NAV_CHECKED_PAGES[page]
    text = (PACKAGE / source).read_text(encoding="utf-8")
    node = _find(ast.parse(text), name)
    lines = text.splitlines()
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    shown = "\n".join(lines[first - 1:node.end_lineno])
    assert f"见第 {section} 节" not in shown, f"{page} 展示的 {name} 里写着“见第 {section} 节”"
    if "." not in name:  # 顶层对象：上面一行注释写明它属于哪一节
        assert lines[first - 2].strip().startswith(f"# 第 {section} 节"), (name, lines[first - 2])
