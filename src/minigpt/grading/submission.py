"""读一份提交：只读不写，各种保存方式（Jupyter、JupyterLab、Colab，nbformat 4.0–4.5）都接受。"""

from __future__ import annotations

import hashlib
import json
import threading
import warnings
from pathlib import Path

# 比这还大的文件不像作业笔记本（图片输出一般也就几 MB）
MAX_NOTEBOOK_BYTES = 64 * 2**20

# warnings.catch_warnings 改的是全进程的警告过滤器，不能两个线程同时用（批改程序用线程并行）
_WARNINGS_LOCK = threading.Lock()


def read_submission(path: Path):
    """读入一份提交；返回 (笔记本, 内容的 sha256, None) 或 (None, sha256 或 "", (异常类型, 说明))。"""
    import nbformat

    try:   # 名字太长、上级文件夹不让进（EACCES）时，exists() 本身就抛 OSError
        if not path.exists():
            return None, "", ("FileNotFoundError", "文件不存在")
        if not path.is_file():
            return None, "", ("IsADirectoryError", "不是文件")
        size = path.stat().st_size
        with path.open("rb") as f:   # 最多读上限多一个字节：/proc 下的文件大小写的是 0
            raw = f.read(MAX_NOTEBOOK_BYTES + 1)
        size = max(size, len(raw))
        if size > MAX_NOTEBOOK_BYTES:
            return None, "", ("FileTooLarge", f"文件有 {size / 2**20:.0f} MB，超过 "
                                              f"{MAX_NOTEBOOK_BYTES // 2**20} MB，不像作业笔记本")
    except OSError as err:
        return None, "", (type(err).__name__, f"无法读取：{err.strerror or err}")
    digest = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, digest, ("UnicodeDecodeError", "不是 UTF-8 文本，不像 .ipynb 笔记本")
    try:
        json.loads(text)
    except json.JSONDecodeError as err:
        return None, digest, ("JSONDecodeError", f"不是有效的 JSON（第 {err.lineno} 行第 "
                                                 f"{err.colno} 列：{err.msg}），"
                                                 "文件可能损坏或被截断")
    except RecursionError:
        return None, digest, ("RecursionError", "JSON 嵌套太深，不像 Jupyter 笔记本")
    try:
        with _WARNINGS_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
            nbformat.validate(nb)
    except Exception as err:  # nbformat 对各种不合格的 JSON 抛出不同的异常
        return None, digest, (type(err).__name__,
                              "是 JSON，但不是合格的 Jupyter 笔记本（nbformat 4）")
    return nb, digest, None


def code_cells(nb) -> list[dict]:
    """笔记本里的代码单元（按顺序），每个只留运行需要的 source 和 metadata。"""
    return [{"source": c.source, "metadata": dict(c.get("metadata", {}))}
            for c in nb.cells if c.cell_type == "code"]
