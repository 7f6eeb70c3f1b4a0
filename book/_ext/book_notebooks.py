"""读者笔记本：每个执行过的页面一份 .ipynb，离开本仓库、在任何 Jupyter（含 Colab）里都能运行（本地 Sphinx 扩展）。

myst-nb 写出的 notebook 是给构建用的：第一个单元导入 ``myst_nb`` 和 ``minigpt.notebook``（读者那里没有），
Markdown 单元里还是 MyST 标记（``{glue:text}``、``{term}``、``:::{admonition}``、``{literalinclude}``……），
Jupyter 原样显示。这件事配置做不到——myst-nb 和 Jupyter Book 都没有“导出成普通 Jupyter 笔记本”的选项，
而要把这些标记换成它们在页面上的样子，必须用 Sphinx 解析、求值之后的文档树（glue 的值、图表编号、
术语的链接只在那里才有）。所以由这个扩展在 HTML 构建写每一页时（``html-page-context``，拿到的是解析完的
文档树）生成：

- Markdown 单元由文档树写回普通 Markdown：glue 的值写成文字；术语、页面与参考文献的链接指向网站
  （``html_baseurl``，_config.yml 里唯一的网址）；图表与公式的引用写成编号（“图 2.1”“(2.3)”）；
  提示框和“想一想”的答案写成引用块；``literalinclude`` 写成它展示的代码；图作为附件嵌进单元；
- 代码单元只取页面上看得见的（``remove-cell`` 的构建管道不要），带着构建时的输出（取自执行缓存）；
- 第一个单元用中文说明怎样安装本书的包，第二个单元运行时检查并安装它（已装好同一版时什么都不做）。

写到 ``_sources/<页面>.ipynb``，替换主题下载菜单里的 .ipynb（book_downloads 在优先级 500 做的那件事这里先做掉）。
HTML 构建结束时把全部读者笔记本、本书的 wheel、``requirements.txt`` 和 README 打成网站根目录的
``NOTEBOOKS_ZIP``，wheel 也单独放一份在网站根目录（笔记本的安装单元从那里下载）。

空操作构建什么都不写：笔记本只在页面被写出时生成，而且内容没变就不动文件（保留修改时间）；zip 与
wheel 同样只在字节变了时才写。这里不加任何会随构建变化的配置值，也不碰 Sphinx 环境，不会让页面过期。
"""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
import posixpath
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from urllib.parse import urljoin

import nbformat
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

NOTEBOOKS_ZIP = "attention-transformer-block-notebooks.zip"   # 网站根目录下的文件名
NOTEBOOKS_FOLDER = "attention-transformer-block-notebooks"    # 解压出来的文件夹
# 读者笔记本的运行环境：这几个包的版本取自仓库的 requirements.txt
RUNTIME_PACKAGES = ("torch", "numpy", "matplotlib", "ipykernel")
# Markdown 里不许留下的 MyST 标记（tests/test_notebooks.py 也用它）
MYST_MARKERS = ("{glue", "{term}", ":::{", "```{", "{numref}", "{doc}", "{cite", "{eq}", "{ref}", "{literalinclude")


# ---- 文档树 → Markdown ------------------------------------------------------------------------

