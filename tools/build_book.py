"""构建本书（HTML 或 PDF），并保证构建本身就是一次测试。

用法：python tools/build_book.py [--root DIR] [--builder html|pdflatex] [--fresh] [--out DIR]

它在 `jupyter-book build` 之外多做几件事：

1. **不发布过期输出**。jupyter-cache 只按代码单元的源码、元数据和 kernelspec 判断要不要重跑，
   改了 `src/minigpt` 里的函数，页面却不会重跑。这里对 `src/minigpt/**/*.py`、`requirements.txt`、
   `requirements.lock` 和 `pyproject.toml` 求一个摘要（执行键），与上次构建时记下的不同，就清空执行缓存，并从全新的
   Sphinx 环境构建（页面文本没变时 Sphinx 不会重读它，也就不会重新执行它）。
2. **增量构建不掩盖旧错误**。Sphinx 不会为没有重读的页面重发警告；上一次构建没有成功
   （或要求 `--fresh`）时，就用 `--all` 从全新的 Sphinx 环境构建。
3. **并行预执行**。Jupyter Book 1.x 一页一页地执行笔记本；这里先按本机的 CPU 数开几个进程，把执行
   缓存里缺的页面跑好（与 myst-nb 相同的读法、超时与缓存键），Sphinx 随后直接取用缓存。预执行失败的
   页面不入缓存，交给 Sphinx 重新执行并照常报错。用到的 myst-nb / jupyter-cache 内部接口都在
   `tools/nb_internals.py` 里，版本不是验证过的版本时构建停下并指名是哪个包。
   执行缓存是可丢弃的：它损坏时（例如数据库文件被写坏）说一句、删掉重建，构建照常完成。
4. **PDF**（`--builder pdflatex`，XeLaTeX）：与 HTML 共用 `_build/.doctrees` 和执行缓存（页面不会再执行
   一遍），输出 `_build/latex/book.pdf`，成功后复制到网站根目录（文件名是 _config.yml 的 `book_pdf_on_site`）
   （首页的“下载 PDF”链接）。任何构建失败都让所有构建器的“上次成功”标记作废（见 main）。
5. **警告即失败**：总是带 `-W -n --keep-going`。内核启动前先预热 matplotlib 的字体缓存，
   否则新机器上第一次 `import matplotlib` 往 stderr 写的提示会被当成错误。
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nb_internals  # noqa: E402  myst-nb / jupyter-cache 的内部接口只经由它

REPO = Path(__file__).resolve().parent.parent
# 执行键覆盖的文件：页面 import 的包、以及决定各库版本的文件
KEY_GLOBS = ("src/minigpt/**/*.py", "requirements.txt", "requirements.lock", "pyproject.toml")


def execution_key(root: Path) -> str:
    """对页面所依赖的代码与依赖声明求摘要；任何一个字节变了，摘要就变。"""
    digest = hashlib.sha256()
    for pattern in KEY_GLOBS:
        for path in sorted(root.glob(pattern)):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def invalidate_stale_cache(build_dir: Path, key: str) -> str | None:
    """执行键变了就删掉 jupyter-cache。返回 None（没变）、"first"（第一次构建）或 "changed"。"""
    key_file = build_dir / ".exec-key"
    cache = build_dir / ".jupyter_cache"
    old = key_file.read_text().strip() if key_file.exists() else None
    if old == key:
        return None
    if cache.exists():
        shutil.rmtree(cache)
    build_dir.mkdir(parents=True, exist_ok=True)
    key_file.write_text(key + "\n")
    return "first" if old is None else "changed"


def yaml_load(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def build_env(root: Path) -> dict[str, str]:
    """构建（和内核）所用的环境变量。"""
    env = dict(os.environ)
    # 让内核 import 的是 root 下的 minigpt（在临时副本里构建时也是如此）
    src = str(root / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("MPLCONFIGDIR", str(root / "_build" / ".mplconfig"))
    env["PYTHONHASHSEED"] = "0"
    # 图（SVG/PDF）里的日期固定，输出可复现；Sphinx 页脚的版权年份也取自它：2026-01-01
    env.setdefault("SOURCE_DATE_EPOCH", "1767225600")
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # ipykernel 调试器的提示会写到 stderr
    return env


def warm_up(env: dict[str, str]) -> None:
    """预先建立 matplotlib 字体缓存，免得第一次 import 的提示写进页面的 stderr。"""
    config_dir = Path(env["MPLCONFIGDIR"])
    if list(config_dir.glob("fontlist-*.json")):  # 缓存已经建好
        return
    config_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-c", "import matplotlib.pyplot"],
        env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def toc_pages(root: Path, toc: Path) -> list[Path]:
    """目录里列出的所有 .md 页面，按目录顺序（含 parts / chapters / sections 各层）。"""
    import yaml

    data = yaml.safe_load(toc.read_text(encoding="utf-8"))
    docs = [data["root"]]

    def walk(node) -> None:
        if isinstance(node, dict):
            if "file" in node:
                docs.append(node["file"])
            for key, value in node.items():
                if key != "root":
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(data)
    return [root / f"{doc}.md" for doc in docs if (root / f"{doc}.md").exists()]


def cpu_workers() -> int:
    """预执行用几个进程：本进程能用的 CPU 数（容器或 taskset 限制过的话按限制算）。"""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # 没有 sched_getaffinity 的平台
        return max(1, os.cpu_count() or 1)


def _execute_one(path_str: str, timeout: int):
    """（子进程里）执行一页；返回 (路径, 执行后的笔记本或 None, 秒数)。"""
    nbi = nb_internals.load()
    path = Path(path_str)
    nb = nbi.read_notebook(path)
    ok, seconds = nbi.execute(nb, path.parent, timeout)
    return path_str, (nb if ok else None), seconds


def ensure_cache_usable(cache_dir: Path) -> bool:
    """执行缓存损坏时（数据库写坏、空文件……）说一句、删掉它，返回 True；能用返回 False。

    缓存是可丢弃的：删掉之后页面会重新执行，缓存随之重建。
    """
    reason = nb_internals.load().probe_cache(cache_dir)
    if reason is None:
        return False
    print(f"[build_book] 执行缓存 {cache_dir} 已损坏（{reason}）：已删除，所有页面将重新执行并重建缓存。",
          flush=True)
    nb_internals.discard_cache(cache_dir)
    return True


def pre_execute(pages: list[Path], cache_dir: Path, timeout: int, workers: int | None = None) -> None:
    """把执行缓存里还没有的页面并行执行好并存入缓存。"""
    from concurrent.futures import ProcessPoolExecutor

    nbi = nb_internals.load()
    workers = workers or cpu_workers()
    cache = nbi.open_cache(cache_dir)
    todo = []
    for page in pages:
        nb = nbi.read_notebook(page)
        if nb is None or nbi.is_cached(cache, nb):
            continue
        if any(c.cell_type == "code" for c in nb.cells):
            todo.append(page)
        else:  # 没有代码单元的笔记本，执行前后完全一样：直接入缓存，省掉一次内核启动
            nbi.store(cache, nb, str(page))
    if len(todo) < 2 or workers < 2:  # 只有一页要跑、或只有一个 CPU 时并行没有好处，交给 Sphinx
        return
    workers = min(workers, len(todo))
    print(f"[build_book] 并行预执行 {len(todo)} 页（{workers} 个进程）…", flush=True)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_execute_one, str(p), timeout) for p in todo]
        for page, future in zip(todo, futures):
            try:
                path_str, nb, seconds = future.result()
            except Exception as exc:  # noqa: BLE001  子进程本身出了问题：同样交给 Sphinx
                print(f"[build_book] 预执行失败：{page}（{type(exc).__name__}；交给 Sphinx 重新执行并报告）",
                      flush=True)
                continue
            if nb is None:
                print(f"[build_book] 预执行失败：{path_str}（交给 Sphinx 重新执行并报告）", flush=True)
                continue
            nbi.store(cache, nb, path_str, seconds)


# PDF 的固定位置（make pdf 的产物）
PDF_BUILT = Path("latex") / "book.pdf"


def pdf_on_site(root: Path = REPO) -> str:
    """整本书 PDF 在网站根目录的文件名：_config.yml 的 sphinx.config.book_pdf_on_site（唯一的出处）。"""
    return yaml_load(root / "_config.yml")["sphinx"]["config"]["book_pdf_on_site"]


def publish_pdf(build_dir: Path, root: Path = REPO) -> Path | None:
    """把最近一次成功构建的 PDF 复制进网站目录 _build/html/，供首页的下载链接使用。

    PDF 与网站各自构建、先后不限：PDF 构建成功后复制一次；之后的 HTML 构建（Sphinx 不删输出目录里
    多出的文件）也会再复制一次。上一次 PDF 构建失败时（没有 .last-pdflatex-ok）不复制。
    """
    pdf = build_dir / PDF_BUILT
    if not (pdf.is_file() and (build_dir / ".last-pdflatex-ok").exists()):
        return None
    target = build_dir / "html" / pdf_on_site(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(pdf, target)
    return target


def print_latex_errors(latex_dir: Path) -> None:
    """XeLaTeX 失败时，从日志里摘出错误（以 “!” 或 “文件:行:” 开头的行及其后几行）。"""
    for log in sorted(latex_dir.glob("*.log")):
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        hits = [i for i, line in enumerate(lines) if line.startswith("!") or ".tex:" in line[:80]]
        if hits:
            print(f"\n[build_book] LaTeX 日志 {log} 中的错误：")
            for i in hits[:5]:
                print("\n".join(lines[i:i + 6]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=REPO, help="书的根目录（含 _config.yml）")
    parser.add_argument("--builder", default="html", choices=["html", "pdflatex", "latex"])
    parser.add_argument("--fresh", action="store_true", help="从全新的 Sphinx 环境构建")
    parser.add_argument("--out", type=Path, default=None,
                        help="输出目录（其下生成 _build/），默认是书的根目录；多人同时构建时各用各的")
    parser.add_argument("--toc", type=Path, default=None, help="改用另一份目录文件（只构建其中的页面）")
    parser.add_argument("--workers", type=int, default=None,
                        help="预执行的进程数，默认是本机可用的 CPU 数")
    args = parser.parse_args(argv)

    try:
        nb_internals.check_versions()
    except nb_internals.UnsupportedVersions as exc:
        print(f"[build_book] {exc}", file=sys.stderr)
        return 2
    root = args.root.resolve()
    out = (args.out or root).resolve()
    build_dir = out / "_build"
    env = build_env(root)
    key_change = invalidate_stale_cache(build_dir, execution_key(root))
    if key_change == "changed":
        print("[build_book] src/minigpt 或依赖有改动：已清空执行缓存，所有页面将重新执行。", flush=True)
    warm_up(env)
    os.environ.update(env)  # 预执行的内核与 Sphinx 的内核用同样的环境
    cache_rebuilt = ensure_cache_usable(build_dir / ".jupyter_cache")
    ok_marker = build_dir / f".last-{args.builder}-ok"
    pages = toc_pages(root, (args.toc or root / "_toc.yml").resolve())
    # 上次成功之后没有页面改过、执行键也没变：缓存里什么都不缺，省掉预执行的检查
    unchanged = (ok_marker.exists() and key_change is None and not cache_rebuilt
                 and all(p.stat().st_mtime < ok_marker.stat().st_mtime for p in pages))
    if not unchanged:
        config = yaml_load(root / "_config.yml")
        pre_execute(pages, build_dir / ".jupyter_cache",
                    int(config.get("execute", {}).get("timeout", 30)), args.workers)

    # 页面文本没变时 Sphinx 不会重读它，也就不会重新执行：缓存清空之后必须从全新环境构建
    fresh = args.fresh or not ok_marker.exists() or key_change is not None or cache_rebuilt
    ok_marker.unlink(missing_ok=True)

    cmd = [
        str(Path(sys.executable).parent / "jupyter-book"), "build", str(root),
        "-W", "-n", "--keep-going", "--builder", args.builder,
    ]
    if fresh:
        cmd.append("--all")
    if args.out:
        cmd += ["--path-output", str(out)]
    if args.toc:
        cmd += ["--toc", str(args.toc.resolve())]
    if args.builder == "pdflatex":
        # TeX 出错时不停下来等终端输入（make pdf 在终端里跑时会卡住），第一个错误就结束
        env.setdefault("LATEXOPTS", "-interaction=nonstopmode -halt-on-error -file-line-error")
    print("[build_book] jupyter-book " + " ".join(cmd[1:]), flush=True)
    code = subprocess.run(cmd, cwd=root, env=env, stdin=subprocess.DEVNULL).returncode
    if code == 0:
        ok_marker.touch()
    else:
        # HTML 与 PDF 共用 _build/.doctrees：这次失败时读进环境的页面，下次任何构建器都不会重读、
        # 也不会重报警告，所以所有构建器的“上次成功”标记一起作废，下次都从全新环境构建。
        for marker in build_dir.glob(".last-*-ok"):
            marker.unlink()
        reports = sorted(build_dir.glob("*/reports/**/*.err.log"))
        for report in reports:
            print(f"\n[build_book] 执行报告 {report}:\n" + report.read_text()[-3000:])
        if args.builder == "pdflatex":
            print_latex_errors(build_dir / "latex")
            (build_dir / "html" / pdf_on_site(root)).unlink(missing_ok=True)  # 不在网站上留一份过期的 PDF
        print(f"\n[build_book] 构建失败（退出码 {code}）。", file=sys.stderr)
    if code == 0 and args.builder in ("html", "pdflatex"):
        publish_pdf(build_dir, root)
    return code


def run(argv: list[str] | None = None) -> int:
    """main 加上 Ctrl-C 的处理：被打断时说一句，不打印回溯。上次成功的标记在执行前已经删掉，
    所以下一次构建会从全新的 Sphinx 环境开始；执行缓存若被写坏，下一次构建会发现并重建。"""
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("\n[build_book] 构建被打断（Ctrl-C）。下一次构建会从全新的 Sphinx 环境开始。", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(run())
