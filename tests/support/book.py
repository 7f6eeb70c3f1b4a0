"""小书与构建：在临时目录里搭一本小书、用本书真正的构建脚本构建它，以及读目录。"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "tools" / "build_book.py"
FAILING_PAGES = REPO / "tests" / "fixtures" / "failing_pages"

# 一页 MyST 笔记本开头的 jupytext 头与 kernelspec（没有它的页面不会被执行）；测试里临时写的小页面共用
MYST_NOTEBOOK_HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""
if str(REPO / "tools") not in sys.path:
    sys.path.insert(0, str(REPO / "tools"))  # 构建脚本的辅助模块（nb_internals 等）供测试直接导入

_spec = importlib.util.spec_from_file_location("build_book", BUILD_SCRIPT)
build_book = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_book)


def toc_docnames() -> list[str]:
    """_toc.yml 里的全部页面（文档名，不带后缀），按目录顺序；与构建脚本读目录的方式相同。"""
    pages = build_book.toc_pages(REPO, REPO / "_toc.yml")
    return [page.relative_to(REPO).with_suffix("").as_posix() for page in pages]


@dataclass
class BuildResult:
    root: Path
    returncode: int | None  # None：BOOK_PREBUILT，这次测试没有运行构建
    output: str

    @property
    def html(self) -> Path:
        return self.root / "_build" / "html"


def run_build(root: Path, *extra: str, timeout: float = 1800) -> BuildResult:
    """用本书真正的构建脚本（tools/build_book.py）构建 root 下的书。"""
    proc = subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--root", str(root), *extra],
        capture_output=True, text=True, timeout=timeout,
    )
    return BuildResult(root, proc.returncode, proc.stdout + proc.stderr)


def make_mini_book(tmp: Path, pages: dict[str, str], config_changes: dict | None = None,
                   with_package: bool = False) -> Path:
    """在 tmp 下搭一本只含 pages 的小书，配置取自本书真实的 _config.yml。

    pages: {文档名: MyST 文本}，第一个是根页面。config_changes 按键路径覆盖配置，
    例如 {"execute.timeout": 3}。with_package=True 时把 src/minigpt 等也复制过去。
    """
    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    for dotted, value in (config_changes or {}).items():
        node = config
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    (tmp / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    # 配置里引用的文件（参考文献等）照原样带过去
    for rel in ("book/references.bib", "book/search_dict.txt", "book/_ext",
                "book/_static", "locale"):
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        if (REPO / rel).is_dir():
            shutil.copytree(REPO / rel, tmp / rel, dirs_exist_ok=True)
        else:
            shutil.copy(REPO / rel, tmp / rel)
    if with_package:
        shutil.copytree(REPO / "src" / "minigpt", tmp / "src" / "minigpt",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for rel in ("requirements.txt", "requirements.lock", "pyproject.toml", "LICENSE"):
            shutil.copy(REPO / rel, tmp / rel)
    names = list(pages)
    toc = {"format": "jb-book", "root": names[0]}
    if names[1:]:
        toc["chapters"] = [{"file": n} for n in names[1:]]
    (tmp / "_toc.yml").write_text(yaml.safe_dump(toc), encoding="utf-8")
    for name, text in pages.items():
        (tmp / f"{name}.md").write_text(text, encoding="utf-8")
    return tmp