class MarkdownWriter:
    """把 Sphinx 解析、求值之后的文档树（一页）写成 Jupyter 认识的 Markdown 与代码单元。"""

    def __init__(self, app: Sphinx, pagename: str, executed: nbformat.NotebookNode | None):
        self.app = app
        self.pagename = pagename
        self.page_url = urljoin(app.config.html_baseurl or "", app.builder.get_target_uri(pagename))
        self.executed = executed
        self.cells: list[nbformat.NotebookNode] = []
        self.attachments: dict[str, dict] = {}
        self.pending: list[str] = []          # 还没成为单元的 Markdown 段落
        self.section_level = 0

    # -- 单元 --
    def flush(self) -> None:
        text = "\n\n".join(p for p in self.pending if p.strip()).strip()
        self.pending = []
        if text:
            cell = nbformat.v4.new_markdown_cell(text)
            if self.attachments:
                used = {k: v for k, v in self.attachments.items() if f"attachment:{k}" in text}
                if used:
                    cell["attachments"] = used
            self.attachments = {}
            self.cells.append(cell)

    def code_cell(self, node: nodes.container) -> None:
        tags = (node.get("cell_metadata") or {}).get("tags", [])
        if "remove-cell" in tags or "remove-input" in tags or "remove_input" in tags:
            return
        index = node.get("cell_index")
        if self.executed is None or index is None or index >= len(self.executed.cells):
            source, outputs = self._node_code(node), []
        else:
            source_cell = self.executed.cells[index]
            source, outputs = source_cell.source, source_cell.get("outputs", [])
        self.flush()
        cell = nbformat.v4.new_code_cell(source)
        if self.executed is not None and index is not None and index < len(self.executed.cells):
            cell.execution_count = self.executed.cells[index].get("execution_count")
        keep = [t for t in tags if t in ("raises-exception",)]
        if keep:
            cell.metadata["tags"] = keep
        if "remove-output" not in tags and "remove_output" not in tags:
            cell.outputs = [o for o in (_reader_output(o) for o in outputs) if o is not None]
        self.cells.append(cell)

    def _nested_code(self, node) -> str:
        """提示框或解答里的代码单元（作业页的参考答案）：写成引用块里的代码与它在构建时打印的文字，
        不另起代码单元——它们在页面上是折叠起来的答案，不是按顺序运行的正文。"""
        tags = (node.get("cell_metadata") or {}).get("tags", [])
        if "remove-cell" in tags or "remove-input" in tags:
            return ""
        index = node.get("cell_index")
        cell = (self.executed.cells[index] if self.executed is not None and index is not None
                and index < len(self.executed.cells) else None)
        source = cell.source if cell is not None else self._node_code(node)
        parts = [f"```python\n{source}\n```"]
        printed = "".join(o.get("text", "") for o in (cell.get("outputs", []) if cell is not None else [])
                          if o.get("output_type") == "stream" and o.get("name") == "stdout")
        if printed.strip():
            parts.append(f"```text\n{printed.rstrip()}\n```")
        return "\n\n".join(parts)

    @staticmethod
    def _node_code(node) -> str:
        block = node.next_node(nodes.literal_block)
        return block.astext() if block is not None else ""

    # -- 块级 --
    def document(self, doctree: nodes.document) -> list[nbformat.NotebookNode]:
        for child in doctree.children:
            self.block(child)
        self.flush()
        return self.cells

    def block(self, node) -> None:
        """顶层（不在列表或引用块里）的块：代码单元另起一个单元，其余写成 Markdown 段落。"""
        if isinstance(node, nodes.container) and node.get("nb_element") == "cell_code":
            self.code_cell(node)
        elif isinstance(node, nodes.section):
            self.section_level += 1
            for child in node.children:
                self.block(child)
            self.section_level -= 1
        elif isinstance(node, (nodes.container, nodes.compound)) and not node.get("nb_element") \
                and any(isinstance(c, nodes.container) and c.get("nb_element") == "cell_code"
                        for c in node.traverse(nodes.container)):
            for child in node.children:
                self.block(child)
        else:
            text = self.md_block(node)
            if text.strip():
                self.pending.append(text)

    def md_blocks(self, children) -> str:
        return "\n\n".join(t for t in (self.md_block(c) for c in children) if t.strip())

    def md_block(self, node) -> str:  # noqa: C901  一种节点一个分支
        if isinstance(node, nodes.raw):
            return self._raw_links(node)
        if isinstance(node, (nodes.comment, nodes.target, nodes.substitution_definition, nodes.system_message)):
            return ""
        if isinstance(node, nodes.title):
            level = max(1, min(6, self.section_level))
            return "#" * level + " " + self.inline(node)
        if isinstance(node, nodes.section):
            self.section_level += 1
            text = self.md_blocks(node.children)
            self.section_level -= 1
            return text
        if isinstance(node, (nodes.paragraph, nodes.rubric)):
            text = self.inline(node)
            return f"**{text}**" if isinstance(node, nodes.rubric) else text
        if isinstance(node, nodes.literal_block):
            language = node.get("language") or ""
            language = "python" if language in ("ipython3", "ipython", "default", "") else language
            code = node.astext().rstrip("\n")
            fence = "````" if "```" in code else "```"
            return f"{fence}{language}\n{code}\n{fence}"
        if isinstance(node, nodes.math_block):
            number = self._equation_number(node)
            tag = f" \\tag{{{number}}}" if number else ""
            return f"$$\n{node.astext().strip()}{tag}\n$$"
        if isinstance(node, nodes.bullet_list):
            return "\n".join(self._list_item(item, "- ") for item in node.children)
        if isinstance(node, nodes.enumerated_list):
            start = node.get("start", 1)
            return "\n".join(self._list_item(item, f"{start + i}. ") for i, item in enumerate(node.children))
        if isinstance(node, nodes.definition_list):
            parts = []
            for item in node.children:
                term = " ".join(self.inline(t) for t in item.traverse(nodes.term))
                definition = next(iter(item.traverse(nodes.definition)), None)
                body = self.md_blocks(definition.children) if definition is not None else ""
                parts.append(f"**{term}**\n\n" + _quote(body, ": ") if body else f"**{term}**")
            return "\n\n".join(parts)
        if isinstance(node, nodes.figure):
            return self._figure(node)
        if isinstance(node, nodes.image):
            return self._image(node, node.get("alt", ""))
        if isinstance(node, nodes.table):
            return self._table(node)
        if isinstance(node, (nodes.Admonition, nodes.topic, nodes.sidebar)) or _is_exercise(node):
            return self._admonition(node)
        if isinstance(node, nodes.block_quote):
            return _quote(self.md_blocks(node.children))
        if isinstance(node, nodes.line_block):
            return "  \n".join(self.inline(line) for line in node.children)
        if isinstance(node, nodes.transition):
            return "---"
        if isinstance(node, nodes.container) and node.get("nb_element") == "cell_code":
            return self._nested_code(node)
        if isinstance(node, nodes.container) and node.get("nb_element", "").startswith("mime"):
            return self._mime(node)
        if isinstance(node, (nodes.container, nodes.compound, nodes.Element)) and node.children and \
                any(isinstance(c, nodes.Body) or isinstance(c, nodes.Structural) for c in node.children):
            return self.md_blocks(node.children)
        if isinstance(node, nodes.Element):
            text = self.inline(node)
            return text
        return _escape(node.astext())

    def _list_item(self, item, marker: str) -> str:
        body = self.md_blocks(item.children)
        pad = " " * len(marker)
        lines = body.splitlines() or [""]
        return marker + lines[0] + "".join("\n" + (pad + line if line else "") for line in lines[1:])

    def _admonition(self, node) -> str:
        title_node = next((c for c in node.children if isinstance(c, nodes.title)), None)
        title = self.inline(title_node) if title_node is not None else _ADMONITION_TITLES.get(node.tagname, "")
        body = self.md_blocks([c for c in node.children if c is not title_node])
        head = f"**{title}**" if title else ""
        return _quote(f"{head}\n\n{body}".strip() if head else body)

    def _equation_number(self, node) -> str:
        label = node.get("label")
        if not label or not node.get("number"):
            return ""
        domain = self.app.env.get_domain("math")
        try:
            number = domain.get_equation_number_for(label)
        except Exception:  # noqa: BLE001  取不到编号时不写 \tag
            return ""
        if self.app.config.math_numfig and self.app.config.numfig:
            number = ".".join(map(str, self.app.env.toc_fignumbers.get(self.pagename, {})
                                  .get("displaymath", {}).get(node["ids"][0], ()) or (number,)))
        return str(number)

    def _figure(self, node) -> str:
        parts = []
        if node.get("reader_image"):  # glue 进来的图（见 KeepStaticImage）：用它的静态图
            uri, alt = node["reader_image"]
            parts.append(self._image(nodes.image(uri=uri, alt=alt), alt))
        for child in node.children:
            if isinstance(child, (nodes.caption, nodes.legend)) or node.get("reader_image"):
                continue
            parts.append(self.md_block(child))
        caption = next(iter(node.traverse(nodes.caption)), None)
        if caption is not None:
            number = self._figure_number(node)
            text = self.inline(caption)
            parts.append(f"*{number}　{text}*" if number else f"*{text}*")
        legend = next(iter(node.traverse(nodes.legend)), None)
        if legend is not None:
            parts.append(self.md_blocks(legend.children))
        return "\n\n".join(p for p in parts if p.strip())

    def _figure_number(self, node) -> str:
        ids = node.get("ids") or []
        numbers = self.app.env.toc_fignumbers.get(self.pagename, {}).get("figure", {})
        for ident in ids:
            if ident in numbers:
                prefix = self.app.config.numfig_format.get("figure", "图 %s")
                return prefix % ".".join(map(str, numbers[ident]))
        return ""

    def _image(self, node, alt: str) -> str:
        uri = node.get("uri", "")
        if "://" in uri:
            return f"![{alt}]({uri})"
        path = Path(self.app.srcdir) / uri
        if not path.is_file():
            candidate = node.get("candidates", {}).get("*")
            path = Path(self.app.srcdir) / (candidate or uri)
        if not path.is_file():
            return f"*（图：{alt}）*" if alt else ""
        return self._attach(path.name, path.read_bytes(), alt)

    def _attach(self, name: str, data: bytes, alt: str) -> str:
        mime = mimetypes.guess_type(name)[0] or "image/png"
        key = hashlib.sha256(data).hexdigest()[:12] + Path(name).suffix
        # 附件一律 base64（SVG 也是：Jupyter 与 nbconvert 都按 data:<类型>;base64,… 显示附件）
        self.attachments[key] = {mime: base64.b64encode(data).decode()}
        return f"![{alt}](attachment:{key})"

    def _mime(self, node) -> str:
        """myst-nb 的输出（glue:figure 放进来的图）：取其中的图片；交互图取同一份静态图。"""
        for image in node.traverse(nodes.image):
            return self._image(image, image.get("alt", ""))
        return ""

    def _table(self, node) -> str:
        rows = []
        for row in node.traverse(nodes.row):
            rows.append([self.inline(entry).replace("|", "\\|").replace("\n", " ") for entry in row.children])
        if not rows:
            return ""
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        header_rows = sum(len(list(h.traverse(nodes.row))) for h in node.traverse(nodes.thead)) or 1
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
        lines += ["| " + " | ".join(r) + " |" for r in rows[header_rows:]]
        title = next((c for c in node.children if isinstance(c, nodes.title)), None)
        out = "\n".join(lines)
        if title is not None:
            number = ""
            numbers = self.app.env.toc_fignumbers.get(self.pagename, {}).get("table", {})
            for ident in node.get("ids") or []:
                if ident in numbers:
                    number = self.app.config.numfig_format.get("table", "表 %s") % ".".join(map(str, numbers[ident]))
            out = f"*{(number + ' ') if number else ''}{self.inline(title)}*\n\n" + out
        return out

    # -- 行内 --
    def inline(self, node) -> str:
        out = []
        for child in node.children:
            out.append(self.inline_node(child))
        return "".join(out).strip("\n")

    def inline_node(self, node) -> str:  # noqa: C901
        if isinstance(node, nodes.Text):
            return _escape(str(node))
        if isinstance(node, (nodes.target, nodes.comment, nodes.system_message, nodes.footnote_reference)):
            return ""
        if isinstance(node, nodes.raw):
            return self._raw_links(node)
        if isinstance(node, nodes.literal):
            text = node.astext()
            tick = "``" if "`" in text else "`"
            return f"{tick}{text}{tick}"
        if isinstance(node, nodes.math):
            return f"${node.astext()}$"
        if isinstance(node, nodes.strong):
            return f"**{self.inline(node)}**"
        if isinstance(node, nodes.emphasis):
            return f"*{self.inline(node)}*"
        if isinstance(node, nodes.reference):
            return self._reference(node)
        if isinstance(node, nodes.image):
            return self._image(node, node.get("alt", ""))
        if isinstance(node, (nodes.paragraph, nodes.Body)) and not isinstance(node, nodes.Inline):
            return self.md_block(node)
        if isinstance(node, nodes.Element):
            return self.inline(node)
        return _escape(node.astext())

    def _raw_links(self, node) -> str:
        """原样的 HTML（例如下载链接）：只留下其中的链接，写成指向网站的 Markdown 链接；其余不要。"""
        if node.get("format") != "html":
            return ""
        links = []
        for href, text in _HTML_LINK.findall(node.astext()):
            label = re.sub(r"<[^>]+>", "", text).strip()
            links.append(f"[{_escape(label)}]({urljoin(self.page_url, href)})")
        return " ".join(links)

    def _reference(self, node) -> str:
        text = self.inline(node)
        classes = set()
        for inner in node.traverse(nodes.inline):
            classes.update(inner.get("classes", []))
        if classes & {"std-numref", "eq"} or "eqref" in node.get("classes", []):
            return text  # 图、表、公式的编号：写成文字
        uri = node.get("refuri")
        if uri is None and node.get("refid"):
            return text  # 同一页里的锚点
        if uri is None:
            return text
        if "://" not in uri and not uri.startswith("mailto:"):
            uri = urljoin(self.page_url, uri)
        return f"[{text}]({uri})"


