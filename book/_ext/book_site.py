"""本书网站的本地 Sphinx 扩展（在 _config.yml 的 sphinx.local_extensions 里登记）。

能写进配置的都在 _config.yml 里（主题选项、html_context、搜索框与折叠提示、模板目录、公式排版），
界面文字的中文译文在 locale/zh_CN/LC_MESSAGES/sphinx.po。这里只留配置做不到的事，每一项都说明原因：

1. **中文检索词典用绝对路径。** Sphinx 把 ``html_search_options['dict']`` 按构建时的工作目录解析，
   找不到就悄悄不用。这里按配置目录（``app.confdir``）把它变成绝对路径；文件不存在时发警告
   （构建带 ``-W``，于是构建失败），而不是让检索默默退化。jieba 把词典缓存写在所有用户共用的
   ``/tmp/jieba.cache``（权限 0600）：别的用户先构建过，这里就读不了也写不了，每次构建多花一秒，还在输出里
   打印一段 PermissionError 的 traceback。这里把缓存放进本用户的缓存目录（``~/.cache/minigpt-book``）。
2. **（公式不在这里。）** 网站的公式在构建时排好，见 book_math.py；网站不带 MathJax。
3. **每页都能下载 .ipynb。** sphinx-book-theme 只有在配置了 Binder/Colab 等“启动”服务时，才把
   MyST Markdown 页面对应的 notebook 复制到 ``_sources/`` 并放进下载菜单；本书离线发布、不配
   启动服务，所以在主题生成下载菜单之前（优先级 500 < 501）做同样的事。而且 myst-nb 在
   ``execute_notebooks: cache`` 下写到 ``jupyter_execute/`` 的 notebook 没有输出，这里从
   jupyter-cache 取回执行结果再写出，读者下载到的是带输出的 notebook。
   （执行过的 .md 页面由 book_notebooks 先换成读者笔记本——普通 Markdown、带安装单元——这里随即跳过。）
4. **每页的脚本不重复。** Sphinx 7.4 的一个缺陷（8.2 修复，sphinx-doc/sphinx#13402）：扩展在构建器
   初始化之后用 ``add_js_file(None, body=...)`` 加的内联脚本会在页面里出现两次。sphinx-thebe 的
   ``const THEBE_JS_URL = ...`` 因而在每页都抛 “has already been declared”。这里按内容去重。
5. **下载菜单是中文，并且有整本书的 PDF。** 主题在 Python 代码里生成下载菜单，“打印本页”那一项的文字
   写死为 “.pdf”，提示取自主题自己的消息目录（项目的 .po 覆盖不了它）。这里把那一项改成中文，并在
   末尾加一项指向整本书 PDF 的链接：文件名取自配置 ``book_pdf_on_site``（_config.yml 里唯一的出处，
   tools/build_book.py 按它复制 PDF）。只是链接，打开页面时不会请求它。首页正文里的下载链接用本扩展的
   角色 ``{book-pdf}`下载 PDF 版```，同样读这个配置。
   配置 ``book_pdf_offered: false``（学生版在没有建好自己的 PDF 时由 tools/build_book.py 写进配置）让两处都不给
   链接：菜单里没有这一项，正文只印链接文字，网站上没有的文件就不会被链接。
6. **搜索结果的摘要从正文开始；折叠按钮的标签是中文。** Sphinx 7.4 的 searchtools.js 取页面里 ``[role="main"]`` 的全部文字做摘要，
   主题在那里面还放了页首按钮、打印用的标题与目录、右侧的本页目录，摘要于是以 “.pdf 因果遮蔽 目录 …”
   开头。搜索页上加一小段脚本（``search_snippets.js``），让它只从 ``<article>`` 里取文字。
   同样写死在 JS 里的还有 sphinx-togglebutton 折叠按钮的 aria-label（“Toggle hidden content”）：
   每页加一小段脚本（``toggle_label.js``）把它换成中文。
7. **参考文献表的无障碍角色。** docutils 0.21 把引文排成 ``role="list"`` 的 div，里面的每条却是
   ``role="doc-biblioentry"``（ARIA 1.2 已废弃，也不算列表项），axe 报 critical 的
   aria-required-children。这是 HTML 写出器的代码，配置改不了：这里给 HTML 构建器换一个只改这两个
   方法的写出器，每条改为 ``role="listitem"``。
8. **站点根目录的 index.html。** sphinx-external-toc 在根页面不叫 index 时写一个只有一行
   ``<meta refresh>`` 的跳转页（没有 ``lang``、没有标题）；这里先写一个完整的中文跳转页。
9. **练习标题的括号是全角的。** sphinx-exercise 在后期变换里把标题拼成 “练习” + ``" ("`` + 标题 + ``")"``，
   括号写死在代码里（没有配置项，也不经过消息目录）。在它之后（优先级 25 > 20–22）把练习与解答标题里
   包着中文的那一对半角括号换成全角的（），前面的空格一并去掉。
10. **中文检索索引建得快。** Sphinx 7.4 的 ``SearchChinese.stem`` 对每个词都查一遍 ``word in self.latin_terms``，
   而 ``latin_terms`` 是一个列表，装着此前各页出现过的每一个拉丁字母词（重复的也在）：越往后的页越慢，
   本书单是这一项就要一秒左右。这是 Sphinx 代码里的数据结构，配置改不了：这里用 ``app.add_search_language``
   （公开接口）登记一个子类，把它换成集合。判断的结果一样，写出的检索索引逐字节相同（有测试）。
11. **练习与解答的正文没有重复的 id。** sphinx-exercise 1.2 把每道练习、每份解答的正文都放进一个 id 写死为
   ``exercise-content`` / ``solution-content`` 的 section（代码里的常量，没有配置项）：一页有两道以上练习时 id
   重复，HTML 不合规，指向它的链接和 ``aria-labelledby`` 都会指错。没有任何样式或脚本用这两个 id；这里在
   它之后把它们换成由所在练习的 id 派生、整页唯一的 id（``<练习的 id>-content``）。
12. **点解答的标题就展开解答。** sphinx-exercise 把解答标题里 “练习（…）” 那几个字做成指回练习的链接；解答用
   ``:class: dropdown`` 折叠时，整条标题是展开按钮，点中那几个字却只是跳到练习、解答不展开（标题越长越容易点中）。
   解答就排在它的练习下面，这个链接用处不大：这里把它换成同样的文字。

扩展点：要给某些页面加脚本（例如交互图的库），在 ``html-page-context`` 里 ``app.add_js_file``，
库文件在 ``builder-inited`` 时复制进输出目录（不要放进 book/_static：那里的每个 .js 都挂到每一页）；
下载菜单的新条目照 ``offer_book_pdf`` 的样子往 ``download_menu(context)`` 里加。
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.search.zh import SearchChinese
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util.texescape import escape as tex_escape
from sphinx.writers.html5 import HTML5Translator

logger = logging.getLogger(__name__)
HERE = Path(__file__).parent


# ---- 1. 中文检索词典 -------------------------------------------------------------------------

def absolute_search_dict(app: Sphinx, config) -> None:
    """词典路径按配置目录解析（Sphinx 按当前目录解析、找不到就悄悄不用：配置写不出“相对于配置目录”）。"""
    options = dict(config.html_search_options or {})
    if not options.get("dict"):
        return
    path = Path(options["dict"])
    if not path.is_absolute():
        path = Path(app.confdir) / path
    path = path.resolve()
    if not path.is_file():
        logger.warning(f"[book_site] 中文检索词典不存在：{path}（html_search_options['dict']）")
    options["dict"] = str(path)
    config.html_search_options = options


def jieba_cache_of_this_user(app: Sphinx, config) -> None:
    """jieba 的词典缓存放进本用户的缓存目录，而不是所有用户共用的 /tmp/jieba.cache（见模块说明第 1 条）。"""
    try:
        import jieba
    except ImportError:  # 没有 jieba 时 Sphinx 的中文检索本来就不用它
        return
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "minigpt-book"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        usable = os.access(cache, os.W_OK)
    except OSError:
        usable = False
    if not usable:  # 家目录写不了（有的 CI、容器）：放在这次构建的输出目录旁边
        cache = Path(app.doctreedir).parent / ".jieba"
        cache.mkdir(parents=True, exist_ok=True)
    jieba.dt.tmp_dir = str(cache)


# ---- 3. 每页的 .ipynb 下载 ----------------------------------------------------------------------

def offer_notebook_download(app: Sphinx, pagename: str, templatename: str,
                            context: dict, doctree) -> None:
    """把 myst-nb 执行后的 notebook 复制到 _sources/，让主题的下载菜单出现 .ipynb（主题只在配了启动服务时这样做）。"""
    if doctree is None or context.get("ipynb_source"):
        return
    if "kernelspec" not in app.env.metadata.get(pagename, {}):
        return  # 不是 notebook 页面
    if not context.get("sourcename", "").endswith((".md", ".md.txt")):
        return  # .ipynb 源文件本身已在下载菜单里
    written = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not written.is_file():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(nbformat.writes(_with_outputs(app, written)), encoding="utf-8")
    context["ipynb_source"] = f"{pagename}.ipynb"


def _with_outputs(app: Sphinx, path: Path) -> nbformat.NotebookNode:
    """myst-nb 写出的 notebook，补上 jupyter-cache 里的执行结果（缓存里没有时原样返回）。"""
    notebook = nbformat.read(path, as_version=4)
    if app.config.nb_execution_mode != "cache":
        return notebook  # 其他执行方式下 myst-nb 写出的已经是执行后的 notebook
    from jupyter_cache import get_cache

    cache_path = app.config.nb_execution_cache_path or Path(app.outdir).parent / ".jupyter_cache"
    try:
        _, notebook = get_cache(str(cache_path)).merge_match_into_notebook(notebook)
    except KeyError:
        logger.warning(f"[book_site] 执行缓存里没有 {path.name}：下载的 .ipynb 不含输出")
    return notebook


# ---- 4. 脚本去重 ---------------------------------------------------------------------------

def dedupe_assets(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """同一个脚本/样式（同文件名、同属性、同内联内容）在页面里只出现一次（Sphinx 7.4 的缺陷，配置绕不开）。"""
    for key in ("script_files", "css_files"):
        assets = context.get(key)
        if not assets:
            continue
        seen, unique = set(), []
        for asset in assets:
            attributes = getattr(asset, "attributes", None) or {}
            ident = (str(getattr(asset, "filename", asset) or ""),
                     tuple(sorted((k, str(v)) for k, v in attributes.items())))
            if ident not in seen:
                seen.add(ident)
                unique.append(asset)
        assets[:] = unique  # 原地改：之后的处理器仍往同一个列表里加


# ---- 5. 下载菜单：中文，外加整本书的 PDF -------------------------------------------------------

PRINT_PAGE = {"text": "打印本页", "tooltip": "用浏览器把本页打印或存成 PDF"}
BOOK_PDF_BUTTON = {"type": "link", "text": "整本书 PDF", "tooltip": "下载整本书的 PDF",
                   "icon": "fas fa-book", "label": "download-book-pdf-button"}


def download_menu(context: dict) -> list[dict] | None:
    """主题（优先级 501）生成的下载菜单里的按钮列表；页面没有下载菜单时为 None。"""
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            return group["buttons"]
    return None


def chinese_download_menu(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """菜单由主题的 Python 代码生成，“打印”一项的文字写死为 “.pdf”：改成中文，末尾加上整本书的 PDF。"""
    buttons = download_menu(context)
    if buttons is None:
        return
    for button in buttons:
        if button.get("label") == "download-pdf-button":  # window.print()
            button.update(PRINT_PAGE)
    if app.config.book_pdf_offered:
        buttons.append({**BOOK_PDF_BUTTON, "url": context["pathto"](app.config.book_pdf_on_site, 1)})


def book_pdf_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{book-pdf}`链接文字```：指向网站根目录上整本书 PDF 的下载链接（文件名取自配置，正文里不再写一遍）。

    LaTeX 等其他格式里只印链接文字（读者手上就是 PDF）；网站不提供 PDF 时（``book_pdf_offered: false``）也只印文字。
    """
    env = inliner.document.settings.env
    if not env.config.book_pdf_offered:
        return [nodes.Text(text)], []
    href = "../" * env.docname.count("/") + env.config.book_pdf_on_site
    link = f'<a class="book-pdf-link" href="{html.escape(href)}" download>{html.escape(text)}</a>'
    return [nodes.raw(rawtext, link, format="html"), nodes.raw(rawtext, tex_escape(text), format="latex")], []


