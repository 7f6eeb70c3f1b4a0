"""英文版：gettext 目录的提取、更新与核对，以及从中文源文件生成英文版的书（英文根目录）。

用法（在仓库根目录，用 .venv 里的 Python；``make translations`` 就是 ``update``）::

    python tools/i18n.py update            # 提取消息，更新 locale/en/LC_MESSAGES/ 下的目录（改过的中文标为 fuzzy）
    python tools/i18n.py check             # 核对：没译的、fuzzy 的、角色/公式/术语/占位符与原文不符的，退出码 1
    python tools/i18n.py root [--out DIR]  # 生成英文版的书（默认 _build/en/），tools/build_book.py --lang en 用它

设计（为什么这样做，见 README 的“英文版”）：

- 中文页面与 ``src/minigpt`` 是唯一的来源。英文是 gettext 目录里的译文：每页一个
  ``locale/en/LC_MESSAGES/book/<页面>.po``（Sphinx 的 gettext 构建器提取，sphinx-intl 更新），代码里的人话
  一个 ``locale/en/LC_MESSAGES/code.po``（本工具提取：tools/i18n_text.py）。
- 英文版的书是**生成**的：中文源文件逐个复制到 ``_build/en/``，正文的 msgid 换成译文、代码只换注释与字符串
  （代码本身一个字符都不动），配置换成英文。之后它就是一本普通的书：同一个 tools/build_book.py 构建它，
  glue、图、读者笔记本、作业包、PDF 都照常生成，数字由同一份代码、同样的种子算出。
- 只写内容变了的文件（保留修改时间），所以什么都没改时英文版的构建也是空操作；改了一条英文消息，
  只有用到它的那个文件变了。
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tokenize
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import i18n_text as tx  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LANG = "en"
GETTEXT = Path("_build") / "gettext"


def locale_dir(root: Path = REPO) -> Path:
    return root / "locale" / LANG / "LC_MESSAGES"


# ---- 哪些文件里有要翻译的代码文字 -------------------------------------------------------------------

def code_sources(root: Path = REPO) -> list[tuple[Path, str, dict]]:
    """[(文件, 种类, 选项)]：src/minigpt 的注释、文档字符串与字符串全部翻译（读者在页面上、在报错里、在作业包里
    看到它们）；构建扩展与生成学生笔记本的脚本只翻译字符串（界面文字、说明文件），不管注释与文档字符串
    （那是给维护者的，不进英文版的任何页面）。"""
    out = []
    for path in sorted((root / "src" / "minigpt").rglob("*.py")):
        out.append((path, "py", {}))
    for path in sorted((root / "book" / "_ext").glob("*.py")) + [root / "tools" / "make_student_notebook.py"]:
        out.append((path, "py", {"comments": False, "docstrings": False}))
    for path in sorted((root / "book" / "_ext").glob("*.js")) + sorted((root / "book" / "_static").glob("*.css")):
        out.append((path, "js", {}))
    for path in sorted((root / "book" / "_ext" / "templates").glob("*.html")) + \
            sorted((root / "book" / "_static").glob("*.svg")):
        out.append((path, "html", {}))
    for path in sorted((root / "book").glob("*.bib")):
        out.append((path, "bib", {}))
    for path in sorted((root / "book" / "_ext").glob("*.sty")):
        out.append((path, "tex", {}))
    # 包的简介（wheel 的 Summary）：英文版的 wheel 由英文的 pyproject.toml 打出（注释是维护者的，不译）
    out.append((root / "pyproject.toml", "py", {"comments": False}))
    return out


def file_pieces(path: Path, kind: str, options: dict) -> list[tx.Piece]:
    text = path.read_text(encoding="utf-8")
    if kind == "py":
        return tx.python_pieces(text, **options)
    if kind == "js":
        return tx.js_pieces(text)
    if kind == "bib":
        return tx.bib_pieces(text)
    if kind == "tex":
        return tx.tex_pieces(text)
    return tx.html_pieces(text)


FSTRING = "f-string: the code inside {...} must stay exactly as it is"
LATEX = "LaTeX: keep every \\command"
CONFIG_KEYS_NOT_TEXT = {"search_dict", "dict", "book_editions"}  # 不是给读者的文字，或两个版本相同


def yaml_text_values(data, path=()):
    """YAML 里含中文的字符串值（配置的书名、作者、提示文字……；目录的分组标题）：[(键路径, 值)]。"""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from yaml_text_values(value, path + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from yaml_text_values(value, path + (i,))
    elif isinstance(data, str) and tx.has_cjk(data):
        yield path, data


def pages(root: Path = REPO) -> list[Path]:
    return sorted((root / "book").glob("*.md"))


# ---- 提取 ------------------------------------------------------------------------------------------

def extract_prose(root: Path = REPO) -> Path:
    """Sphinx 的 gettext 构建器：每页一个 .pot（msgid 是 MyST 源文字）。页面不执行：消息只取自源文件
    （代码算出来、glue 进页面的文字是代码的消息，在 code.po 里）。"""
    out = root / GETTEXT
    code = subprocess.call([sys.executable, "-c", _GETTEXT_SCRIPT, str(root), str(out)], cwd=root,
                           env={**os.environ, "PYTHONPATH": str(root / "src")})
    if code:
        raise SystemExit(f"[i18n] gettext 构建失败（退出码 {code}）")
    (out / "sphinx.pot").unlink(missing_ok=True)          # 主题的界面文字：英文版用 Sphinx 自带的英文
    shutil.rmtree(out / "_static", ignore_errors=True)
    for page in pages(root):
        add_leftovers(page, out / "book" / (page.stem + ".pot"))
    return out


def add_leftovers(page: Path, pot: Path) -> None:
    """Sphinx 没有当作消息提取、页面上却看得见的中文（图的 alt 选项、练习的标题、{table} 里的 Markdown
    表格……）：按结构切成消息，补进这一页的 .pot，让这一页的每一行中文都有一条消息。"""
    catalog = read_catalog(pot)
    ids = {m.id: m.id for m in catalog if m.id}
    # 已有消息与代码块换成一个不是中文的记号，剩下的中文就是没有消息的
    _text, leftovers = tx.translate_page(page.read_text(encoding="utf-8"), dict.fromkeys(ids, "\0"),
                                         lambda s: "\0")
    rel = page.relative_to(page.parent.parent).as_posix()
    added = False
    for number, line in leftovers:
        for message in tx.leftover_messages(line):
            if message and message not in ids:
                catalog.add(message, locations=[(rel, number)])
                ids[message] = message
                added = True
    if added:
        write_pot(catalog, pot)


_GETTEXT_SCRIPT = r"""
import sys
from jupyter_book.sphinx import build_sphinx
root, out = sys.argv[1], sys.argv[2]
rc = build_sphinx(root, out, path_config=root + "/_config.yml", doctreedir=root + "/_build/.doctrees-gettext",
                  builder="gettext", noconfig=True, really_quiet=True,
                  confoverrides={"gettext_compact": False, "gettext_uuid": False, "gettext_location": False,
                                 "gettext_additional_targets": [], "latex_individualpages": False,
                                 "nb_execution_mode": "off"})
