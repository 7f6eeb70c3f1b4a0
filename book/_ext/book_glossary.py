"""术语表的锚点稳定、可读（在 _config.yml 的 sphinx.local_extensions 里登记）。

Sphinx 7.4 给术语做锚点时，把术语文字转成 ASCII；中文术语转完是空的，于是得到按出场顺序编号的
``term-0``、``term-1``……：术语表里加一条，后面每一条的锚点都挪一位，从书外（课程网页、笔记、英文版）
指进术语表的链接就悄悄指到了别的术语上。这是 ``make_glossary_term`` 的代码，配置改不了。

这里换掉 ``glossary`` 指令（子类，只在原来的 ``run`` 之后改锚点）：

- 术语本身是 ASCII 的（``token``、``d_model``、``LayerNorm``……），锚点照旧（``term-token``），本来就稳定可读；
- 中文术语的锚点取自它条目里 “**英文** …” 那一行的英文名：``嵌入`` → ``term-embedding``，
  ``缩放点积注意力`` → ``term-scaled-dot-product-attention``（括号里的补充和缩写不算）；
- 旧的编号锚点（``term-0`` …… ``term-12``，本书到 2026-12 为止发布的版本里用的）按 ``LEGACY_IDS`` 这张
  冻结的表留在原来那个术语上（HTML 里是 ``<dt>`` 里的一个空 ``<span id>``），旧链接照样到达原来的术语；
  这张表以后不再改。

中文术语没有英文名，或两条术语得到同一个锚点时发警告（构建带 ``-W``，于是构建失败），说清是哪一条。
``{term}`` 引用、索引条目都改用新锚点。
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.domains.std import Glossary
from sphinx.util import logging

logger = logging.getLogger(__name__)

# 2026-12 以前的版本里中文术语的编号锚点（按当时的出场顺序）；冻结，不随术语表增删而变
LEGACY_IDS = {
    "嵌入": "term-0", "注意力": "term-1", "注意力分数": "term-2", "注意力权重": "term-3",
    "缩放点积注意力": "term-4", "因果遮蔽": "term-5", "多头注意力": "term-6", "头": "term-7",
    "头数": "term-8", "前馈网络": "term-9", "残差连接": "term-10", "梯度消失": "term-11",
    "路径长度": "term-12",
}

_ENGLISH = re.compile(r"英文\s*([^；;。\n]+)")


def english_name(definition: str) -> str | None:
    """条目正文里 “英文 …” 后面的英文名，去掉括号里的补充；没有这一项返回 None。"""
    m = _ENGLISH.search(definition)
    if not m:
        return None
    name = re.sub(r"[（(].*?[）)]", "", m.group(1)).strip()
    return name or None


def slug(name: str) -> str:
    """英文名 → 锚点里的一段：小写，字母数字以外的连成一个 “-”。"""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


class StableGlossary(Glossary):
    """和 Sphinx 的 glossary 指令一样，只是中文术语的锚点取自英文名（见模块说明）。"""

    def run(self) -> list[nodes.Node]:
        result = super().run()
        std = self.env.get_domain("std")
        for item in (n for node in result for n in node.findall(nodes.definition_list_item)):
            definition = next(iter(item.findall(nodes.definition)), None)
            for term in item.findall(nodes.term):
                self._restamp(term, definition, std)
        return result

    def _restamp(self, term: nodes.term, definition: nodes.definition | None, std) -> None:
        text = term.astext()
        if text.isascii() or not term["ids"]:
            return
        english = english_name(definition.astext()) if definition is not None else None
        if english is None or not slug(english):
            logger.warning("术语表：中文术语 “%s” 的条目里没有 “**英文** …” 一项，做不出稳定的锚点", text,
                           location=term)
            return
        old, new = term["ids"][0], f"term-{slug(english)}"
        if new in self.state.document.ids:
            logger.warning("术语表：“%s” 的锚点 %s 已经被别的术语用了；换一个英文名", text, new, location=term)
            return
        term["ids"] = [new] + ([LEGACY_IDS[text]] if text in LEGACY_IDS else [])
        self.state.document.ids.pop(old, None)
        for node_id in term["ids"]:
            self.state.document.ids[node_id] = term
        std.objects[("term", text)] = (self.env.docname, new)
        std._terms[text.lower()] = (self.env.docname, new)
        for index in term.findall(addnodes.index):
            index["entries"] = [(kind, value, new if tid == old else tid, main, key)
                                for kind, value, tid, main, key in index["entries"]]


def setup(app: Sphinx) -> dict:
    # glossary 是 std 域的指令（Sphinx 先在域里找指令名），所以在域里替换它
    app.add_directive_to_domain("std", "glossary", StableGlossary, override=True)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
