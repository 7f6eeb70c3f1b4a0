"""英文版的文字替换：把中文源文件里要给读者看的中文换成 gettext 目录里的英文（tools/i18n.py 用它）。

本书的英文版不是第二套页面，而是从中文源文件生成的：

- **页面的正文**（段落、标题、表格的格、图注、提示框的标题、术语表……）的消息由 Sphinx 的 gettext 构建器
  提取（msgid 是 MyST 源文字，带着角色），每页一个目录 ``locale/en/LC_MESSAGES/book/<页面>.po``；
  ``translate_page`` 在源文件里找到每条 msgid，换成它的译文。
- **代码里的人话**（Python 的注释与字符串、JS 与 CSS 的字符串、HTML 模板的文字、页面里 ``text``/``bash``
  代码块的行）是一个目录 ``locale/en/LC_MESSAGES/code.po``：同一句中文在哪里都是同一句英文。
  ``translate_code`` 只换这些片段，代码本身一个字符都不动，所以英文版的代码与中文版是同一份代码。

这里只有纯函数（不读写文件、不依赖 Sphinx），测试可以直接调用。
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def has_cjk(text: str) -> bool:
    return bool(CJK.search(text))


@dataclass(frozen=True)
class Piece:
    """源文件里一段要翻译的文字：[start, end) 是它在整个文本里的字符位置，text 是 msgid。"""

    start: int
    end: int
    text: str
    line: int
    fstring: bool = False   # Python 的 f-string：{…} 里是代码，译文必须原样保留


# ---- Python ---------------------------------------------------------------------------------

_STRING = re.compile(r"^([rRbBuUfF]*)('''|\"\"\"|'|\")(.*)\2$", re.S)
_COMMENT = re.compile(r"^#+\s*(?:(?:noqa|type|pragma)\b[^ ]*(?: [A-Z]+\d+(?:,\s*[A-Z]+\d+)*)?\s+)?")


def _offsets(text: str) -> list[int]:
    starts, pos = [0], 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        starts.append(pos)
    return starts


def python_pieces(source: str, *, comments: bool = True, docstrings: bool = True) -> list[Piece]:
    """Python 源码里含中文的注释与字符串字面量（只取引号里面 / ``#`` 后面的文字）。

    ``docstrings=False`` 时跳过独占一个语句的字符串（文档字符串），``comments=False`` 时跳过注释。
    源码不能分词（例如故意写错的单元）时抛 ``tokenize.TokenError`` / ``SyntaxError``。"""
    starts = _offsets(source)
    pieces: list[Piece] = []
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for i, tok in enumerate(tokens):
        if not has_cjk(tok.string):
            continue
        begin = starts[tok.start[0] - 1] + tok.start[1]
        if tok.type == tokenize.COMMENT:
            if not comments:
                continue
            prefix = _COMMENT.match(tok.string).end()
            pieces.append(Piece(begin + prefix, begin + len(tok.string), tok.string[prefix:], tok.start[0]))
        elif tok.type == tokenize.STRING:
            if not docstrings:
                skip = (tokenize.NL, tokenize.COMMENT)
                before = next((t for t in reversed(tokens[:i]) if t.type not in skip), None)
                after = next((t for t in tokens[i + 1:] if t.type not in skip), None)
                if (before is None or before.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)) and \
                        (after is None or after.type in (tokenize.NEWLINE, tokenize.ENDMARKER)):
                    continue
            m = _STRING.match(tok.string)
            if not m:  # 不会发生：分词器给出的字符串总是这个样子
                raise ValueError(f"认不出的字符串字面量：{tok.string[:40]!r}")
            inner = begin + len(m.group(1)) + len(m.group(2))
            pieces.append(Piece(inner, inner + len(m.group(3)), m.group(3), tok.start[0],
                                fstring="f" in m.group(1).lower()))
    return pieces


# ---- JS / CSS / HTML / 纯文本 -----------------------------------------------------------------

_JS_TOKEN = re.compile(r"//[^\n]*|/\*.*?\*/|([\"'`])((?:\\.|(?!\1)[^\\\n])*)\1", re.S)


def js_pieces(source: str) -> list[Piece]:
    """JS 与 CSS：含中文的字符串字面量（引号里面的文字）；注释不算（读者看不到）。"""
    out = []
    for m in _JS_TOKEN.finditer(source):
        if m.group(1) and has_cjk(m.group(2)):
            out.append(Piece(m.start(2), m.end(2), m.group(2), source.count("\n", 0, m.start()) + 1))
    return out


_HTML_SKIP = re.compile(r"\{#.*?#\}|<!--.*?-->", re.S)
_HTML_SEGMENT = re.compile(r"[^<>\"\n]+")


def html_pieces(source: str) -> list[Piece]:
    """HTML 模板与 SVG：标签之间、属性引号里含中文的文字（去掉首尾空白）；Jinja 与 HTML 的注释不算。"""
    masked = _HTML_SKIP.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), source)
    out = []
    for m in _HTML_SEGMENT.finditer(masked):
        text = m.group()
        if not has_cjk(text):
            continue
        lead = len(text) - len(text.lstrip())
        core = text.strip()
        start = m.start() + lead
        out.append(Piece(start, start + len(core), core, source.count("\n", 0, start) + 1))
    return out


def line_pieces(source: str, comment: str | None = None) -> list[Piece]:
    """纯文本（页面里的 ``text``、``bash`` 代码块）：每一行含中文的部分（去掉首尾空白）是一条消息。
    comment 是注释开头的正则（如 LaTeX 的 ``%``）：注释不算。"""
    out, pos = [], 0
    for number, line in enumerate(source.splitlines(keepends=True), 1):
        body = line.rstrip("\n")
        if comment:
            body = re.split(comment, body, maxsplit=1)[0]
        if has_cjk(body):
            lead = len(body) - len(body.lstrip())
            core = body.strip()
            out.append(Piece(pos + lead, pos + lead + len(core), core, number))
        pos += len(line)
    return out


def apply(source: str, pieces: list[Piece], lookup) -> str:
    """把每一段换成 ``lookup(msgid)``（返回 None 时保留原文）。"""
    parts, last = [], 0
    for piece in sorted(pieces, key=lambda p: p.start):
        new = lookup(piece.text)
        if new is None:
            continue
        parts.append(source[last:piece.start])
        parts.append(new)
        last = piece.end
    parts.append(source[last:])
    return "".join(parts)


# ---- MyST 页面 ------------------------------------------------------------------------------

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(\{[^}]*\}|[\w+-]*)\s*(.*)$")
CODE_LANGS = {"{code-cell}": "py", "python": "py", "{code-block}": "py", "text": "line", "bash": "line",
              "{raw}": "html"}


@dataclass
class Block:
    kind: str   # "prose"、"py"、"line"、"html"、"opaque"（不翻译的代码块，如 math）
    text: str
    first_line: int


def split_page(text: str) -> list[Block]:
    """把 MyST 页面切成正文与代码块。代码块是三个以上反引号的围栏里、语言属于 CODE_LANGS 的内容
    （代码单元开头的 ``:tags:`` 或 ``---`` 选项行归正文一侧，原样保留）。"""
    blocks: list[Block] = []
    lines = text.splitlines(keepends=True)
    buf, buf_start, i = [], 1, 0

    def flush(kind: str, start: int, chunk: list[str]) -> None:
        if chunk:
            blocks.append(Block(kind, "".join(chunk), start))

    while i < len(lines):
        m = _FENCE.match(lines[i])
        lang = m.group(3) if m else None
        if m and lang in CODE_LANGS:
            kind = CODE_LANGS[lang]
            if lang == "{raw}" and m.group(4).strip() != "html":
                kind = "opaque"
            fence = m.group(2)
            head = [lines[i]]
            i += 1
            # 指令的选项：---…--- 块，或 :key: value 行
            if i < len(lines) and lines[i].strip() == "---":
                head.append(lines[i]); i += 1
                while i < len(lines) and lines[i].strip() != "---":
                    head.append(lines[i]); i += 1
                if i < len(lines):
                    head.append(lines[i]); i += 1
            while i < len(lines) and re.match(r"^\s*:[\w-]+:", lines[i]):
                head.append(lines[i]); i += 1
            buf.extend(head)
            flush("prose", buf_start, buf)
            body_start = i + 1
            body = []
            while i < len(lines) and not re.match(rf"^\s*{re.escape(fence)}\s*$", lines[i]):
                body.append(lines[i]); i += 1
            flush(kind, body_start, body)
            buf, buf_start = [], i + 1
            continue
        buf.append(lines[i])
        i += 1
    flush("prose", buf_start, buf)
    return blocks


def code_pieces(kind: str, text: str) -> list[Piece]:
    if kind == "py":
        try:
            return python_pieces(text)
        except (tokenize.TokenError, SyntaxError, IndentationError):
            return line_pieces(text)  # 故意写不完整的代码：按行
    if kind == "line":
        return line_pieces(text)
    if kind == "html":
        return html_pieces(text)
    return []


_COMMENT_LINE = re.compile(r"^%[^\n]*\n?", re.M)


def prose_pieces(text: str, msgids) -> list[Piece]:
    """正文里每条 msgid 出现的位置：从长到短找，已经占用的字符不再给更短的 msgid；前后紧挨着中文的不算
    （那是更长的一句话的一部分）。"""
    taken = [False] * len(text)
    out = []
    for msgid in sorted(set(msgids), key=len, reverse=True):
        if not has_cjk(msgid):  # 没有中文的消息（表格里的数、公式）译文就是原文
            continue
        start = 0
        while True:
            pos = text.find(msgid, start)
            if pos < 0:
                break
            end = pos + len(msgid)
            start = pos + 1
            if any(taken[pos:end]):
                continue
            if (pos > 0 and has_cjk(text[pos - 1]) and has_cjk(msgid[0])) or \
                    (end < len(text) and has_cjk(text[end]) and has_cjk(msgid[-1])):
                continue
            for k in range(pos, end):
                taken[k] = True
            out.append(Piece(pos, end, msgid, text.count("\n", 0, pos) + 1))
    return out


def translate_page(text: str, prose: dict[str, str], code) -> tuple[str, list[tuple[int, str]]]:
    """把一页 MyST 换成英文：正文按 ``prose``（msgid → 译文），代码块按 ``code(msgid)``。

    作者注释行（``%`` 开头，页面上不显示）去掉。返回 (英文页面, 还剩中文的行 [(行号, 那一行)])。"""
    out = []
    leftovers: list[tuple[int, str]] = []
    for block in split_page(text):
        if block.kind == "prose":
            body = _COMMENT_LINE.sub(lambda m: "" if has_cjk(m.group()) else m.group(), block.text)
            new = apply(body, prose_pieces(body, prose), prose.get)
        elif block.kind == "opaque":
            new = block.text
        else:
            new = apply(block.text, code_pieces(block.kind, block.text), code)
        for offset, line in enumerate(new.splitlines()):
            if has_cjk(line):
                leftovers.append((block.first_line + offset, line))
        out.append(new)
    return "".join(out), leftovers


def page_code_pieces(text: str) -> list[tuple[Piece, str]]:
    """一页里所有代码块的消息（给提取用）：[(片段, 代码块种类)]，行号是页面里的行号。"""
    out = []
    for block in split_page(text):
        if block.kind in ("prose", "opaque"):
            continue
        for piece in code_pieces(block.kind, block.text):
            out.append((Piece(piece.start, piece.end, piece.text, block.first_line + piece.line - 1,
                              piece.fstring), block.kind))
    return out


_OPTION = re.compile(r"^\s*:[\w-]+:\s*(.*)$")
_DIRECTIVE = re.compile(r"^\s*(?:`{3,}|:{3,})\{[^}]*\}\s*(.*)$")


def leftover_messages(line: str) -> list[str]:
    """正文里 Sphinx 没有提取的中文（指令的参数与选项、{table} 里的 Markdown 表格……）按结构切成消息：
    选项行取值，指令行取参数，表格行取每一格，其余取整行（去掉首尾空白）。"""
    for pattern in (_OPTION, _DIRECTIVE):
        m = pattern.match(line)
        if m:
            return [m.group(1).strip()] if has_cjk(m.group(1)) else []
    if line.strip().startswith("|"):
        return [cell.strip() for cell in line.strip().strip("|").split("|") if has_cjk(cell)]
    return [line.strip()] if has_cjk(line) else []


_BIB_FIELD = re.compile(r"(\w+)\s*=\s*\{\{?([^{}\n]*)\}")


def bib_pieces(source: str) -> list[Piece]:
    """BibTeX：含中文的字段值（花括号里面的文字）。标题（title）不译：文献按它发表时的标题引用，读者才检索得到
    （英文版的文字在标题旁注明它是中文的）。"""
    return [Piece(m.start(2), m.end(2), m.group(2), source.count("\n", 0, m.start()) + 1)
            for m in _BIB_FIELD.finditer(source) if has_cjk(m.group(2)) and m.group(1).lower() != "title"]


def tex_pieces(source: str) -> list[Piece]:
    """LaTeX（book_pdf.sty）：每一行注释（``%`` 之后）以外含中文的部分是一条消息。"""
    return line_pieces(source, comment=r"(?<!\\)%")


def fstring_expressions(literal: str) -> list[str]:
    """f-string 字面量里 ``{…}`` 中的表达式（``{{``、``}}`` 不算）。"""
    out, depth, current, i = [], 0, "", 0
    while i < len(literal):
        pair = literal[i:i + 2]
        if depth == 0 and pair in ("{{", "}}"):
            i += 2
            continue
        char = literal[i]
        if char == "{":
            depth += 1
        if depth:
            current += char
        if char == "}" and depth:
            depth -= 1
            if not depth:
                out.append(current)
                current = ""
        i += 1
    return out


def cjk_in_fstring_code(source: str) -> list[int]:
    """f-string 的 ``{…}`` 表达式里写着中文的行号：那是代码，不会被翻译（把中文放进表达式外的字符串）。"""
    lines = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING and re.match(r"^[rRbBuU]*[fF]", tok.string):
            if any(has_cjk(e) for e in fstring_expressions(tok.string)):
                lines.append(tok.start[0])
    return lines
