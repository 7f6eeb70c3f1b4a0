"""构建基准（不是测试）：在仓库的一份临时副本里计时，不动你的 _build。

测五个数，然后给出比值与目标：
  冷构建      没有 _build、没有执行缓存，从零构建网站
  空操作重建  什么都不改，再构建一次
  改文字      给一页加一句话（不动代码）后重建
  改代码单元  改动一页的一个代码单元后重建（该页重新执行）
  下限        所有页面的所有代码单元在一个 Python 进程里依次运行（含启动和 import torch）
目标：冷构建 ≤ 4 × 下限；空操作 ≤ 0.1 × 冷构建；改一个代码单元 ≤ 0.35 × 冷构建。
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from build_book import toc_pages  # tools/ 在 sys.path 上：与构建脚本读目录的方式相同

REPO = Path(__file__).resolve().parent.parent
COPY = ["book", "src", "tools", "_config.yml", "_toc.yml", "requirements.txt", "pyproject.toml"]

FLOOR_SCRIPT = r'''
import os, sys
from pathlib import Path
from IPython.core.interactiveshell import InteractiveShell
from myst_nb.core.read import read_myst_markdown_notebook

shell = InteractiveShell.instance()
for page in sys.argv[1:]:
    path = Path(page)
    nb = read_myst_markdown_notebook(path.read_text(encoding="utf-8"))
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

        results: dict[str, float] = {}
        print("测量中（冷构建要执行所有页面，需要一两分钟）…", flush=True)
        results["冷构建"] = timed(build, root)
        results["空操作重建"] = timed(build, root)

        text = target.read_text(encoding="utf-8")
        target.write_text(text + "\n\n（基准测试追加的一句话。）\n", encoding="utf-8")
        results["改文字"] = timed(build, root)

        text = target.read_text(encoding="utf-8")
        last_cell = text.rindex("```{code-cell}")
        close = text.index("\n```", last_cell + 3)
        target.write_text(text[:close] + "\n# 基准测试改动的一行" + text[close:], encoding="utf-8")
        results["改代码单元"] = timed(build, root)

        env_code = f"import sys; sys.path.insert(0, {str(root / 'src')!r})\n" + FLOOR_SCRIPT
        results["下限"] = timed([sys.executable, "-c", env_code, *map(str, code_pages)], root)

    width = max(len(k) for k in results)
    print(f"\n页面数 {len(pages)}（其中 {len(code_pages)} 页有代码）；改动的页面：{target.name}")
    for name, seconds in results.items():
        print(f"  {name:<{width}}  {seconds:7.1f} s")
    cold, floor = results["冷构建"], results["下限"]
    checks = [
        ("冷构建 / 下限", cold / floor, 4.0),
        ("空操作 / 冷构建", results["空操作重建"] / cold, 0.10),
        ("改代码单元 / 冷构建", results["改代码单元"] / cold, 0.35),
        ("改文字 / 冷构建", results["改文字"] / cold, None),
    ]
    print()
    for label, ratio, goal in checks:
        verdict = "" if goal is None else ("  达标" if ratio <= goal else "  未达标") + f"（目标 ≤ {goal}）"
        print(f"  {label:<12} {ratio:6.2f}{verdict}")


if __name__ == "__main__":
    main()