_ADMONITION_TITLES = {"note": "注", "tip": "提示", "warning": "注意", "important": "重要",
                      "hint": "提示", "caution": "小心", "attention": "注意", "danger": "危险", "error": "错误"}


def _is_exercise(node) -> bool:
    return type(node).__module__.startswith("sphinx_exercise")


def _quote(text: str, prefix: str = "> ") -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.splitlines())


_HTML_LINK = re.compile(r'<a\s[^>]*href="([^"]+)"[^>]*>(.*?)</a>', re.S)
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|])")


def _escape(text: str) -> str:
    """正文里的字面字符不被 Markdown 当成标记（$ 不转义：公式由 math 节点写出，正文里的 $ 本书不用）。"""
    return _MD_SPECIAL.sub(r"\\\1", text)


def _reader_output(output) -> nbformat.NotebookNode | None:
    """构建时的一个输出，去掉 glue 的元数据和 PDF/HTML 等只给构建用的表示。"""
    output = nbformat.from_dict(json.loads(json.dumps(output)))
    if output.output_type in ("display_data", "execute_result"):
        if "scrapbook" in output.get("metadata", {}):
            return None
        data = {k: v for k, v in output.data.items()
                if k in ("text/plain", "image/png", "image/svg+xml", "text/markdown", "text/latex")}
        if not data:
            return None
        output.data = data
        output.metadata = {k: v for k, v in output.get("metadata", {}).items() if k in data}
    return output