sys.exit(1 if rc else 0)
"""


def extract_code(root: Path = REPO):
    """代码里的人话（页面的代码块、包、扩展、模板、配置与目录的文字）：一个目录，同一句中文一个译文。"""
    from babel.messages.catalog import Catalog

    catalog = Catalog(project="attention-transformer-block", fuzzy=False)
    for page in pages(root):
        rel = page.relative_to(root).as_posix()
        for piece, _kind in tx.page_code_pieces(page.read_text(encoding="utf-8")):
            catalog.add(piece.text, locations=[(rel, piece.line)], auto_comments=[FSTRING] if piece.fstring else [])
    for path, kind, options in code_sources(root):
        rel = path.relative_to(root).as_posix()
        for piece in file_pieces(path, kind, options):
            notes = [FSTRING] if piece.fstring else [LATEX] if kind == "tex" else []
            catalog.add(piece.text, locations=[(rel, piece.line)], auto_comments=notes)
    import yaml

    for name in ("_config.yml", "_toc.yml"):
        data = yaml.safe_load((root / name).read_text(encoding="utf-8"))
        for key_path, value in yaml_text_values(data):
            if any(key in CONFIG_KEYS_NOT_TEXT for key in key_path):
                continue
            catalog.add(value, locations=[(name, 0)], auto_comments=[".".join(map(str, key_path))])
    return catalog


def write_pot(catalog, path: Path) -> None:
    from babel.messages.pofile import write_po

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        write_po(f, catalog, width=0, omit_header=False)


def update(root: Path = REPO) -> None:
    """提取全部消息，更新 locale/en/LC_MESSAGES/ 下的目录：新消息空着，改过的中文把旧译文标为 fuzzy。"""
    out = extract_prose(root)
    write_pot(extract_code(root), out / "code.pot")
    subprocess.check_call([str(Path(sys.executable).parent / "sphinx-intl"), "update", "-p", str(out),
                           "-l", LANG, "-d", str(root / "locale"), "-w", "0"], cwd=root)


# ---- 读目录 ----------------------------------------------------------------------------------------

def read_catalog(path: Path):
    from babel.messages.pofile import read_po

    with path.open("rb") as f:
        return read_po(f)


def translations(path: Path) -> dict[str, str]:
    """目录里译好的消息（不含 fuzzy 的、空的）：{msgid: 译文}。"""
    if not path.is_file():
        return {}
    return {m.id: m.string for m in read_catalog(path)
            if m.id and m.string and "fuzzy" not in m.flags}


# ---- 核对 ------------------------------------------------------------------------------------------

ROLE = re.compile(r"\{([a-z][a-z:-]*)\}`([^`]*)`")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\{[^{}\s]*\}|%[sdrf]|%\([a-z_]+\)[sdrf]")


def _target(body: str) -> str:
    m = re.search(r"<([^<>]+)>\s*$", body)
    return m.group(1) if m else body


# 内容是给读者看的文字的角色（本书的扩展定义的）：译文翻译其中的文字，只核对占位符
TEXT_ROLES = {"book-pdf", "book-student-site", "book-version"}


def roles(text: str, terms: dict[str, str] | None = None) -> Counter:
    """消息里的 MyST 角色：(角色, 目标)。术语的目标按术语表的译文换算（terms: 中文词条 → 英文词条）。"""
    out = Counter()
    for name, body in ROLE.findall(text):
        if name in TEXT_ROLES:
            out[(name, tuple(sorted(PLACEHOLDER.findall(body))))] += 1
        elif name == "term":
            target = _target(body)
            if terms is not None:
                target = terms.get(target, target)
            out[(name, target.lower())] += 1
        elif name in ("doc", "ref", "numref"):
            out[(name, _target(body))] += 1
        else:
            out[(name, body)] += 1
    return out


def message_problems(msgid: str, msgstr: str, kind: str, terms: dict[str, str], allow_cjk: str = "",
                     fstring: bool = False, latex: bool = False) -> list[str]:
    """一条译文与原文不符的地方（空表示没问题）。kind：prose（页面正文）或 code（代码里的文字）。

    译文可以刻意保留原文里的中文词（讲到某个中文词的地方），不能有原文没有的中文，也不能有全角标点；
    allow_cjk 是另外允许出现的中文所在的文字（术语表：整页的中文源文件，条目会写出它的中文名）。"""
    problems = []
    if tx.has_cjk(msgstr):
        runs = re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", msgstr)
        if any(run not in msgid and run not in allow_cjk for run in runs) \
                or re.search(r"[\u3000-\u303f\uff00-\uffef]", msgstr):
            problems.append("译文里有中文：" + "".join(tx.CJK.findall(msgstr))[:30])
    if kind == "prose":
        if roles(msgid, terms) != roles(msgstr):
            a, b = roles(msgid, terms), roles(msgstr)
            problems.append(f"角色不同：原文多 {dict(a - b)}，译文多 {dict(b - a)}")
        # 公式里的 \text{…} 是文字，可以翻译；其余一个字符都不能变
        strip = lambda s: re.sub(r"\\text\{[^{}]*\}", r"\\text{}", ROLE.sub("", s))  # noqa: E731
        if Counter(MATH.findall(strip(msgid))) != Counter(MATH.findall(strip(msgstr))):
            a, b = Counter(MATH.findall(strip(msgid))), Counter(MATH.findall(strip(msgstr)))
            problems.append(f"公式不同：原文多 {list(a - b)}，译文多 {list(b - a)}")
    else:
        a, b = Counter(PLACEHOLDER.findall(msgid)), Counter(PLACEHOLDER.findall(msgstr))
        if fstring:
            a, b = Counter(tx.fstring_expressions(msgid)), Counter(tx.fstring_expressions(msgstr))
        if latex:  # LaTeX 的花括号是分组，不是占位符：核对命令（\quad 这类排版间距除外）
            commands = lambda s: Counter(c for c in re.findall(r"\\[A-Za-z@]+", s) if c not in ("\\quad", "\\,"))  # noqa: E731
            a, b = commands(msgid), commands(msgstr)
        if a != b:
            problems.append(f"占位符不同：原文多 {list(a - b)}，译文多 {list(b - a)}")
    return problems


def glossary_terms(root: Path = REPO) -> dict[str, str]:
    """术语表的词条（中文）→ 英文版的词条：取自 glossary.po 里词条那一行的译文。"""
    text = (root / "book" / "glossary.md").read_text(encoding="utf-8")
    heads = set(re.findall(r"^([^\s`%#:][^\n]*)\n  \S", text, re.M))
    done = translations(locale_dir(root) / "book" / "glossary.po")
    return {h: done.get(h, h) for h in heads}


def fstring_problems(root: Path = REPO) -> list[str]:
    """包、扩展与页面代码单元里，f-string 的表达式中写着中文的地方（文件:行）。"""
    found = []
    for path, kind, _options in code_sources(root):
        if kind == "py":
            rel = path.relative_to(root).as_posix()
            found += [f"{rel}:{n}" for n in tx.cjk_in_fstring_code(path.read_text(encoding="utf-8"))]
    for page in pages(root):
        for block in tx.split_page(page.read_text(encoding="utf-8")):
            if block.kind == "py":
                try:
                    lines = tx.cjk_in_fstring_code(block.text)
                except (SyntaxError, tokenize.TokenError):
                    continue
                rel = page.relative_to(root).as_posix()
                found += [f"{rel}:{block.first_line + n - 1}" for n in lines]
    return found


CONFLICT = re.compile(r"^(<{7}|>{7}|={7})( |$)", re.M)


def check(root: Path = REPO, *, extract: bool = True) -> list[str]:
    """核对英文目录与当前的中文源文件：返回问题清单（空表示全部译好、没有漂移）。"""
    out = root / GETTEXT
    if extract:
        out = extract_prose(root)
        write_pot(extract_code(root), out / "code.pot")
    terms = glossary_terms(root)
    problems = [f"{where}：f-string 的 {{…}} 里写着中文（那是代码，翻译不到）：把它放进表达式外的字符串"
                for where in fstring_problems(root)]
    for pot in sorted(out.rglob("*.pot")):
        rel = pot.relative_to(out).with_suffix(".po")
        po = locale_dir(root) / rel
        if not po.is_file():
            problems.append(f"{rel}：没有英文目录（运行 make translations）")
            continue
        catalog = read_catalog(po)
        # 合并冲突留下的标记（连作废的条目也算）：说明合并时有一段没人核对过
        problems += [f"{rel}：有合并冲突的标记 {m.id[:40]!r}" for m in [*catalog, *catalog.obsolete.values()]
                     if m.id and CONFLICT.search(f"{m.id}\n{m.string}")]
        kind = "code" if rel.name == "code.po" else "prose"
        allow_cjk = (root / "book" / "glossary.md").read_text(encoding="utf-8") \
            if rel.as_posix() == "book/glossary.po" else ""
        for message in read_catalog(pot):
            if not message.id:
                continue
            where = f"{rel}: {message.id[:60]!r}"
            entry = catalog.get(message.id)
            if entry is None:
                problems.append(f"{where}：目录里没有这条（中文改过？运行 make translations）")
            elif "fuzzy" in entry.flags:
                problems.append(f"{where}：fuzzy（中文改过，译文待核对）")
            elif not entry.string:
                problems.append(f"{where}：没有译文")
            else:
                problems += [f"{where}：{p}" for p in
                             message_problems(message.id, entry.string, kind, terms, allow_cjk,
                                              fstring=FSTRING in message.auto_comments,
                                              latex=LATEX in message.auto_comments)]
    return problems


# ---- 英文版的书 --------------------------------------------------------------------------------------

CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
FULLWIDTH = re.compile(r"[\u3000-\u303f\uff00-\uffef]")


def kept_chinese(translations) -> set[str]:
    """译文里刻意保留的中文词（check 保证每个都出现在它的原文里）。"""
    return {run for text in translations for run in CJK_RUN.findall(text)}


ROOT_FILES = ("pyproject.toml", "requirements.txt", "requirements.lock", "LICENSE", "README.md", "CITATION.cff")


class Translator:
    """读一次目录，把文件翻成英文；记下没有译文的消息。"""

    def __init__(self, root: Path = REPO):
        self.root = root
        self.code = translations(locale_dir(root) / "code.po")
        self.missing: list[str] = []

    def code_lookup(self, where: str):
        def lookup(msgid: str):
            text = self.code.get(msgid)
            if text is None:
                self.missing.append(f"{where}: {msgid[:60]!r}")
            return text
        return lookup

    def page(self, path: Path) -> str:
        rel = path.relative_to(self.root).as_posix()
        prose = translations(locale_dir(self.root) / "book" / (path.stem + ".po"))
        text, leftovers = tx.translate_page(path.read_text(encoding="utf-8"), prose, self.code_lookup(rel))
        kept = kept_chinese(prose.values())  # 译文刻意保留的中文词（术语表的中文名……）不算没译
        self.missing += [f"{rel}:{n}: {line.strip()[:70]}" for n, line in leftovers
                         if not (set(CJK_RUN.findall(line)) <= kept and not FULLWIDTH.search(line))]
        return text

    def file(self, path: Path, kind: str, options: dict) -> str:
        rel = path.relative_to(self.root).as_posix()
        text = path.read_text(encoding="utf-8")
        return tx.apply(text, file_pieces(path, kind, options), self.code_lookup(rel))

    def yaml_text(self, data, where: str):
        if isinstance(data, dict):
            return {k: (v if k in CONFIG_KEYS_NOT_TEXT else self.yaml_text(v, where)) for k, v in data.items()}
        if isinstance(data, list):
            return [self.yaml_text(v, where) for v in data]
        if isinstance(data, str) and tx.has_cjk(data):
            return self.code_lookup(where)(data) or data
        return data


def english_licence(licence: str, preamble: str) -> bytes:
    """英文版的 LICENSE：英文的导言（locale/en/LICENSE.preamble）加上中文 LICENSE 从“Part 1:”那一行起的
    许可证全文。全文本来就是英文，只有中英对照的标题（“第一部分 / Part 1: …”）和作者组的名字
    （“minigpt 开源教材作者组 (the minigpt open textbook authors)”）带中文：取其中的英文。"""
    lines = licence.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if "Part 1:" in line), None)
    if start is None:
        raise ValueError("LICENSE 里找不到 “Part 1:” 那一行（许可证全文从那里开始）")
    body = "".join(re.sub(r"(\S+ )?[\u3400-\u9fff]+ \(([^()]*)\)", r"\2", re.sub(r"^[^\x00-\x7f]+ / ", "", line))
                   for line in lines[start:])
    if CJK_RUN.search(body):
        raise ValueError("英文版的 LICENSE 里还有中文：" + CJK_RUN.search(body).group())
    return (preamble.rstrip("\n") + "\n\n\n" + body).encode()


def english_version(init: str) -> str:
    """英文版的包的版本号带本地标签 +en（中文版的版本号后面加上 +en）：两种语言的 wheel 名字不同，装了中文版的环境里
    pip 也不会把英文版当成“已经装好”。"""
    new, count = re.subn(r'^(__version__ = ")([^"+]+)(")', rf"\g<1>\g<2>+{LANG}\g<3>", init, flags=re.M)
    if count != 1:
        raise ValueError("src/minigpt/__init__.py 里找不到 __version__ = \"…\"")
    return new


def english_config(config: dict, tr: Translator) -> dict:
    """英文版的 _config.yml：文字换成英文，语言 en，网址是网站下的 en/，不用中文分词的搜索词典。"""
    config = tr.yaml_text(config, "_config.yml")
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx["language"] = LANG
    sphinx.pop("html_search_options", None)
    sphinx["locale_dirs"] = []
    base = sphinx.get("html_baseurl", "")
    if base:
        sphinx["html_baseurl"] = base.rstrip("/") + f"/{LANG}/"
    sphinx["book_edition"] = LANG
    # 编号的写法（locale/en/STYLE.md）：英文的 Sphinx 默认印 “Fig. 2.1”，本书写全称 “Figure 2.1”
    sphinx["numfig_format"] = {"figure": "Figure %s", "table": "Table %s", "code-block": "Listing %s",
                               "section": "Section %s"}
    # PDF：xeCJK 默认把弯引号 ‘’“” 当中文标点（占一个汉字宽）；英文里它们是西文标点
    latex = sphinx.setdefault("latex_elements", {})
    # 术语表里印着中文名：英文的行靠词间空白撑满，汉字之间不再拉开（否则“缩 放 点 积”一字一空）
    latex["preamble"] = latex.get("preamble", "") + "\n\\xeCJKDeclareCharClass{Default}{\"2018 -> \"201F}" \
        + "\n\\xeCJKsetup{CJKglue={\\hskip 0pt}}"
    return config


def build_root(out: Path, root: Path = REPO) -> tuple[list[str], list[str]]:
    """生成英文版的书到 out（只写变了的文件，删掉源里已经没有的文件）。返回 (写过的文件, 缺译文的消息)。"""
    import yaml

    sys.path.insert(0, str(root / "book" / "_ext"))
    from book_notebooks import write_if_changed  # 内容没变就不动文件（读者笔记本用的同一个）

    tr = Translator(root)
    files: dict[str, bytes] = {}
    kinds = {path: (kind, options) for path, kind, options in code_sources(root)}
    for path in sorted((root / "book").rglob("*")) + sorted((root / "src").rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".pyc", ".mo") \
                or any(part.endswith(".egg-info") for part in path.parts):
            continue
        rel = path.relative_to(root).as_posix()
        if path in kinds:
            text = tr.file(path, *kinds[path])
            if rel == "src/minigpt/__init__.py":
                text = english_version(text)
            files[rel] = text.encode()
        elif path.suffix == ".md" and path.parent == root / "book":
            files[rel] = tr.page(path).encode()
        elif rel == "book/homework_student.ipynb":
            continue  # 由英文的作业页重新生成（下面）
        else:
            files[rel] = path.read_bytes()
    tool = root / "tools" / "make_student_notebook.py"
    files["tools/make_student_notebook.py"] = tr.file(tool, "py", {"comments": False, "docstrings": False}).encode()
    for name in ROOT_FILES:
        path, counterpart = root / name, locale_dir(root).parent / name
        if path in kinds:  # pyproject.toml：包的简介换成英文
            files[name] = tr.file(path, *kinds[path]).encode()
        elif name == "LICENSE" and path.is_file():
            files[name] = english_licence(path.read_text(encoding="utf-8"),
                                          (locale_dir(root).parent / "LICENSE.preamble").read_text(encoding="utf-8"))
        elif counterpart.is_file():  # README.md、CITATION.cff：locale/en/ 里写好的英文对应文件
            files[name] = counterpart.read_bytes()
        elif path.is_file():
            files[name] = path.read_bytes()
    config = english_config(yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")), tr)
    files["_config.yml"] = ("# generated from the Chinese _config.yml by tools/i18n.py root (do not edit)\n"
                            + yaml.safe_dump(config, allow_unicode=True, sort_keys=False)).encode()
    toc = tr.yaml_text(yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8")), "_toc.yml")
    files["_toc.yml"] = ("# generated by tools/i18n.py root (do not edit)\n"
                         + yaml.safe_dump(toc, allow_unicode=True, sort_keys=False)).encode()

    written = [rel for rel, data in files.items() if write_if_changed(out / rel, data)]
    # 源里已经没有的文件：删掉（_build/ 与打包产物不动）
    for path in sorted(out.rglob("*"), reverse=True):
        rel = path.relative_to(out).as_posix()
        top = rel.split("/")[0]
        if top in ("_build", "build", "dist") or top.startswith(".") or ".egg-info" in rel \
                or "__pycache__" in rel or rel == "book/homework_student.ipynb":
            continue
        if path.is_file() and rel not in files:
            path.unlink()
    # 英文的学生笔记本：用（英文的）生成脚本从英文的作业页生成；内容没变就不写
    # （笔记本里写着 wheel 的全名，版本取自英文的 minigpt：PYTHONPATH 指向英文的 src）
    env = {**os.environ, "PYTHONPATH": str(out / "src")}
    check = subprocess.run([sys.executable, str(out / "tools" / "make_student_notebook.py"), "--check"],
                           cwd=out, capture_output=True, text=True, env=env)
    if check.returncode != 0:
        subprocess.check_call([sys.executable, str(out / "tools" / "make_student_notebook.py")], cwd=out,
                              stdout=subprocess.DEVNULL, env=env)
        written.append("book/homework_student.ipynb")
    return written, tr.missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("update", help="提取消息并更新英文目录")
    sub.add_parser("check", help="核对英文目录：没译的、fuzzy 的、与原文不符的")
    p_root = sub.add_parser("root", help="生成英文版的书")
    p_root.add_argument("--out", type=Path, default=REPO / "_build" / LANG)
    p_root.add_argument("--strict", action="store_true", help="有没译的消息时退出码 1")
    args = parser.parse_args(argv)
    if args.command == "update":
        update()
        return 0
    if args.command == "check":
        problems = check()
        for p in problems:
            print(p)
        print(f"[i18n] {len(problems)} 个问题" if problems else "[i18n] 英文目录完整，与中文一致")
        return 1 if problems else 0
    written, missing = build_root(args.out.resolve())
    print(f"[i18n] 英文版的书：{args.out}（写了 {len(written)} 个文件）")
    if missing:
        print(f"[i18n] {len(missing)} 条消息还没有英文（保留中文）：")
        for m in missing[:20]:
            print("   ", m)
        return 1 if args.strict else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
