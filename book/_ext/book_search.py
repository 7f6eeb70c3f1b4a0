"""站内搜索：中文检索词典、检索索引的建立与搜索结果的摘要（本地 Sphinx 扩展）。

Sphinx 按 ``language: zh_CN`` 选用中文检索，jieba 词典在 _config.yml 的 ``html_search_options`` 里配置；下面三件事
配置做不到，所以有这个扩展：

1. **中文检索词典用绝对路径。** Sphinx 把 ``html_search_options['dict']`` 按构建时的工作目录解析，
   找不到就悄悄不用。这里按配置目录（``app.confdir``）把它变成绝对路径；文件不存在时发警告
   （构建带 ``-W``，于是构建失败），而不是让检索默默退化。jieba 把词典缓存写在所有用户共用的
   ``/tmp/jieba.cache``（权限 0600）：别的用户先构建过，这里就读不了也写不了，每次构建多花一秒，还在输出里
   打印一段 PermissionError 的 traceback。这里把缓存放进本用户的缓存目录（``~/.cache/minigpt-book``）。
2. **中文检索索引建得快。** Sphinx 7.4 的 ``SearchChinese.stem`` 对每个词都查一遍 ``word in self.latin_terms``，
   而 ``latin_terms`` 是一个列表，装着此前各页出现过的每一个拉丁字母词（重复的也在）：越往后的页越慢，
   本书单是这一项就要一秒左右。这是 Sphinx 代码里的数据结构，配置改不了：这里用 ``app.add_search_language``
   （公开接口）登记一个子类，把它换成集合。判断的结果一样，写出的检索索引逐字节相同（有测试）。
3. **搜索结果的摘要从正文开始。** Sphinx 7.4 的 searchtools.js 取页面里 ``[role="main"]`` 的全部文字做摘要，
   主题在那里面还放了页首按钮、打印用的标题与目录、右侧的本页目录，摘要于是以 “.pdf 因果遮蔽 目录 …”
   开头。searchtools.js 没有“从哪个元素取摘要”的配置：搜索页上加一小段脚本（``search_snippets.js``），
   让它只从 ``<article>`` 里取文字。
"""

from __future__ import annotations

import os
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.search.zh import SearchChinese
from sphinx.util import logging

logger = logging.getLogger(__name__)
SEARCH_SNIPPETS_JS = Path(__file__).parent / "search_snippets.js"


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
        logger.warning(f"[book_search] 中文检索词典不存在：{path}（html_search_options['dict']）")
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


# ---- 2. 建索引时的拉丁字母词 --------------------------------------------------------------------

class _LatinTerms:
    """SearchChinese 的 latin_terms 只被用来 extend 和查 in：同样的两个操作，查找是集合的。"""

    def __init__(self) -> None:
        self._terms: set[str] = set()

    def extend(self, terms) -> None:
        self._terms.update(terms)

    def __contains__(self, word: str) -> bool:
        return word in self._terms


class FastChinese(SearchChinese):
    """与 Sphinx 的 SearchChinese 相同，只是 latin_terms 查得快（见本模块说明第 2 条）。"""

    def init(self, options: dict[str, str]) -> None:
        super().init(options)
        self.latin_terms = _LatinTerms()  # 父类里是类属性上的一个列表


# ---- 3. 搜索结果的摘要 ----------------------------------------------------------------------

def search_snippets_script(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """搜索页：摘要只取正文（Sphinx 的 searchtools.js 没有“从哪个元素取摘要”的配置）。"""
    if pagename == "search":
        app.add_js_file(None, body=SEARCH_SNIPPETS_JS.read_text(encoding="utf-8"))


def setup(app: Sphinx) -> dict:
    app.add_search_language(FastChinese)
    app.connect("config-inited", absolute_search_dict)
    app.connect("config-inited", jieba_cache_of_this_user)
    # 先于 book_html_fixes 的折叠按钮脚本（同为优先级 500，按登记的先后）：搜索页上两段脚本的次序不变
    app.connect("html-page-context", search_snippets_script)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