class KeepStaticImage(SphinxPostTransform):
    """在 myst-nb 按构建器挑选输出格式（SelectMimeType，优先级 4）之前，把图里那份静态图（PNG/SVG）记在
    所在的 figure 上：网站上交互图挑中的是 text/html，读者笔记本要的是静态图。只记一个属性，网页不变。"""

    default_priority = 3
    formats = ("html",)

    def run(self, **kwargs) -> None:
        for bundle in self.document.findall(nodes.container):
            if bundle.get("nb_element") != "mime_bundle":
                continue
            figure = bundle.parent
            while figure is not None and not isinstance(figure, nodes.figure):
                figure = figure.parent
            if figure is None:
                continue
            for mime in ("image/png", "image/svg+xml"):
                for part in bundle.children:
                    if part.get("mime_type") == mime:
                        image = part.next_node(nodes.image)
                        if image is not None:
                            figure["reader_image"] = (image["uri"], image.get("alt", ""))
                            break
                if figure.get("reader_image"):
                    break


# ---- 安装单元 ---------------------------------------------------------------------------------

INSTALL_MD = """\
**先装好本书的 Python 包。** 这一页的代码来自《{title}》（{edition_line}），它的计算都在配套的 Python 包里：
pip 里的名字是 `{dist}`，代码里写 `import minigpt`。（PyPI 上另有一个叫 `minigpt` 的项目，与本书无关，不要装错。）

运行下面这个单元即可：已经装好这一版时它什么也不做；没有装时，它优先用同一文件夹里的 wheel
（全书笔记本包 `{zip}` 里就有），否则从本书网站下载 `{wheel}` 安装，pip 会一并装上 PyTorch、numpy 和 matplotlib。
最后它给图选好中文字体 Noto Sans CJK；机器上没有这个字体时，它会说怎样安装。
也可以在终端里自己装：`pip install {wheel}`。这份笔记本对应的网页：<{page_url}>"""