def book_student_site_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{book-student-site}`链接文字```：网站根目录上学生版网站的 zip（两种语言的学生版都在里面；make html 在
    两个版本都建好之后把它放在那里，文件名取自配置 ``book_student_site_on_site``）。

    英文版的页面在 ``en/`` 下，指向的仍是根目录的同一个文件。学生版网站自己（``hide_solutions``）里没有这个
    文件，LaTeX 里也点不到：这两处只印链接文字。
    """
    env = inliner.document.settings.env
    latex = nodes.raw(rawtext, tex_escape(text), format="latex")
    if getattr(env.config, "hide_solutions", False):
        return [nodes.Text(text)], []
    prefix = next((e.get("prefix", "") for e in env.config.book_editions
                   if e["lang"] == env.config.book_edition), "")
    href = "../" * (env.docname.count("/") + prefix.count("/")) + env.config.book_student_site_on_site
    link = f'<a class="book-student-site-link" href="{html.escape(href)}" download>{html.escape(text)}</a>'
    return [nodes.raw(rawtext, link, format="html"), latex], []


# ---- 6. 搜索结果的摘要 ----------------------------------------------------------------------

SEARCH_SNIPPETS_JS = HERE / "search_snippets.js"
TOGGLE_LABEL_JS = HERE / "toggle_label.js"


def page_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """搜索页：摘要只取正文（Sphinx 的 searchtools.js 没有“从哪个元素取摘要”的配置）。
    每一页：折叠按钮的 aria-label 换成中文（sphinx-togglebutton 把它写死在 JS 里）。"""
    if pagename == "search":
        app.add_js_file(None, body=SEARCH_SNIPPETS_JS.read_text(encoding="utf-8"))
    app.add_js_file(None, body=TOGGLE_LABEL_JS.read_text(encoding="utf-8"))


# ---- 7. 参考文献表的无障碍角色 ----------------------------------------------------------------

class CitationListTranslator(HTML5Translator):
    """引文表：role="list" 的 div 里每条引文是 role="listitem"（docutils 写的是已废弃的 doc-biblioentry）。"""

    def visit_citation(self, node):
        if not isinstance(node.previous_sibling(), type(node)):
            self.body.append('<div role="list" class="citation-list">\n')
        self.body.append(self.starttag(node, "div", classes=[node.tagname], role="listitem"))

    def depart_citation(self, node):
        self.body.append("</div>\n")
        if not isinstance(node.next_node(descend=False, siblings=True), type(node)):
            self.body.append("</div>\n")


# ---- 8. 根目录的跳转页 ----------------------------------------------------------------------

REDIRECT_PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0; url={url}">
<title>{title}</title>
<link rel="icon" href="{favicon}">
</head>
<body>
<p>正在前往 <a href="{url}">{title}</a>……</p>
</body>
</html>
"""


