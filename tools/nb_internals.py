"""构建脚本用到的 myst-nb 与 jupyter-cache 内部接口：全书只在这一个文件里碰它们。

`tools/build_book.py` 的并行预执行要和 myst-nb 用同样的方式读页面、执行笔记本、写执行缓存，
才能让 Sphinx 随后直接取用缓存。这些函数不是两个包公开承诺的接口，升级时可能悄悄改变：

- myst-nb：`myst_nb.core.read.is_myst_markdown_notebook`、`read_myst_markdown_notebook`
  （把 MyST 文本笔记本读成 nbformat 对象，与 myst-nb 构建时的读法相同）；
- jupyter-cache：`jupyter_cache.executors.utils.single_nb_execution`（执行一个笔记本）、
  `get_cache`、`JupyterCacheBase.match_cache_notebook` / `cache_notebook_bundle`、
  `jupyter_cache.base.CacheBundleIn`（查询与写入执行缓存）。

`load()` 先核对两个包的版本是否是这里验证过的版本，不是就停下来、指名道姓地报错；
升级其中一个包时，核对上面这些函数的行为（tests/test_build_is_a_test.py 的并行路径测试会用到它们），
再把新版本加进 `VERIFIED`。
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

# 写这个文件时验证过的版本：{发行包名: {版本, ...}}
VERIFIED: dict[str, set[str]] = {
    "myst-nb": {"1.4.0"},
    "jupyter-cache": {"1.0.1"},
    # tools/zygote.py 覆盖 jupyter_client 的 KernelManager._async_launch_kernel，按 ipykernel_launcher 的做法启动内核
    "jupyter-client": {"8.10.0"},
    "ipykernel": {"7.4.0"},
}



def join_streams(nb: Any) -> None:
    """把每个代码单元里相邻、同名（stdout / stderr）的输出流原样接成一段（就地修改）。

    内核按定时器分段发送输出，段落的边界取决于机器当时有多忙：一行 ``print("标题:", t)`` 可能被切在
    “标题:” 之后。myst-nb 合并输出流时把每一段的结尾空白去掉、再补一个换行，于是同一个单元在忙的
    机器上会印成两行。执行完就在这里原样拼接，页面上的输出就不再取决于运气。"""
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        joined = []
        for out in cell.get("outputs", []):
            prev = joined[-1] if joined else None
            if (out.get("output_type") == "stream" and prev is not None
                    and prev.get("output_type") == "stream" and prev.get("name") == out.get("name")):
                prev["text"] += out["text"]
            else:
                joined.append(out)
        cell["outputs"] = joined

class UnsupportedVersions(RuntimeError):
    """装的 myst-nb / jupyter-cache 不是 nb_internals 验证过的版本。"""


def check_versions(verified: dict[str, set[str]] | None = None) -> None:
    """装的版本不在 verified（默认 VERIFIED）里就报 UnsupportedVersions，列出每个包装的与验证过的版本。"""
    problems = []
    for package, versions in (VERIFIED if verified is None else verified).items():
        try:
            installed = version(package)
        except PackageNotFoundError:
            installed = "没有安装"
        if installed not in versions:
            problems.append(f"{package} {installed}（验证过的版本：{', '.join(sorted(versions))}）")
    if problems:
        raise UnsupportedVersions(
            "构建脚本的并行预执行依赖 myst-nb 与 jupyter-cache 的内部接口，"
            "而这些包的版本不是验证过的版本：" + "；".join(problems)
            + "。请按 requirements.lock 安装（make setup），或核对 tools/nb_internals.py 里"
            "列出的内部接口后，把新版本加进它的 VERIFIED。"
        )


@dataclass(frozen=True)
class Internals:
    """预执行需要的四件事：读页面、执行、查缓存、写缓存。"""

    _read_text_notebook: Any
    _is_text_notebook: Any
    _execute: Any
    _get_cache: Any
    _bundle: Any

    def read_notebook(self, path: Path) -> Any | None:
        """与 myst-nb 相同的方式把 MyST 文本笔记本读成 nbformat 对象；不是笔记本则返回 None。"""
        text = path.read_text(encoding="utf-8")
        if not self._is_text_notebook(text):
            return None
        return self._read_text_notebook(text, add_source_map=True, path=str(path))

    def execute(self, nb: Any, cwd: Path, timeout: int, on_kernel_ready=None,
                kernel_manager_class=None) -> tuple[bool, float]:
        """执行笔记本（就地填入输出），返回 (是否成功, 秒数)；出错的单元不会被放过。

        on_kernel_ready：内核启动好、第一个单元执行之前调用一次（nbclient 的 on_notebook_start 钩子），
        用来把“内核启动”和“执行单元”的时间分开计。kernel_manager_class：nbclient 用它启动内核。
        """
        hooks = {} if on_kernel_ready is None else {"on_notebook_start": lambda **_: on_kernel_ready()}
        if kernel_manager_class is not None:  # nbclient 的公开选项：由谁启动内核（见 tools/zygote.py）
            hooks["kernel_manager_class"] = kernel_manager_class
        result = self._execute(nb, cwd=str(cwd), allow_errors=False, timeout=timeout,
                               meta_override=True, **hooks)
        join_streams(nb)
        return result.err is None, result.time

    def open_cache(self, cache_dir: Path) -> Any:
        """打开（或新建）执行缓存。"""
        return self._get_cache(str(cache_dir))

    def is_cached(self, cache: Any, nb: Any) -> bool:
        """缓存里有没有这个笔记本（按代码单元、元数据与 kernelspec 匹配）。"""
        try:
            cache.match_cache_notebook(nb)
        except KeyError:
            return False
        return True

    def store(self, cache: Any, nb: Any, uri: str, seconds: float | None = None) -> None:
        """把执行好的笔记本写进缓存（覆盖同一键下的旧记录）。

        jupyter-cache 先提交数据库记录、再写笔记本文件：中间被 Ctrl-C 打断，就留下一条没有文件的记录，
        下一次构建里 myst-nb 读它时抛 KeyError。所以构建脚本的信号处理在这一小段里先记下信号，写完再处理
        （children.held）。"""
        import children

        data = {} if seconds is None else {"execution_seconds": seconds}
        with children.held():
            cache.cache_notebook_bundle(self._bundle(nb, uri, data=data),
                                        check_validity=False, overwrite=True)

    def probe_cache(self, cache_dir: Path) -> str | None:
        """真正查询一次缓存数据库；能用返回 None，损坏时返回一句原因（不抛异常）。

        `get_cache()` 本身从不失败：数据库文件被写坏（sqlalchemy DatabaseError）或是空文件
        （jupyter-cache 抛 RuntimeError）都要等第一次查询才暴露。
        """
        if not cache_dir.exists():
            return None
        try:
            cache = self.open_cache(cache_dir)
            records = cache.list_cache_records()
            cache.list_project_records()
        except Exception as exc:  # noqa: BLE001  缓存是可丢弃的：任何查询失败都当作损坏
            return f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
        # 有记录、没有笔记本文件：写缓存的进程在两步之间被结束了（例如 Sphinx 执行完一页、正写缓存时被 SIGKILL）
        for record in records:
            if not cache._get_notebook_path_cache(record.hashkey).is_file():
                return f"记录 {record.pk}（{record.uri}）没有对应的笔记本文件"
        return None


def load() -> Internals:
    """核对版本，再导入内部接口；版本不对时报 UnsupportedVersions（指名是哪个包）。"""
    check_versions()
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from jupyter_cache.executors.utils import single_nb_execution
    from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook

    return Internals(read_myst_markdown_notebook, is_myst_markdown_notebook,
                     single_nb_execution, get_cache, CacheBundleIn)


def discard_cache(cache_dir: Path) -> None:
    """删掉整个执行缓存目录（它是可丢弃的：下次构建会重新执行页面并重建它）。"""
    shutil.rmtree(cache_dir, ignore_errors=True)