INSTALL_CODE = """\
# 安装本书的配套包 {dist}（import 的名字是 minigpt）；已经装好这一版时什么也不做
import importlib, importlib.metadata, pathlib, subprocess, sys

BOOK_VERSION = "{version}"
try:
    installed = importlib.metadata.version("{dist}")
except importlib.metadata.PackageNotFoundError:
    installed = None
if installed == BOOK_VERSION:
    print("{dist}", installed, "已经装好")
else:
    local = sorted(pathlib.Path.cwd().glob("{wheel}"))
    wheel = str(local[0]) if local else "{wheel_url}"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", wheel], check=True)
    importlib.invalidate_caches()
    print("已安装", wheel)

# 图里的中文要用 Noto Sans CJK 字体；没有它，中文会画成方框（错误信息说怎样安装）
from minigpt import plots
try:
    print("图中的中文字体：", plots.setup_chinese_font())
except RuntimeError as err:
    print(err)"""


def install_cells(app: Sphinx, pagename: str, wheel_name: str) -> list[nbformat.NotebookNode]:
    from book_release import DISTRIBUTION, edition_line

    base = app.config.html_baseurl or ""
    fields = dict(title=book_title(app), edition_line=edition_line(app.config.version), dist=DISTRIBUTION,
                  zip=NOTEBOOKS_ZIP, wheel=wheel_name, version=app.config.version,
                  wheel_url=urljoin(base, wheel_name),
                  page_url=urljoin(base, app.builder.get_target_uri(pagename)))
    md = nbformat.v4.new_markdown_cell(INSTALL_MD.format(**fields))
    code = nbformat.v4.new_code_cell(INSTALL_CODE.format(**fields))
    code.metadata["tags"] = ["book-install"]
    return [md, code]