def write_root_redirect(app: Sphinx, exception) -> None:
    """根页面不是 index 时，在输出根目录写一个中文跳转页（先于 sphinx-external-toc 的单行版本；那一页没有配置项）。"""
    if exception is not None or app.builder.format != "html" or app.config.root_doc == "index":
        return
    index = Path(app.outdir) / "index.html"
    favicon = app.config.html_favicon or ""
    if favicon and "://" not in favicon:
        favicon = "_static/" + Path(favicon).name
    index.write_text(REDIRECT_PAGE.format(
        lang=html.escape((app.config.language or "en").replace("_", "-")),
        url=html.escape(app.builder.get_target_uri(app.config.root_doc)),
        title=html.escape(app.config.html_title or app.config.project),
        favicon=html.escape(favicon)), encoding="utf-8")


# ---- 9. 练习标题的全角括号 ---------------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u9fff]")


class FullWidthExerciseParens(SphinxPostTransform):
    """练习（及其解答）标题里包着中文的 “ (…)” 换成 “（…）”。"""

    default_priority = 25  # sphinx-exercise 在 20（练习）、21（解答）、22（链接文字）拼好标题

    def run(self, **kwargs) -> None:
        from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node, solution_node

        for box in self.document.findall(lambda n: isinstance(
                n, (exercise_node, exercise_enumerable_node, solution_node))):
            if box.children and isinstance(box.children[0], nodes.title):
                fullwidth_parens(box.children[0])


