"""构建基准（不是测试）：在仓库的临时副本里计时，不动你的 _build。

同一次运行里测这些数，给出比值与目标：
  冷构建            没有 _build、没有执行缓存，从零构建网站（tools/build_book.py），并分解：每页的内核启动与
                    执行单元、预执行、Sphinx
  原样 jupyter-book 同一本书的另一份副本上直接运行 `jupyter-book build . -W -n`（一页一页地执行），同样从零开始
  下限              所有页面的所有代码单元在一个 Python 进程里依次运行（含启动和 import torch）
  空操作重建        什么都不改，再构建一次
  保存→上盘：改文字    在 make serve 正在运行时给一页加一句话（不动代码），
                        从保存文件到重建好的页面（含这句话）写到磁盘上的时间
  保存→上盘：改代码单元  同样，改动一页的一个代码单元（该页重新执行），直到新页面写到磁盘上
目标：原样 jupyter-book ≥ 1.8 × 冷构建；冷构建 ≤ 3 × 下限；空操作 ≤ 0.05 × 冷构建；改文字 ≤ 0.1 × 冷构建；
改一个代码单元 ≤ 0.25 × 冷构建。`--repeat N` 把冷构建、原样 jupyter-book 和下限各测 N 次（先热身一次），取中位数。
这台机器上的数受同时在跑的其他进程影响很大：报告时写明测量时的负载（本脚本打印 1 分钟平均负载）。
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from build_book import toc_pages  # tools/ 在 sys.path 上：与构建脚本读目录的方式相同

REPO = Path(__file__).resolve().parent.parent
# 构建读到的一切：书、包、构建脚本，以及打包 wheel 时要的 pyproject.toml、LICENSE（作业包与笔记本包里的 wheel）
COPY = ["book", "src", "tools", "locale", "_config.yml", "_toc.yml", "requirements.txt", "requirements.lock",
        "package.json", "package-lock.json",
        "pyproject.toml", "LICENSE", "CITATION.cff", "README.md"]

FLOOR_SCRIPT = r'''
import os, sys
from pathlib import Path
from IPython.core.interactiveshell import InteractiveShell
import nb_internals  # tools/：myst-nb 的读法只经由它

nbi = nb_internals.load()
shell = InteractiveShell.instance()
for page in sys.argv[1:]:
    path = Path(page)
    nb = nbi.read_notebook(path)
    os.chdir(path.parent)
    shell.reset(new_session=False)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        result = shell.run_cell(cell.source, silent=True)
        tags = cell.metadata.get("tags", [])
        if not result.success and "raises-exception" not in tags:
            raise SystemExit(f"{page}: 代码单元出错: {result.error_in_exec or result.error_before_exec}")
'''


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"命令失败: {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed


class Server:
    """在副本上运行 tools/serve.py（make serve），等它第一次构建完并开始提供页面。"""

    def __init__(self, root: Path):
        self.proc = subprocess.Popen(
            [sys.executable, str(root / "tools" / "serve.py"), "--root", str(root), "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # stop() 的 Ctrl-C 要到得了它
        )
        self.log: list[str] = []
        for line in self.proc.stdout:
            self.log.append(line)
            if m := re.search(r"Serving on (http://127\.0\.0\.1:\d+)", line):
                break
        else:
            sys.exit("make serve 没有启动：\n" + "".join(self.log[-40:]))
        # 之后的输出也要读走，否则管道写满，服务器在下一次重建时就卡住了
        threading.Thread(target=lambda: self.log.extend(self.proc.stdout), daemon=True).start()
        # “Serving on” 打印在服务器开始监听、开始监视文件之前：等它真正应答再开始改文件
        for _ in range(120):
            try:
                urllib.request.urlopen(m.group(1), timeout=5).close()
                break
            except OSError:
                time.sleep(0.5)
        time.sleep(1)

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)


def save_to_page(source: Path, page: Path, new_text: str, marker: str, timeout: float = 600) -> float:
    """写入 new_text（相当于编辑器保存），计时到 page 写到磁盘上、并且含有 marker 为止。"""
    start = time.perf_counter()
    source.write_text(new_text, encoding="utf-8")
    while time.perf_counter() - start < timeout:
        try:
            if marker in page.read_text(encoding="utf-8"):
                return time.perf_counter() - start
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    sys.exit(f"{timeout:.0f} 秒内 {page} 没有出现改动（{marker}）")


def copy_book(root: Path) -> None:
    for name in COPY:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__", "_build"))
        elif src.exists():
            shutil.copy(src, root / name)
    # 排公式的 KaTeX（make setup 按 package-lock.json 装的 node_modules）：副本直接用仓库里的这一份
    if (REPO / "node_modules").is_dir():
        (root / "node_modules").symlink_to(REPO / "node_modules", target_is_directory=True)


def cold_build(root: Path, timings: Path) -> float:
    shutil.rmtree(root / "_build", ignore_errors=True)
    return timed([sys.executable, str(root / "tools" / "build_book.py"), "--root", str(root),
                  "--timings", str(timings)], root)


def plain_build(root: Path) -> float:
    """原样的 jupyter-book：同样的环境变量（内核 import 这份副本的 minigpt），同样预热过字体缓存，没有别的。"""
    from build_book import build_env, warm_up

    shutil.rmtree(root / "_build", ignore_errors=True)
    env = build_env(root)
    warm_up(env)
    start = time.perf_counter()
    proc = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(root), "-W", "-n"],
                          cwd=root, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"原样 jupyter-book 构建失败:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def main(argv: list[str] | None = None) -> None:
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="冷构建、原样 jupyter-book、下限各测几次（取中位数）")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        root, plain = Path(tmp) / "ours", Path(tmp) / "plain"
        root.mkdir()
        plain.mkdir()
        copy_book(root)
        copy_book(plain)
        pages = toc_pages(root, root / "_toc.yml")
        code_pages = [p for p in pages if "```{code-cell}" in p.read_text(encoding="utf-8")]
        target = code_pages[len(code_pages) // 2]
        html = root / "_build" / "html" / target.relative_to(root).with_suffix(".html")
        env_code = (f"import sys; sys.path[:0] = [{str(root / 'src')!r}, {str(root / 'tools')!r}]\n"
                    + FLOOR_SCRIPT)
        floor_cmd = [sys.executable, "-c", env_code, *map(str, code_pages)]

        load_before = os.getloadavg()[0]
        print("测量中（每次冷构建都要执行所有页面，需要一两分钟）…", flush=True)
        timings_file = Path(tmp) / "timings.json"
        if args.repeat > 1:  # 热身：装载磁盘缓存、字体缓存
            timed(floor_cmd, root)
        runs: dict[str, list[float]] = {"冷构建": [], "原样 jupyter-book": [], "下限": []}
        breakdowns = []
        for _ in range(args.repeat):  # 三种交替着测：机器负载的起伏均匀地落在三者上
            runs["冷构建"].append(cold_build(root, timings_file))
            breakdowns.append(json.loads(timings_file.read_text(encoding="utf-8")))
            runs["原样 jupyter-book"].append(plain_build(plain))
            runs["下限"].append(timed(floor_cmd, root))
        results = {name: median(values) for name, values in runs.items()}
        breakdown = breakdowns[runs["冷构建"].index(sorted(runs["冷构建"])[(len(runs["冷构建"]) - 1) // 2])]
        results["空操作重建"] = timed([sys.executable, str(root / "tools" / "build_book.py"), "--root", str(root)], root)
        # 英文版：同一份副本上从零构建（英文的书由 tools/i18n.py 生成，执行缓存是它自己的），再测两种语言的空操作，
        # 以及改一条英文消息之后的重建
        build = [sys.executable, str(root / "tools" / "build_book.py"), "--root", str(root)]
        results["英文版冷构建"] = timed(build + ["--lang", "en"], root)
        results["两种语言的冷构建"] = results["冷构建"] + results["英文版冷构建"]
        results["两种语言的空操作"] = timed(build, root) + timed(build + ["--lang", "en"], root)
        results["改一条英文消息"] = edit_one_english_message(root, build + ["--lang", "en"])

        server = Server(root)
        try:
            text = target.read_text(encoding="utf-8")
            marker = "基准测试追加的一句话"
            results["保存→上盘：改文字"] = save_to_page(
                target, html, text + f"\n\n（{marker}。）\n", marker)

            text = target.read_text(encoding="utf-8")
            cell = _visible_code_cell(text)
            close = text.index("\n```", cell)
            marker = "基准测试改动的一行"
            results["保存→上盘：改代码单元"] = save_to_page(
                target, html, text[:close] + f"\n# {marker}" + text[close:], marker)
        finally:
            server.stop()
        load_after = os.getloadavg()[0]

    # 冷构建排先后用的每页秒数（tools/page_seconds.json，只影响快慢）：换成这次量到的
    if breakdown["pages"]:
        # 只记页面：页面之前的任务（pre_tasks）总是先派出，不按秒数排
        hints = {f"book/{p['page']}": round(p["seconds"], 1) for p in breakdown["pages"]
                 if p["page"].endswith(".md")}
        (REPO / "tools" / "page_seconds.json").write_text(
            json.dumps(hints, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")

    width = max(len(k) for k in results)
    print(f"\n页面数 {len(pages)}（其中 {len(code_pages)} 页有代码）；改动的页面：{target.name}；"
          f"CPU {os.cpu_count()} 个，1 分钟平均负载 {load_before:.1f} → {load_after:.1f}；每项测 {args.repeat} 次取中位数")
    for name, seconds in results.items():
        spread = ""
        if name in runs and len(runs[name]) > 1:
            spread = "  （" + "、".join(f"{v:.1f}" for v in runs[name]) + "）"
        print(f"  {name:<{width}}  {seconds:7.1f} s{spread}")

    print("\n冷构建的分解（中位数那一次）：")
    for phase, seconds in breakdown["phases"].items():
        print(f"  {phase:<8} {seconds:6.1f} s")
    if breakdown["pages"]:
        print(f"  {'页面（按开始的先后）':<22} {'内核启动':>8} {'执行单元':>8} {'合计':>8}")
        for page in breakdown["pages"]:
            print(f"  {page['page']:<26} {page['kernel_seconds']:8.1f} {page['cell_seconds']:8.1f} {page['seconds']:8.1f}")
        kernel = sum(p["kernel_seconds"] for p in breakdown["pages"])
        cells = sum(p["cell_seconds"] for p in breakdown["pages"])
        print(f"  {'合计（各工作进程相加）':<20} {kernel:8.1f} {cells:8.1f} {kernel + cells:8.1f}")

    cold, floor = results["冷构建"], results["下限"]
    checks = [
        ("原样 jupyter-book / 冷构建", results["原样 jupyter-book"] / cold, 1.8, ">="),
        ("冷构建 / 下限", cold / floor, 3.0, "<="),
        ("空操作 / 冷构建", results["空操作重建"] / cold, 0.05, "<="),
        ("两种语言：空操作 / 冷构建", results["两种语言的空操作"] / results["两种语言的冷构建"], 0.05, "<="),
        ("改文字 / 冷构建", results["保存→上盘：改文字"] / cold, 0.10, "<="),
        ("改代码单元 / 冷构建", results["保存→上盘：改代码单元"] / cold, 0.25, "<="),
    ]
    print()
    for label, ratio, goal, sense in checks:
        met = ratio >= goal if sense == ">=" else ratio <= goal
        print(f"  {label:<22} {ratio:6.2f}{'  达标' if met else '  未达标'}（目标 {'≥' if sense == '>=' else '≤'} {goal}）")


def edit_one_english_message(root: Path, build: list[str]) -> float:
    """改英文版一页里的一条消息（s5 的一段正文末尾加一个词），计时重建英文版，并列出重写了哪些页面。"""
    sys.path.insert(0, str(root / "tools"))
    import i18n

    po = i18n.locale_dir(root) / "book" / "s5_ffn.po"
    catalog = i18n.read_catalog(po)
    message = next(m for m in catalog if m.id and len(m.string) > 200)  # 一段正文（改标题会让每页的目录都变）
    message.string += " (bench)"
    i18n.write_pot(catalog, po)
    html = root / "_build" / "en" / "_build" / "html" / "book"
    before = {p.name: p.stat().st_mtime_ns for p in html.glob("*.html")}
    seconds = timed(build, root)
    changed = sorted(p.name for p in html.glob("*.html") if p.stat().st_mtime_ns != before.get(p.name))
    print(f"  改一条英文消息之后重写的页面：{', '.join(changed)}", flush=True)
    return seconds


def _visible_code_cell(text: str) -> int:
    """页面里最后一个既显示代码、也不被移除的代码单元的开头位置（改它，改动会出现在页面上）。"""
    starts = [m.start() for m in re.finditer(r"^```\{code-cell\}", text, re.M)]
    for start in reversed(starts):
        options = re.match(r"```\{code-cell\}[^\n]*\n((?::[^\n]*\n)*)", text[start:]).group(1)
        if not re.search(r"remove-(cell|input)|hide-input", options):
            return start
    sys.exit("这一页没有可见的代码单元")


if __name__ == "__main__":
    main()
