"""本地预览（make serve）：在 http://127.0.0.1:端口/ 上提供网站，改了页面或包就重建，浏览器自动刷新。

用法：python tools/serve.py [--port 8000] [--root DIR]

用的是 sphinx-autobuild（Sphinx 生态里做这件事的工具），但重建走本书自己的构建脚本：
每次有改动，sphinx-autobuild 先运行 `tools/build_book.py`（它的 --pre-build 命令），所以执行键、
过期缓存失效、并行预执行、-W 都和 make html 一样；然后它在一个空的占位项目上跑一次 `dummy` 构建器
（什么都不写，不到一秒），只为了借用它的文件监视、静态服务器和自动刷新。

监视：book/、src/minigpt/、_config.yml、_toc.yml；_build/ 不在其中（构建自己写的标记文件会引起无尽重建）。
构建失败时终端里打印报错（和 make html 一样指出页面），浏览器里仍是上一次成功的版本。
自动刷新的脚本只注入到这个本地服务器返回的页面里，不会进入 _build/html 的文件。
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STUB_CONF = "# make serve 的占位项目：真正的构建由 --pre-build 的 tools/build_book.py 完成\n"
STUB_INDEX = "占位\n====\n"


def autobuild_args(root: Path, port: int, host: str = "127.0.0.1") -> list[str]:
    """sphinx-autobuild 的命令行参数（不含程序名）。"""
    build = root / "_build"
    stub = build / ".serve-stub"
    stub.mkdir(parents=True, exist_ok=True)
    (stub / "conf.py").write_text(STUB_CONF, encoding="utf-8")
    (stub / "index.rst").write_text(STUB_INDEX, encoding="utf-8")
    pre_build = shlex.join([sys.executable, str(REPO / "tools" / "build_book.py"), "--root", str(root)])
    watched = [p for p in (root / "book", root / "src" / "minigpt", root / "_config.yml", root / "_toc.yml")
               if p.exists()]
    args = [str(stub), str(build / "html"), "-b", "dummy", "-q", "-d", str(stub / "doctrees"),
            "--host", host, "--port", str(port), "--pre-build", pre_build,
            "--ignore", str(build / "*"), "--re-ignore", r"(__pycache__|\.ipynb_checkpoints|\.pytest_cache)"]
    for path in watched:
        args += ["--watch", str(path)]
    return args


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000, help="端口；0 表示让系统挑一个空闲端口")
    parser.add_argument("--root", type=Path, default=REPO, help="书的根目录（含 _config.yml）")
    args = parser.parse_args(argv)
    print(f"[serve] 预览 {args.root.resolve()}：改动 book/ 或 src/minigpt/ 后自动重建（Ctrl-C 结束）", flush=True)
    program = Path(sys.executable).parent / "sphinx-autobuild"  # 用它的命令行（公开接口）
    os.execv(program, [str(program), *autobuild_args(args.root.resolve(), args.port)])


if __name__ == "__main__":
    main()