class PlainSolutionTitles(SphinxPostTransform):
    """折叠的解答，标题里不带链接（见模块说明第 12 条）。"""

    default_priority = 25  # sphinx-exercise 在 22 把指回练习的链接放进解答标题

    def run(self, **kwargs) -> None:
        from sphinx_exercise.nodes import solution_node

        for box in self.document.findall(solution_node):
            if not box.children or not isinstance(box.children[0], nodes.title):
                continue
            for ref in list(box.children[0].findall(nodes.reference)):
                ref.replace_self(ref.children)


class UniqueExerciseContentIds(SphinxPostTransform):
    """练习与解答正文那一层 section 的固定 id 换成整页唯一的 id（见模块说明第 11 条）。"""

    default_priority = 25  # sphinx-exercise 在 20–22 建好练习与解答（解答的正文在 21 才放进 section）
    FIXED = {"exercise-content", "solution-content"}

    def run(self, **kwargs) -> None:
        from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node, solution_node

        for box in self.document.findall(lambda n: isinstance(
                n, (exercise_node, exercise_enumerable_node, solution_node))):
            for section in box.findall(nodes.section):
                fixed = [i for i in section["ids"] if i in self.FIXED]
                if not fixed:
                    continue
                section["ids"] = [i for i in section["ids"] if i not in self.FIXED]
                base = box["ids"][0] if box["ids"] else fixed[0]
                new_id, n = f"{base}-content", 1
                while new_id in self.document.ids:
                    n += 1
                    new_id = f"{base}-content-{n}"
                section["ids"].append(new_id)
                self.document.ids[new_id] = section


