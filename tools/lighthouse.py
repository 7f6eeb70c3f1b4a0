"""make lighthouse（make bench 也跑它）：读者那一端的基准，不是测试。

在本机像静态主机那样提供已构建的网站（tools/site_weight.py 的服务器：文本 gzip、静态文件可缓存），用 npm 锁里的
Lighthouse（package-lock.json，`npm ci` 装进 node_modules/）和 Debian 的 Chromium（CHROME_PATH）以默认的移动端
配置（模拟的慢速 4G 与降速的 CPU）测几页，打印四项得分、最大内容绘制与总阻塞时间，以及每页传输的每个文件。

用法：
    python tools/lighthouse.py [--site _build/html] [--runs N] [--json FILE] [--reports 目录] [页面 ...]

目标：性能 ≥ 95、无障碍 100、最佳实践 ≥ 95、SEO ≥ 95；没达到时以 1 退出。`--runs N` 每页测 N 次，取性能分的
中位数那一次（同一台机器上的别的进程会拖慢 Lighthouse 模拟的 CPU：报告时写明负载，本脚本打印 1 分钟平均负载）。
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from site_weight import KB, GzipSite, chromium_args  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LIGHTHOUSE = REPO / "node_modules" / ".bin" / "lighthouse"
# 首页、公式最多的一页、§7（交互图与训练好的模型）、一页英文版
PAGES = ["book/index.html", "book/s2_scaled_dot_product.html", "book/s7_trained_heads.html",
         "en/book/s2_scaled_dot_product.html"]
CATEGORIES = {"performance": ("性能", 95), "accessibility": ("无障碍", 100),
              "best-practices": ("最佳实践", 95), "seo": ("SEO", 95)}


def run_lighthouse(url: str, out: Path) -> dict:
    """对一个网址运行一次 Lighthouse（移动端，默认节流），返回它的 JSON 报告。"""
    chrome = shutil.which("chromium") or "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="lighthouse-profile-")
    flags = " ".join(["--headless=new", *chromium_args(), f"--user-data-dir={profile}"])
    cmd = [str(LIGHTHOUSE), url, "--output=json", f"--output-path={out}", "--quiet",
           f"--only-categories={','.join(CATEGORIES)}", f"--chrome-flags={flags}"]
    try:
        proc = subprocess.run(cmd, env={**os.environ, "CHROME_PATH": chrome}, capture_output=True, text=True,
                              timeout=600)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if proc.returncode != 0 or not out.is_file():
        raise SystemExit(f"[lighthouse] {url} 失败（退出码 {proc.returncode}）：\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text(encoding="utf-8"))


def summary(report: dict) -> dict:
    """一份报告里的得分（0–100）、最大内容绘制、总阻塞时间与传输的文件 [(网址, 字节, 类型)]。"""
    audits = report["audits"]
    files = [(item["url"], int(item.get("transferSize") or 0), item.get("resourceType", ""))
             for item in audits["network-requests"]["details"]["items"]]
    return {"scores": {key: round(100 * (report["categories"][key]["score"] or 0)) for key in CATEGORIES},
            "lcp_s": audits["largest-contentful-paint"]["numericValue"] / 1000,
            "tbt_s": audits["total-blocking-time"]["numericValue"] / 1000,
            "files": files}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=REPO / "_build" / "html")
    parser.add_argument("--runs", type=int, default=1, help="每页测几次（取性能分居中的一次）")
    parser.add_argument("--json", type=Path, default=None, help="把每页的得分与传输的文件写成 JSON")
    parser.add_argument("--reports", type=Path, default=None,
                        help="把 Lighthouse 每次的完整 JSON 报告存进这个目录（查哪里扣了分：最大内容绘制的元素、阻塞渲染的资源……）")
    parser.add_argument("pages", nargs="*", help=f"相对网站根目录的页面，默认 {' '.join(PAGES)}")
    args = parser.parse_args(argv)
    if not LIGHTHOUSE.is_file():
        raise SystemExit("[lighthouse] 没有 node_modules/.bin/lighthouse：先运行 make lighthouse（它会 npm ci）")
    site = args.site.resolve()
    pages = args.pages or PAGES
    missing = [p for p in pages if not (site / p).is_file()]
    if missing:
        raise SystemExit(f"[lighthouse] 网站里没有 {missing}：先 make html")
    print(f"[lighthouse] 1 分钟平均负载 {os.getloadavg()[0]:.1f}（{os.cpu_count()} 个 CPU）", flush=True)
    results, failed = {}, []
    with GzipSite(site) as base, tempfile.TemporaryDirectory(prefix="lighthouse-") as tmp:
        reports = args.reports or Path(tmp)
        reports.mkdir(parents=True, exist_ok=True)
        for page in pages:
            stem = page.removesuffix(".html").replace("/", "-")
            runs = [summary(run_lighthouse(base + page, reports / f"{stem}-{i}.json")) for i in range(args.runs)]
            runs.sort(key=lambda r: r["scores"]["performance"])
            results[page] = r = runs[len(runs) // 2]
            total = sum(size for _, size, _ in r["files"])
            scores = "  ".join(f"{CATEGORIES[k][0]} {v}" for k, v in r["scores"].items())
            print(f"\n{page}\n  {scores}  最大内容绘制 {r['lcp_s']:.1f} s  总阻塞 {r['tbt_s']:.2f} s  "
                  f"传输 {total / KB:.1f} KB（{len(r['files'])} 个文件）", flush=True)
            for url, size, kind in sorted(r["files"], key=lambda f: -f[1]):
                print(f"    {size / KB:8.1f} KB  {kind:<11} {url.removeprefix(base)}")
            failed += [f"{page}: {CATEGORIES[k][0]} {v} < {CATEGORIES[k][1]}"
                       for k, v in r["scores"].items() if v < CATEGORIES[k][1]]
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    print()
    for line in failed:
        print(f"[lighthouse] 未达目标：{line}")
    print(f"[lighthouse] {'全部达到目标' if not failed else f'{len(failed)} 项未达目标'}"
          f"（1 分钟平均负载 {os.getloadavg()[0]:.1f}）")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
