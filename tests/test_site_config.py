"""网站配置的快速检查（不构建书）：中文检索词典的路径与分词、本地扩展的配置处理。"""

from __future__ import annotations

import importlib.util
import logging
from types import SimpleNamespace

import pytest
import yaml

from conftest import REPO

SEARCH_DICT = REPO / "book" / "search_dict.txt"


@pytest.fixture(scope="module")
def book_site():
    spec = importlib.util.spec_from_file_location("book_site", REPO / "book" / "_ext" / "book_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_points_the_search_dictionary_at_the_repo_file():
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    rel = config["sphinx"]["config"]["html_search_options"]["dict"]
    assert (REPO / rel).resolve() == SEARCH_DICT.resolve()
    assert "book_site" in config["sphinx"]["local_extensions"]


def test_search_dictionary_path_does_not_depend_on_the_working_directory(book_site, tmp_path,
                                                                         monkeypatch):
    """Sphinx 按当前目录解析 dict 路径、找不到就悄悄不用；扩展把它变成绝对路径。"""
    monkeypatch.chdir(tmp_path)  # 构建可能从任何目录启动
    app = SimpleNamespace(confdir=str(REPO))
    config = SimpleNamespace(html_search_options={"dict": "book/search_dict.txt"})
    book_site._absolute_search_dict(app, config)
    assert config.html_search_options["dict"] == str(SEARCH_DICT.resolve())


def test_missing_search_dictionary_is_reported(book_site, tmp_path, caplog):
    app = SimpleNamespace(confdir=str(tmp_path))
    config = SimpleNamespace(html_search_options={"dict": "nope.txt"})
    with caplog.at_level(logging.WARNING):
        book_site._absolute_search_dict(app, config)
    assert "中文检索词典不存在" in caplog.text


@pytest.fixture(scope="module")
def tokenizer():
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()  # 独立的分词器，不动 jieba 的全局状态
    tokenizer.load_userdict(str(SEARCH_DICT))
    return tokenizer


@pytest.mark.parametrize("text, term", [
    ("GPT 离不开因果遮蔽。", "因果遮蔽"),
    ("多头注意力把 d_model 拆成几个头。", "多头注意力"),
    ("残差连接和层归一化是基础设施。", "残差连接"),
    ("残差连接和层归一化是基础设施。", "层归一化"),
    ("前馈网络先升维和再降维。", "升维"),
    ("这一层的参数量是多少？", "参数量"),
    ("先算缩放点积，再做 softmax。", "缩放点积"),
])
def test_jieba_keeps_book_terms_whole(tokenizer, text, term):
    """有词典时，书里的术语被切成一个完整的检索词（没有词典时“因果遮蔽”会变成“因果”“遮蔽”）。"""
    assert term in list(tokenizer.cut_for_search(text))