def book_title(app: Sphinx) -> str:
    return app.config.html_title or app.config.project


def wheel_name(version: str) -> str:
    from book_release import DISTRIBUTION

    return f"{DISTRIBUTION.replace('-', '_')}-{version}-py3-none-any.whl"


# ---- 写出 -----------------------------------------------------------------------------------

def write_if_changed(path: Path, data: bytes) -> bool:
    """内容没变就不动文件（保留修改时间）；返回是否写了。"""
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    partial.write_bytes(data)
    partial.replace(path)
    return True


def reader_notebook(app: Sphinx, pagename: str, doctree) -> nbformat.NotebookNode:
    from book_downloads import _with_outputs

    written = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    executed = _with_outputs(app, written) if written.is_file() else None
    cells = MarkdownWriter(app, pagename, executed).document(doctree)
    nb = nbformat.v4.new_notebook()
    nb.cells = install_cells(app, pagename, wheel_name(app.config.version)) + cells
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    # 单元的 id 按顺序编号（nbformat 默认是随机的：每次构建都会变）
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    return nb


def offer_reader_notebook(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """写出这一页的读者笔记本，并让主题的下载菜单指向它（先于 book_downloads 的优先级 500）。"""
    if doctree is None or app.builder.format != "html":
        return
    if "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    if not context.get("sourcename", "").endswith((".md", ".md.txt")):
        return
    nb = reader_notebook(app, pagename, doctree)
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    write_if_changed(target, nbformat.writes(nb).encode() + b"\n")
    context["ipynb_source"] = f"{pagename}.ipynb"


# ---- 全书笔记本包 -------------------------------------------------------------------------------

README = """\
# 《{title}》全书笔记本

{edition_line}。这个文件夹里有本书每一个可执行页面的笔记本，按目录顺序：

{listing}

另有 `{wheel}`（本书的 Python 包：pip 里叫 `{dist}`，代码里 `import minigpt`）和 `requirements.txt`。

## 运行

需要 Python 3.11 或更新的版本。在这个文件夹里打开终端：

```bash
python -m venv book-env
source book-env/bin/activate          # Windows：book-env\\Scripts\\activate
pip install -r requirements.txt       # PyTorch、numpy、matplotlib、ipykernel 和本书的包
pip install notebook                  # 还没有 Jupyter 的话
jupyter notebook
```

每个笔记本的第一个代码单元检查本书的包装好了没有（没装好就用这个文件夹里的 wheel 安装），
之后从上往下逐个运行即可，打印的内容和网页上一样。书在网上：<{base}>
"""


def runtime_requirements(root: Path, wheel: str) -> str:
    """requirements.txt：运行笔记本要的包，版本取自仓库的 requirements.txt；最后一行是本书的 wheel。"""
    pins = {}
    source = root / "requirements.txt"
    if source.is_file():
        for line in source.read_text(encoding="utf-8").splitlines():
            name, _, ver = line.strip().partition("==")
            if ver and name.lower() in RUNTIME_PACKAGES:
                pins[name.lower()] = f"{name}=={ver}"
    lines = [pins.get(p, p) for p in RUNTIME_PACKAGES]
    return ("# 运行《Attention 机制与 Transformer Block》全书笔记本所需的包（pip install -r requirements.txt）\n"
            + "\n".join(lines) + f"\n./{wheel}\n")


def build_notebooks_zip(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    docs = [d for d in app.env.found_docs if "kernelspec" in app.env.metadata.get(d, {})]
    order = {d: i for i, d in enumerate(_toc_order(app))}
    docs.sort(key=lambda d: (order.get(d, len(order)), d))
    notebooks = [(d, outdir / "_sources" / f"{d}.ipynb") for d in docs]
    missing = [d for d, p in notebooks if not p.is_file()]
    if missing:
        logger.warning(f"[book_notebooks] 这些页面没有读者笔记本：{missing}")
        return
    import homework_bundle

    try:
        wheel = homework_bundle.site_wheel(app)   # 与作业包共用的那一个 wheel
    except (OSError, RuntimeError) as err:
        logger.warning(f"[book_notebooks] 没能打包本书的 wheel：{err}")
        return
    from book_release import DISTRIBUTION, edition_line

    wheel_file = wheel_name(app.config.version)
    if wheel is not None and wheel.name != wheel_file:
        logger.warning(f"[book_notebooks] wheel 的文件名 {wheel.name} 与版本 {app.config.version} 对不上")
        return
    listing = "\n".join(f"- `{posixpath.basename(d)}.ipynb`：{_title(app, d)}" for d, _ in notebooks)
    readme = README.format(title=book_title(app), edition_line=edition_line(app.config.version),
                           listing=listing, wheel=wheel_file, dist=DISTRIBUTION, base=app.config.html_baseurl)
    with tempfile.TemporaryDirectory() as tmp:
        partial = Path(tmp) / NOTEBOOKS_ZIP
        files = [("README.md", readme.encode()),
                 ("requirements.txt", runtime_requirements(Path(app.confdir), wheel_file).encode()),
                 *((f"{posixpath.basename(doc)}.ipynb", path.read_bytes()) for doc, path in notebooks),
                 *([(wheel_file, wheel.read_bytes())] if wheel is not None else [])]
        with zipfile.ZipFile(partial, "w") as zf:
            for name, data in files:
                homework_bundle.zip_write(zf, name, data, folder=NOTEBOOKS_FOLDER)
        write_if_changed(outdir / NOTEBOOKS_ZIP, partial.read_bytes())
    if wheel is not None:
        write_if_changed(outdir / wheel_file, wheel.read_bytes())


def _title(app: Sphinx, doc: str) -> str:
    title = app.env.titles.get(doc)
    return title.astext() if title is not None else doc


def _toc_order(app: Sphinx) -> list[str]:
    try:
        return list(app.env.toctree_includes and _walk_toctree(app, app.config.root_doc))
    except Exception:  # noqa: BLE001
        return []


def _walk_toctree(app: Sphinx, doc: str, seen=None) -> list[str]:
    seen = seen if seen is not None else []
    if doc in seen:
        return seen
    seen.append(doc)
    for child in app.env.toctree_includes.get(doc, []):
        _walk_toctree(app, child, seen)
    return seen


def offer_notebooks_zip(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """下载菜单里加一项“全书笔记本”（主题在优先级 501 生成菜单）。"""
    from book_downloads import download_menu

    buttons = download_menu(context)
    if buttons is None:
        return
    buttons.append({"type": "link", "url": context["pathto"](NOTEBOOKS_ZIP, 1), "text": "全书笔记本",
                    "tooltip": "下载全书的笔记本（.ipynb）、本书的包与说明（压缩包）",
                    "icon": "fas fa-file-zipper", "label": "download-notebooks-zip-button"})


def setup(app: Sphinx) -> dict:
    app.add_post_transform(KeepStaticImage)
    app.connect("html-page-context", offer_reader_notebook, priority=499)
    app.connect("html-page-context", offer_notebooks_zip, priority=504)
    app.connect("build-finished", build_notebooks_zip)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":  # pragma: no cover
    sys.exit("这是 Sphinx 扩展，由 _config.yml 的 local_extensions 加载")
