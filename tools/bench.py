"""构建基准（不是测试）：在仓库的一份临时副本里计时，不动你的 _build。

测这些数，然后给出比值与目标：
  冷构建        没有 _build、没有执行缓存，从零构建网站（tools/build_book.py）
  空操作重建    什么都不改，再构建一次
  保存→上盘：改文字    在 make serve 正在运行时给一页加一句话（不动代码），
                        从保存文件到重建好的页面（含这句话）写到磁盘上的时间
  保存→上盘：改代码单元  同样，改动一页的一个代码单元（该页重新执行），直到新页面写到磁盘上
  下限          所有页面的所有代码单元在一个 Python 进程里依次运行（含启动和 import torch）
目标：冷构建 ≤ 4 × 下限；空操作 ≤ 0.1 × 冷构建；改文字 ≤ 0.1 × 冷构建；改一个代码单元 ≤ 0.25 × 冷构建。
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
COPY = ["book", "src", "tools", "_config.yml", "_toc.yml", "requirements.txt", "requirements.lock",
        "pyproject.toml"]

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


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        root = Path(tmp)
        for name in COPY:
            src = REPO / name
            if src.is_dir():
                shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__", "_build"))
            else:
                shutil.copy(src, root / name)
        build = [sys.executable, str(root / "tools" / "build_book.py"), "--root", str(root)]
        pages = toc_pages(root, root / "_toc.yml")
        code_pages = [p for p in pages if "```{code-cell}" in p.read_text(encoding="utf-8")]
        target = code_pages[len(code_pages) // 2]
        html = root / "_build" / "html" / target.relative_to(root).with_suffix(".html")

        results: dict[str, float] = {}
        load_before = os.getloadavg()[0]
        print("测量中（冷构建要执行所有页面，需要一两分钟）…", flush=True)
        results["冷构建"] = timed(build, root)
        results["空操作重建"] = timed(build, root)

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

        env_code = (f"import sys; sys.path[:0] = [{str(root / 'src')!r}, {str(root / 'tools')!r}]\n"
                    + FLOOR_SCRIPT)
        results["下限"] = timed([sys.executable, "-c", env_code, *map(str, code_pages)], root)
        load_after = os.getloadavg()[0]

    width = max(len(k) for k in results)
    print(f"\n页面数 {len(pages)}（其中 {len(code_pages)} 页有代码）；改动的页面：{target.name}；"
          f"CPU {os.cpu_count()} 个，1 分钟平均负载 {load_before:.1f} → {load_after:.1f}")
    for name, seconds in results.items():
        print(f"  {name:<{width}}  {seconds:7.1f} s")
    cold, floor = results["冷构建"], results["下限"]
    checks = [
        ("冷构建 / 下限", cold / floor, 4.0),
        ("空操作 / 冷构建", results["空操作重建"] / cold, 0.10),
        ("改文字 / 冷构建", results["保存→上盘：改文字"] / cold, 0.10),
        ("改代码单元 / 冷构建", results["保存→上盘：改代码单元"] / cold, 0.25),
    ]
    print()
    for label, ratio, goal in checks:
        verdict = ("  达标" if ratio <= goal else "  未达标") + f"（目标 ≤ {goal}）"
        print(f"  {label:<12} {ratio:6.2f}{verdict}")


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