def fullwidth_parens(title: nodes.Element) -> None:
    """title 里最后一对 “ (” … “)” 之间有中文时，把这两个文字节点换成全角括号（就地修改）。"""
    texts = list(title.findall(nodes.Text))
    opens = [i for i, x in enumerate(texts) if str(x).endswith(" (")]
    closes = [i for i, x in enumerate(texts) if str(x) == ")"]
    if not opens or not closes or closes[-1] < opens[-1]:
        return
    start, end = opens[-1], closes[-1]
    if not _CJK.search("".join(str(x) for x in texts[start + 1:end])):
        return
    for i, text in ((start, str(texts[start])[:-2] + "（"), (end, "）")):
        texts[i].parent.replace(texts[i], nodes.Text(text))


class _LatinTerms:
    """SearchChinese 的 latin_terms 只被用来 extend 和查 in：同样的两个操作，查找是集合的。"""

    def __init__(self) -> None:
        self._terms: set[str] = set()

    def extend(self, terms) -> None:
        self._terms.update(terms)

    def __contains__(self, word: str) -> bool:
        return word in self._terms


class FastChinese(SearchChinese):
    """与 Sphinx 的 SearchChinese 相同，只是 latin_terms 查得快（见本模块说明第 10 条）。"""

    def init(self, options: dict[str, str]) -> None:
        super().init(options)
        self.latin_terms = _LatinTerms()  # 父类里是类属性上的一个列表


def setup(app: Sphinx) -> dict:
    app.add_search_language(FastChinese)
    app.add_post_transform(FullWidthExerciseParens)
    app.add_post_transform(UniqueExerciseContentIds)
    app.add_post_transform(PlainSolutionTitles)
    app.add_config_value("book_pdf_on_site", "book.pdf", "env", types=[str])
    app.add_config_value("book_pdf_offered", True, "env", types=[bool])
    app.add_role("book-pdf", book_pdf_role)
    app.add_config_value("book_student_site_on_site", "student-site.zip", "env", types=[str])
    app.add_role("book-student-site", book_student_site_role)
    # pydata-sphinx-theme 在 builder-inited 时把它的 Bootstrap 混入类套在这里登记的写出器上
    app.set_translator("html", CitationListTranslator)
    app.connect("config-inited", absolute_search_dict)
    app.connect("config-inited", jieba_cache_of_this_user)
    app.connect("html-page-context", offer_notebook_download, priority=500)
    app.connect("html-page-context", chinese_download_menu, priority=502)
    app.connect("html-page-context", page_scripts)
    app.connect("html-page-context", dedupe_assets, priority=900)
    app.connect("build-finished", write_root_redirect, priority=400)  # 先于 sphinx-external-toc（500）
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
