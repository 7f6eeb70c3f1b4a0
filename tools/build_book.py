"""构建本书（HTML 或 PDF），并保证构建本身就是一次测试。

用法：python tools/build_book.py [--root DIR] [--builder html|pdflatex] [--fresh]

它在 `jupyter-book build` 之外多做三件事：

1. **不发布过期输出**。jupyter-cache 只按代码单元的源码、元数据和 kernelspec 判断要不要重跑，
   改了 `src/minigpt` 里的函数，页面却不会重跑。这里对 `src/minigpt/**/*.py`、`requirements.txt`
   和 `pyproject.toml` 求一个摘要（执行键），与上次构建时记下的不同，就清空执行缓存。
2. **增量构建不掩盖旧错误**。Sphinx 不会为没有重读的页面重发警告；上一次构建没有成功
   （或要求 `--fresh`）时，就用 `--all` 从全新的 Sphinx 环境构建。
3. **警告即失败**：总是带 `-W -n --keep-going`。内核启动前先预热 matplotlib 的字体缓存，
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

REPO = Path(__file__).resolve().parent.parent
# 执行键覆盖的文件：页面 import 的包、以及决定各库版本的文件
KEY_GLOBS = ("src/minigpt/**/*.py", "requirements.txt", "pyproject.toml")


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


def invalidate_stale_cache(build_dir: Path, key: str) -> bool:
    """执行键变了就删掉 jupyter-cache，返回是否删除。"""
    key_file = build_dir / ".exec-key"
    cache = build_dir / ".jupyter_cache"
    old = key_file.read_text().strip() if key_file.exists() else None
    if old == key:
        return False
    if cache.exists():
        shutil.rmtree(cache)
    build_dir.mkdir(parents=True, exist_ok=True)
    key_file.write_text(key + "\n")
    return old is not None


def build_env(root: Path) -> dict[str, str]:
    """构建（和内核）所用的环境变量。"""
    env = dict(os.environ)
    # 让内核 import 的是 root 下的 minigpt（在临时副本里构建时也是如此）
    src = str(root / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("MPLCONFIGDIR", str(root / "_build" / ".mplconfig"))
    env["PYTHONHASHSEED"] = "0"
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # ipykernel 调试器的提示会写到 stderr
    return env


def warm_up(env: dict[str, str]) -> None:
    """预先建立 matplotlib 字体缓存，免得第一次 import 的提示写进页面的 stderr。"""
    Path(env["MPLCONFIGDIR"]).mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-c", "import matplotlib.pyplot"],
        env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=REPO, help="书的根目录（含 _config.yml）")
    parser.add_argument("--builder", default="html", choices=["html", "pdflatex", "latex"])
    parser.add_argument("--fresh", action="store_true", help="从全新的 Sphinx 环境构建")
    args = parser.parse_args(argv)

    root = args.root.resolve()
    build_dir = root / "_build"
    env = build_env(root)
    if invalidate_stale_cache(build_dir, execution_key(root)):
        print("[build_book] src/minigpt 或依赖有改动：已清空执行缓存，所有页面将重新执行。", flush=True)
    warm_up(env)

    ok_marker = build_dir / f".last-{args.builder}-ok"
    fresh = args.fresh or not ok_marker.exists()
    ok_marker.unlink(missing_ok=True)

    cmd = [
        str(Path(sys.executable).parent / "jupyter-book"), "build", str(root),
        "-W", "-n", "--keep-going", "--builder", args.builder,
    ]
    if fresh:
        cmd.append("--all")
    print("[build_book] jupyter-book " + " ".join(cmd[1:]), flush=True)
    code = subprocess.run(cmd, cwd=root, env=env).returncode
    if code == 0:
        ok_marker.touch()
    else:
        reports = sorted((build_dir / "html" / "reports").glob("**/*.err.log"))
        for report in reports:
            print(f"\n[build_book] 执行报告 {report.relative_to(root)}:\n" + report.read_text()[-3000:])
        print(f"\n[build_book] 构建失败（退出码 {code}）。", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
