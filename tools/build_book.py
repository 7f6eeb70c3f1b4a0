"""构建本书（HTML 或 PDF），并保证构建本身就是一次测试。

用法：python tools/build_book.py [--root DIR] [--builder html|pdflatex] [--fresh] [--out DIR]

它在 `jupyter-book build` 之外多做几件事：

1. **不发布过期输出**。jupyter-cache 只按代码单元的源码、元数据和 kernelspec 判断要不要重跑，
   改了 `src/minigpt` 里的函数，页面却不会重跑。这里对 `src/minigpt/**/*.py`、页面读的数据
   `book/data/*.json`、`requirements.txt`、`requirements.lock` 和 `pyproject.toml` 求一个摘要（执行键），与上次构建时记下的不同，就清空执行缓存，并从全新的
   Sphinx 环境构建（页面文本没变时 Sphinx 不会重读它，也就不会重新执行它）。
2. **增量构建不掩盖旧错误**。Sphinx 不会为没有重读的页面重发警告；上一次构建没有成功
   （或要求 `--fresh`）时，就用 `--all` 从全新的 Sphinx 环境构建。
3. **并行预执行**（`tools/pre_execute.py`）。Jupyter Book 1.x 一页一页地执行笔记本；这里先按本机的 CPU 数开
   几个工作进程，最长的页面先跑，每页一个全新的内核，把执行缓存里缺的页面跑好（与 myst-nb 相同的读法、超时
   与缓存键），Sphinx 随后直接取用缓存。预执行失败的页面不入缓存，交给 Sphinx 重新执行并照常报错。用到的
   myst-nb / jupyter-cache 内部接口都在 `tools/nb_internals.py` 里，版本不是验证过的版本时构建停下并指名是哪个包。
   执行缓存是可丢弃的：它损坏时（例如数据库文件被写坏）说一句、删掉重建，构建照常完成。
4. **空操作什么都不做**。上一次同一构建器成功时记下书的全部输入的指纹（`input_fingerprint`）；这次一字节
   都没变、输出也还在，就不启动 Sphinx，不读、不写任何文件。PDF 构建在 Sphinx 写好 .tex 之后，.tex 与图片
   都没变时也不启动 XeLaTeX。
5. **PDF**（`--builder pdflatex`）：Sphinx 的 latex 构建器写 .tex，再由 XeLaTeX（`make all-pdf`）排版；与 HTML
   共用 `_build/.doctrees` 和执行缓存（页面不会再执行一遍），输出 `_build/latex/book.pdf`，成功后复制到网站根目录
   （文件名是 _config.yml 的 `book_pdf_on_site`，首页的“下载 PDF”链接）。任何构建失败都让所有构建器的
   “上次成功”标记作废（见 main）。
6. **Ctrl-C 随时停得下来**（`tools/children.py`）：SIGINT 或 SIGTERM 在预执行、Sphinx 或 XeLaTeX 的任何时刻
   到来，构建都在几秒内结束所有工作进程、内核与子进程，说一句，以 130（SIGINT）或 143（SIGTERM）退出；
   被打断的工作进程不会被当成页面失败。下一次构建从全新的 Sphinx 环境开始。
7. **警告即失败**：总是带 `-W -n --keep-going`。内核启动前先预热 matplotlib 的字体缓存，
   否则新机器上第一次 `import matplotlib` 往 stderr 写的提示会被当成错误。
8. **学生版**（`--student`）：不带参考答案的网站，给不想让学生提前看到答案的老师。配置与 `_config.yml` 相同，
   只多一项 sphinx-exercise 的 `hide_solutions: true`（写成 `<输出>/_build/student-config.yml` 交给
   `jupyter-book build --config`；去掉解答的是本地扩展 book/_ext/book_exercises.py）。默认输出到
   `_build/student/_build/html`；执行缓存先从本书的 `_build/`（或 `--cache-from` 给的目录）复制（执行键相同时），
   页面不必再执行一遍。英文的学生版（``--lang en --student``）同样生成英文的书，以 ``hide_solutions`` 构建它
   （执行缓存默认取自英文版的 ``_build/en/_build/``），网站同步到学生版网站的 ``en/`` 下，和整本书一样。
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import children  # noqa: E402  子进程与信号：Ctrl-C 在任何阶段都停得下来
import nb_internals  # noqa: E402  myst-nb / jupyter-cache 的内部接口只经由它
from pre_execute import cpu_workers, pre_execute, read_tasks  # noqa: E402,F401  并行预执行（cpu_workers 供测试核对）

REPO = Path(__file__).resolve().parent.parent
# 执行键覆盖的文件：页面 import 的包、以及决定各库版本的文件
KEY_GLOBS = ("src/minigpt/**/*.py", "book/data/*.json", "requirements.txt", "requirements.lock", "pyproject.toml")


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
    # 训练结果（minigpt.seeds）：英文版构建时 build_english 把它指向中文版的这个目录，训练一次，两版共用
    env.setdefault("MINIGPT_TRAINED", str(root / "_build" / ".trained"))
    env["PYTHONHASHSEED"] = "0"
    # 每个内核一个线程：预执行时几个内核同时跑，各占一个 CPU，不互相抢（本书的模型都小，多线程只多出等待）；
    # 执行的路径（预执行、Sphinx 自己执行、make serve）和 CPU 个数都不影响结果的最后几位
    env["OMP_NUM_THREADS"] = "1"
    # 图（SVG/PDF）里的日期固定，输出可复现；Sphinx 页脚的版权年份也取自它：2026-01-01
    env.setdefault("SOURCE_DATE_EPOCH", "1767225600")
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # ipykernel 调试器的提示会写到 stderr
    # 网站的公式由 Node 里的 KaTeX 排版（book/_ext/book_math.py 先在书的目录及其上级、再在 NODE_PATH 里找它）：
    # 在别处构建的书（测试里的小书）也用本仓库 make setup 装的那一份
    modules = str(REPO / "node_modules")
    env["NODE_PATH"] = modules + (os.pathsep + env["NODE_PATH"] if env.get("NODE_PATH") else "")
    return env


def warm_up(env: dict[str, str]):
    """预先建立 matplotlib 字体缓存，免得第一次 import 的提示写进页面的 stderr。

    只在缓存还没有时做（冷构建），而且在后台做：返回一个函数，第一个内核开始执行页面之前调用它，
    等字体缓存建好（这一秒多与检查执行缓存、读页面同时进行，那时另一个 CPU 正闲着）。"""
    config_dir = Path(env["MPLCONFIGDIR"])
    if list(config_dir.glob("fontlist-*.json")):  # 缓存已经建好
        return lambda: None
    config_dir.mkdir(parents=True, exist_ok=True)
    proc = children.popen([sys.executable, "-c", "import matplotlib.pyplot"], env=env,
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait() -> None:
        if proc.wait() != 0:
            raise subprocess.CalledProcessError(proc.returncode, proc.args)

    return wait


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
    if target.is_file() and (target.stat().st_size, target.stat().st_mtime_ns) == (
            pdf.stat().st_size, pdf.stat().st_mtime_ns):
        return target  # 已是同一份：不重写
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


# 构建输入的指纹不看这些目录：输出、版本库与虚拟环境（以 . 开头）、测试、发行包、打包的中间产物
NOT_INPUTS = {"_build", "tests", "dist", "build", "node_modules", "__pycache__"}


def input_fingerprint(root: Path, builder: str, extra: list[str]) -> str:
    """书的全部输入（_config.yml、_toc.yml、book/、src/、tools/、依赖声明……每个文件的路径与内容）加上构建器
    和命令行的摘要。与上次成功构建记下的一样，就说明这次构建不会有任何不同。"""
    digest = hashlib.sha256(f"{builder}\0{' '.join(extra)}\0{sys.executable}\0".encode())
    for dirpath, dirnames, filenames in os.walk(root):
        # setuptools 打包时写的 build/、*.egg-info 是产物，不是输入（测试和 make dist 会在仓库里打包）
        dirnames[:] = sorted(d for d in dirnames if d not in NOT_INPUTS and not d.startswith(".")
                             and not d.endswith(".egg-info")
                             # 英文的译文只是英文版的输入（英文版的书由它们生成，有自己的指纹）
                             and not (Path(dirpath) == root / "locale" and d == "en"))
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo", ".mo")):  # .mo 是 Sphinx 构建时从 .po 编译出来的（.po 才是输入）
                continue
            path = Path(dirpath) / name
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            try:
                digest.update(path.read_bytes())
            except OSError:  # 断开的链接之类：按名字算
                pass
            digest.update(b"\0")
    return digest.hexdigest()


def output_exists(build_dir: Path, builder: str) -> bool:
    if builder == "html":
        return (build_dir / "html" / "index.html").is_file()
    if builder == "pdflatex":
        return (build_dir / PDF_BUILT).is_file()
    return (build_dir / "latex").is_dir()


def latex_sources_digest(latex_dir: Path) -> str:
    """XeLaTeX 的输入：.tex、样式与图片（不含它自己的产物）。"""
    digest = hashlib.sha256()
    for path in sorted(latex_dir.iterdir()):
        if path.is_file() and path.suffix in {".tex", ".sty", ".cls", ".png", ".jpg", ".svg", ".pdf"} \
                and path.name != PDF_BUILT.name:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


STUDENT_CONFIG = "student-config.yml"


def student_pdf_ready(build_dir: Path) -> bool:
    """学生版自己的 PDF 建好了（上一次 PDF 构建成功）：学生版网站才链接“整本书 PDF”。"""
    return (build_dir / PDF_BUILT).is_file() and (build_dir / ".last-pdflatex-ok").exists()


def write_student_config(root: Path, build_dir: Path, offer_pdf: bool = True) -> Path:
    """学生版的配置文件：root/_config.yml 加上 sphinx.config.hide_solutions = true；offer_pdf 为假时再加
    book_pdf_offered = false（下载菜单没有“整本书 PDF”，正文的 {book-pdf} 只印文字：学生版网站里没有 PDF）。"""
    import yaml

    config = yaml_load(root / "_config.yml")
    sphinx = config.setdefault("sphinx", {})
    sphinx.setdefault("config", {})["hide_solutions"] = True
    if not offer_pdf:
        sphinx["config"]["book_pdf_offered"] = False
    # Jupyter Book 按配置文件所在的文件夹解析本地扩展的路径（其余路径按书的根目录）：写成绝对路径
    sphinx["local_extensions"] = {name: str((root / path).resolve())
                                  for name, path in (sphinx.get("local_extensions") or {}).items()}
    build_dir.mkdir(parents=True, exist_ok=True)
    target = build_dir / STUDENT_CONFIG
    text = "# tools/build_book.py --student 生成：_config.yml 加上 hide_solutions（不要手改）\n"
    text += yaml.safe_dump(config, allow_unicode=True, sort_keys=False)
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")
    return target


def seed_execution_cache(source_build: Path, build_dir: Path, key: str) -> bool:
    """build_dir 还没有执行缓存、而 source_build 有一份执行键相同的：复制过来（页面不必再执行）。"""
    cache, source = build_dir / ".jupyter_cache", source_build / ".jupyter_cache"
    key_file = source_build / ".exec-key"
    if cache.exists() or not source.is_dir() or not key_file.is_file() or key_file.read_text().strip() != key:
        return False
    build_dir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, cache)
    (build_dir / ".exec-key").write_text(key + "\n")
    return True


def run_child(cmd: list[str], cwd: Path, env: dict[str, str]) -> int:
    """在自己的会话里运行一个子进程并等它结束（被打断时由 run() 统一结束它和它的后代）。"""
    proc = children.popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL)
    return proc.wait()


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
    parser.add_argument("--student", action="store_true",
                        help="学生版网站：不带参考答案（sphinx-exercise 的 hide_solutions），默认输出到 _build/student/")
    parser.add_argument("--cache-from", type=Path, default=None, metavar="BUILD_DIR",
                        help="学生版的执行缓存从这个 _build 目录复制（默认是书的 _build/，英文版是 _build/en/_build/；"
                             "执行键不同时不复制）")
    parser.add_argument("--lang", default="zh", choices=["zh", "en"],
                        help="en：英文版（tools/i18n.py 从中文源文件和 locale/en 的译文生成到 _build/en/，在那里构建，"
                             "网站复制到 _build/html/en/）")
    parser.add_argument("--timings", type=Path, default=None,
                        help="把这次构建的计时（每页的内核启动与执行单元、Sphinx、XeLaTeX）写成 JSON（make bench 用）")
    args = parser.parse_args(argv)

    try:
        nb_internals.check_versions()
    except nb_internals.UnsupportedVersions as exc:
        print(f"[build_book] {exc}", file=sys.stderr)
        return 2
    if args.lang == "en":
        return build_english(args)
    root = args.root.resolve()
    out = (args.out or (root / "_build" / "student" if args.student else root)).resolve()
    build_dir = out / "_build"
    timings: dict = {"pages": [], "phases": {}}
    clock = time.perf_counter()
    env = build_env(root)
    source_build = (args.cache_from or root / "_build").resolve()
    if args.student and seed_execution_cache(source_build, build_dir, execution_key(root)):
        print(f"[build_book] 学生版：执行缓存取自 {source_build}（执行键相同）。", flush=True)
    key_change = invalidate_stale_cache(build_dir, execution_key(root))
    if key_change == "changed":
        print("[build_book] src/minigpt 或依赖有改动：已清空执行缓存，所有页面将重新执行。", flush=True)
    ok_marker = build_dir / f".last-{args.builder}-ok"
    toc = (args.toc or root / "_toc.yml").resolve()
    extra = [str(toc), str(out)] + (["--student"] if args.student else [])
    # 学生版网站只在自己的 PDF 已经建好时链接它（make html、make dist 都先建 PDF 再建网站）：否则链接是死的。
    # PDF 构建本身不看这一项（LaTeX 里本来就只印文字），两个构建器的配置于是在有 TeX 的机器上一致
    offer_pdf = not args.student or args.builder != "html" or student_pdf_ready(build_dir)
    if not offer_pdf:
        extra.append("--no-book-pdf")
    fingerprint = input_fingerprint(root, args.builder, extra)
    # 空操作：上次这个构建器成功之后，没有任何输入变过、输出还在。什么都不读、什么都不写
    if (not args.fresh and key_change is None and output_exists(build_dir, args.builder)
            and ok_marker.is_file() and ok_marker.read_text().strip() == fingerprint):
        print(f"[build_book] 没有改动（上次 {args.builder} 构建成功之后，书的输入一个字节都没变）：不需要重建。",
              flush=True)
        if args.builder in ("html", "pdflatex"):
            publish_pdf(build_dir, root)
        return 0

    fonts_ready = warm_up(env)
    os.environ.update(env)  # 预执行的内核与 Sphinx 的内核用同样的环境
    cache_rebuilt = ensure_cache_usable(build_dir / ".jupyter_cache")
    timings["phases"]["准备"] = time.perf_counter() - clock
    pages = toc_pages(root, toc)
    config = yaml_load(root / "_config.yml")
    clock = time.perf_counter()
    page_times = pre_execute(pages, build_dir / ".jupyter_cache",
                             int(config.get("execute", {}).get("timeout", 30)), env, args.workers,
                             history_file=build_dir / ".page-seconds.json", before_first_page=fonts_ready,
                             tasks=read_tasks(config, root))
    fonts_ready()  # 没有预执行时（只有一页、或只有一个 CPU），Sphinx 执行页面之前
    timings["phases"]["预执行"] = time.perf_counter() - clock
    timings["pages"] = [{"page": Path(t.page).name, "seconds": t.seconds, "kernel_seconds": t.kernel_seconds,
                         "cell_seconds": t.cell_seconds, "ok": t.ok} for t in page_times]

    # 页面文本没变时 Sphinx 不会重读它，也就不会重新执行：缓存清空之后必须从全新环境构建。
    # 上一次构建（任何构建器）失败时所有标记都被删掉：Sphinx 不会为没有重读的页面重发警告，也要从全新环境构建
    fresh = (args.fresh or not any(build_dir.glob(".last-*-ok")) or key_change is not None
             or cache_rebuilt)
    ok_marker.unlink(missing_ok=True)

    sphinx_builder = "latex" if args.builder == "pdflatex" else args.builder
    cmd = [
        str(Path(sys.executable).parent / "jupyter-book"), "build", str(root),
        "-W", "-n", "--keep-going", "--builder", sphinx_builder,
    ]
    if fresh:
        cmd.append("--all")
    if args.out or args.student:
        cmd += ["--path-output", str(out)]
    if args.toc:
        cmd += ["--toc", str(args.toc.resolve())]
    if args.student:
        cmd += ["--config", str(write_student_config(root, build_dir, offer_pdf))]
    print("[build_book] jupyter-book " + " ".join(cmd[1:]), flush=True)
    clock = time.perf_counter()
    code = run_child(cmd, root, env)
    timings["phases"]["Sphinx"] = time.perf_counter() - clock
    if code == 0 and args.builder == "pdflatex":
        code = build_pdf(build_dir, env, timings)
    if code == 0:
        ok_marker.write_text(fingerprint + "\n")
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
    if args.timings:
        args.timings.write_text(json.dumps(timings, ensure_ascii=False, indent=1), encoding="utf-8")
    return code


def build_english(args) -> int:
    """英文版：生成英文的书（只写变了的文件），用同样的步骤构建它，再把网站同步到中文网站的 en/ 下。"""
    import i18n

    if args.toc or (args.cache_from and not args.student):
        print("[build_book] --lang en 不支持 --toc；--cache-from 只和 --student 一起用（英文版的目录与执行缓存是它自己的）",
              file=sys.stderr)
        return 2
    root = args.root.resolve()
    out = (args.out or (root / "_build" / "student" if args.student else root)).resolve()
    en_root = out / "_build" / i18n.LANG
    _written, missing = i18n.build_root(en_root, root)
    if missing:
        print(f"[build_book] 英文版：{len(missing)} 条消息还没有英文，那里保留中文（python tools/i18n.py check 列出全部）：",
              flush=True)
        for line in missing[:10]:
            print("   ", line, flush=True)
    # 同样的代码、同样的种子，参数逐位相同：英文版直接读中文版训练好的（minigpt.seeds）
    os.environ.setdefault("MINIGPT_TRAINED", str(out / "_build" / ".trained"))
    rest = ["--builder", args.builder] + (["--fresh"] if args.fresh else [])
    rest += (["--workers", str(args.workers)] if args.workers else [])
    rest += (["--timings", str(args.timings)] if args.timings else [])
    if args.student:
        # 学生版的英文网站：同样的英文书加上 hide_solutions；执行缓存取自英文版的构建（执行键相同时）
        cache = (args.cache_from or root / "_build" / i18n.LANG / "_build").resolve()
        rest += ["--student", "--out", str(en_root), "--cache-from", str(cache)]
    code = main(["--root", str(en_root), *rest])
    if code == 0 and args.builder in ("html", "pdflatex"):
        sync_tree(en_root / "_build" / "html", out / "_build" / "html" / i18n.LANG, shared=out / "_build" / "html")
    return code


def sync_tree(source: Path, target: Path, shared: Path | None = None) -> int:
    """把 source 目录同步到 target：只写内容变了的文件，删掉 source 里已经没有的；返回写过的文件数。

    shared 是 target 所在的网站根目录（英文版 en/ 在中文网站里）：source 的 ``_static/`` 里与 shared 的
    ``_static/`` 里逐字节相同的文件（主题、KaTeX、交互图的库……）不再复制一份，页面改为引用网站根目录的那一份，
    两种语言一起发布时读者只下载一次。英文版自己的构建（source）不动，单独拿出来照样能用。"""
    if not source.is_dir():
        return 0
    common = shared_static(source, shared) if shared is not None else set()
    copied = 0
    wanted = set()
    for path in source.rglob("*"):
        rel = path.relative_to(source)
        if rel.as_posix() in common:
            continue
        wanted.add(rel)
        dest = target / rel
        if path.is_dir():
            continue  # 目录随其中的文件建立（只装着共用文件的目录在 target 里不出现）
        data = path.read_bytes()
        if common and path.suffix == ".html":
            data = use_shared_static(data, len(rel.parts) - 1, common)
        if dest.is_file() and dest.stat().st_size == len(data) and dest.read_bytes() == data:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        shutil.copystat(path, dest)
        copied += 1
    if target.is_dir():
        for path in sorted(target.rglob("*"), reverse=True):
            if path.relative_to(target) not in wanted:
                path.rmdir() if path.is_dir() else path.unlink()
    return copied


def shared_static(source: Path, shared: Path) -> set[str]:
    """source/_static 下与 shared/_static 下同一路径、逐字节相同的文件（相对 source 的路径）。"""
    common = set()
    for path in (source / "_static").rglob("*"):
        rel = path.relative_to(source)
        twin = shared / rel
        if path.is_file() and twin.is_file() and twin.stat().st_size == path.stat().st_size \
                and twin.read_bytes() == path.read_bytes():
            common.add(rel.as_posix())
    return common


STATIC_LINK = r"""(["'(])%s_static/([^"'?#)\s]+)"""


def use_shared_static(html: bytes, depth: int, common: set[str]) -> bytes:
    """页面（在 en/ 下第 depth 层目录里）对 common 里文件的引用改成网站根目录的那一份（多上一级目录）。"""
    up = "../" * depth

    def relink(match: re.Match) -> bytes:
        path = match.group(2).decode()
        if f"_static/{path}" not in common:
            return match.group(0)
        return match.group(1) + f"../{up}_static/{path}".encode()

    return re.sub((STATIC_LINK % re.escape(up)).encode(), relink, html)


def build_pdf(build_dir: Path, env: dict[str, str], timings: dict) -> int:
    """Sphinx 写好 .tex 之后运行 XeLaTeX（Sphinx 生成的 Makefile 的 all-pdf，与 jupyter-book 的做法相同）。

    .tex、样式和图片与上次成功生成 PDF 时一字不差、PDF 也还在时，不启动 XeLaTeX。"""
    latex_dir = build_dir / "latex"
    stamp = build_dir / ".last-pdf-sources"
    sources = latex_sources_digest(latex_dir)
    if (latex_dir / PDF_BUILT.name).is_file() and stamp.is_file() and stamp.read_text().strip() == sources:
        print("[build_book] .tex 与图片都没变：不运行 XeLaTeX。", flush=True)
        return 0
    stamp.unlink(missing_ok=True)
    env = dict(env)
    # TeX 出错时不停下来等终端输入（make pdf 在终端里跑时会卡住），第一个错误就结束
    env.setdefault("LATEXOPTS", "-interaction=nonstopmode -halt-on-error -file-line-error")
    print("[build_book] XeLaTeX：make all-pdf", flush=True)
    clock = time.perf_counter()
    code = run_child([os.environ.get("MAKE", "make"), "all-pdf"], latex_dir, env)
    timings["phases"]["XeLaTeX"] = time.perf_counter() - clock
    if code == 0:
        stamp.write_text(sources + "\n")
        print(f"[build_book] PDF：{latex_dir / PDF_BUILT.name}", flush=True)
    return code


def run(argv: list[str] | None = None) -> int:
    """main 加上信号处理：SIGINT（Ctrl-C）或 SIGTERM 在任何阶段都让构建在几秒内停下。

    结束所有工作进程、内核、Sphinx 与 XeLaTeX，作废“上次成功”的标记（下一次构建从全新的 Sphinx 环境开始；
    执行缓存若被写坏，下一次构建会发现并重建），说一句，以 128 + 信号编号退出（SIGINT 是 130）。"""
    children.install_handlers()
    try:
        return main(argv)
    except (children.Interrupted, KeyboardInterrupt) as exc:
        signum = exc.signum if isinstance(exc, children.Interrupted) else signal.SIGINT
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        children.stop_all()
        build_dir = _build_dir_of(argv)
        for marker in build_dir.glob(".last-*"):
            marker.unlink(missing_ok=True)
        name = signal.Signals(signum).name
        print(f"\n[build_book] 构建被打断（{name}{'，Ctrl-C' if signum == signal.SIGINT else ''}）："
              "已停止所有内核与子进程；下一次构建从全新的 Sphinx 环境开始。", file=sys.stderr, flush=True)
        return 128 + signum


def _build_dir_of(argv: list[str] | None) -> Path:
    """命令行里的 --out / --root 决定的 _build 目录（run() 收尾时用；不重复 main 的参数检查）。"""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--root", type=Path, default=REPO)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--student", action="store_true")
    known, _ = parser.parse_known_args(argv)
    default = known.root / "_build" / "student" if known.student else known.root
    return ((known.out or default).resolve()) / "_build"


if __name__ == "__main__":
    sys.exit(run())
