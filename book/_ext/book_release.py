"""这一版是第几版：版本号、页脚、PDF 扉页、站点地图与分享信息（本地 Sphinx 扩展）。

版本号只写在一处：``src/minigpt/__init__.py`` 的 ``__version__``（pyproject.toml 经 setuptools 读它，
wheel、sdist、作业包和笔记本包的文件名都由它而来）。主版本号就是书的第几版。配置做不到的事，这里做：

1. **版本号从包里读。** _config.yml 是静态的 YAML，不能去读一个 Python 文件；这里在 ``config-inited`` 时
   读出 ``__version__``（按语法树读，不 import），写进 Sphinx 的 ``version`` / ``release``。每次构建
   读出的值相同，所以不会让页面过期。
2. **网站页脚印版本**：不在这里。模板 ``book/_ext/templates/book-edition.html``（_config.yml 的 footer_content_items） 读 Sphinx 的
   ``release``（第 1 条写进去的），印出 ``footer_line`` 那一句。
3. **PDF 扉页印版本**：同理，给 LaTeX 导言区加一个 ``\\bookeditionline``（book_pdf.sty 的书名页用它）。
4. **正文里的版本号**：角色 ``{book-version}`第 {edition} 版（{version}）```（更新记录页用它）。
5. **分享信息用同一个网址**：``html_baseurl``（_config.yml 里唯一的网址）同时给 sphinxext-opengraph 的
   ``ogp_site_url``（它不会自己去读 ``html_baseurl``）。
6. **站点地图列出每一页**：sphinx-sitemap 只收集“这一次构建写出的页面”，增量构建只改了一页时，
   它写出的 sitemap.xml 就只剩一页。这里在它写文件之前（build-finished，优先级 499 < 500）把本次
   收集到的换成书里的全部页面；一页都没写（空操作构建）时什么都不加，它也就不写文件。
"""

from __future__ import annotations

import ast
import queue
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)
DISTRIBUTION = "minigpt-book"   # 与 pyproject.toml 的 [project] name 相同（tests/test_release.py 核对）


def package_version(root: Path) -> str:
    """root/src/minigpt/__init__.py 里的 ``__version__``（不 import：构建进程里可能是另一份 minigpt）。"""
    init = root / "src" / "minigpt" / "__init__.py"
    if not init.is_file():  # 测试用的小书不带包：用当前环境里装的那一份
        import minigpt

        return minigpt.__version__
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            return ast.literal_eval(node.value)
    raise RuntimeError(f"{init} 里没有 __version__ = \"…\"")


def edition(version: str) -> int:
    return int(version.split(".")[0])


def edition_line(version: str) -> str:
    return f"第 {edition(version)} 版 · {DISTRIBUTION} {version}"


def footer_line(version: str) -> str:
    """网站页脚（由模板 book-edition.html 按同样的格式印出）：界面文字里不放英文词，所以不写包名。"""
    return f"第 {edition(version)} 版（版本 {version}）"


def set_version(app: Sphinx, config) -> None:
    version = package_version(Path(app.confdir))
    config.version = config.release = version
    elements = dict(config.latex_elements or {})
    elements["preamble"] = (elements.get("preamble", "")
                            + f"\n\\def\\bookeditionline{{{edition_line(version)}}}")
    config.latex_elements = elements
    if getattr(config, "html_baseurl", "") and not getattr(config, "ogp_site_url", ""):
        config.ogp_site_url = config.html_baseurl


def book_version_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{book-version}`模板```：模板里的 {version} 与 {edition} 换成这一版的版本号与版次。"""
    version = inliner.document.settings.env.config.version
    return [nodes.Text(text.format(version=version, edition=edition(version)))], []


def complete_sitemap(app: Sphinx, exception) -> None:
    """把 sphinx-sitemap 本次收集到的链接换成全部页面（只在本次至少写了一页时）。"""
    links = getattr(app, "sitemap_links", None)
    if exception is not None or links is None or app.builder.format != "html":
        return
    seen = []
    while True:
        try:
            seen.append(links.get_nowait())
        except queue.Empty:
            break
    if not seen:
        return
    from sphinx_sitemap import is_excluded

    suffix = app.config.html_file_suffix or ".html"
    for doc in sorted(app.env.found_docs):
        link = doc + suffix
        if not is_excluded(link, app.config.sitemap_excludes):
            links.put((link, None))


def setup(app: Sphinx) -> dict:
    app.add_role("book-version", book_version_role)
    app.connect("config-inited", set_version, priority=400)
    app.connect("build-finished", complete_sitemap, priority=499)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
