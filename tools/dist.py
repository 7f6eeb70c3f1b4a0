"""make dist：从一次干净的构建做出一版要发布的全部文件，放进 dist/。

用法：
    python tools/dist.py                 # 干净构建（_build/dist-build/ 从零开始：网站 + PDF），再收集到 dist/
    python tools/dist.py --from-build D  # 不构建，从已有的成功构建 D/_build 收集（测试用）
    python tools/dist.py --out DIR       # 收集到 DIR 而不是 dist/
    python tools/dist.py --publish-student-site  # 只把 _build/student 的学生版网站打包放进 _build/html（make html）

dist/ 里（<v> 是 minigpt.__version__，唯一的版本号出处）：
- attention-transformer-block-site-<v>.zip   网站，离线阅读：解压后打开 index.html；
- attention-transformer-block-student-site-<v>.zip  学生版网站：同一本书，作业页不带参考答案
  （build_book.py --student 与 --lang en --student，见「教师指南」；两种语言都在里面，英文在 en/，
  和整本书的网站一样；它的 PDF 也不带参考答案）；
- attention-transformer-block-<v>.pdf        整本书的 PDF；
- attention-transformer-block-notebooks-<v>.zip  全书读者笔记本 + wheel + requirements.txt + README；
- minigpt-homework-<v>.zip                   作业包；
- minigpt_book-<v>-py3-none-any.whl 与 minigpt_book-<v>.tar.gz  本书的包（wheel 与 sdist）；
- 英文版（网站 zip 里的 en/ 就是英文网站）：attention-transformer-block-en-<v>.pdf、
  attention-transformer-block-notebooks-en-<v>.zip、minigpt-homework-en-<v>.zip（英文的作业笔记本与
  英文的 minigpt，版本号 <v>+en：检查器与批改程序的话都是英文）；
- minigpt-autograder-<v>.zip 与 minigpt-autograder-en-<v>.zip  Gradescope 的自动批改程序（setup.sh、
  run_autograder 与这种语言的 wheel，见 minigpt/grading/gradescope.py；网站上的是同一个文件）；
- SHA256SUMS                                 以上每个文件的 SHA-256（`sha256sum -c SHA256SUMS` 可核对）。
所有 zip 里的时间戳固定（SOURCE_DATE_EPOCH），同样的构建得到逐字节相同的 zip。
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "book" / "_ext"))
import book_notebooks  # noqa: E402  文件名与网站上的一致
import book_release  # noqa: E402
import autograder_bundle  # noqa: E402
import homework_bundle  # noqa: E402

BOOK = "attention-transformer-block"
SUMS = "SHA256SUMS"


def version() -> str:
    return book_release.package_version(REPO)


def artifact_names(v: str) -> dict[str, str]:
    dist = book_release.DISTRIBUTION.replace("-", "_")
    return {"site": f"{BOOK}-site-{v}.zip", "student_site": f"{BOOK}-student-site-{v}.zip",
            "pdf": f"{BOOK}-{v}.pdf",
            "notebooks": f"{BOOK}-notebooks-{v}.zip", "homework": f"minigpt-homework-{v}.zip",
            "wheel": f"{dist}-{v}-py3-none-any.whl", "sdist": f"{dist}-{v}.tar.gz",
            "pdf_en": f"{BOOK}-en-{v}.pdf", "notebooks_en": f"{BOOK}-notebooks-en-{v}.zip",
            "homework_en": f"minigpt-homework-en-{v}.zip",
            "autograder": f"minigpt-autograder-{v}.zip", "autograder_en": f"minigpt-autograder-en-{v}.zip"}


def _stamp() -> tuple:
    return time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "1767225600")))[:6]


def zip_site(html: Path, target: Path, folder: str) -> None:
    """网站目录打成 zip（文件按路径排序、时间戳固定），解压出来是 folder/index.html……"""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(p for p in html.rglob("*") if p.is_file()):
            rel = path.relative_to(html).as_posix()
            if rel.startswith(".") or "/." in rel:   # .buildinfo 等构建内部文件
                continue
            info = zipfile.ZipInfo(f"{folder}/{rel}", date_time=_stamp())
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes())


def student_site_on_site(root: Path = REPO) -> str:
    """网站根目录上学生版网站 zip 的文件名：_config.yml 的 sphinx.config.book_student_site_on_site（唯一的出处）。"""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    return config["sphinx"]["config"]["book_student_site_on_site"]


def check_student_site(student: Path) -> None:
    """student 是学生版构建的 _build：两种语言的学生版网站都要构建成功过。"""
    if not (student / ".last-html-ok").exists():
        raise SystemExit(f"[dist] {student} 里没有一次成功的学生版网站构建（.last-html-ok）")
    if not (student / "html" / "en" / "index.html").exists():
        raise SystemExit(f"[dist] {student / 'html'} 里没有英文的学生版网站（en/，build_book.py --lang en --student）")


def publish_student_site(student_html: Path, site_html: Path, zipped: Path | None = None) -> Path:
    """两种语言的学生版网站打成 zip，放到网站根目录（教师指南的 {book-student-site} 链接它）。
    zip 逐字节可重现：内容没变时不重写文件（make html 再运行一次不改动网站）。
    zipped：已经由 zip_site 从同一个 student_html 打好的 zip（collect 刚为 dist/ 打过），直接用它，不再打一遍。"""
    target = site_html / student_site_on_site()
    with tempfile.TemporaryDirectory(prefix="student-site-") as tmp:
        fresh = zipped or Path(tmp) / target.name
        if zipped is None:
            zip_site(student_html, fresh, f"{BOOK}-student-{version()}")
        if not (target.is_file() and target.read_bytes() == fresh.read_bytes()):
            shutil.copyfile(fresh, target)
    return target


def build_sdist(out_dir: Path) -> Path:
    """用当前环境的 setuptools 打 sdist（PEP 517 的 build_sdist，不联网），在临时副本里做，不弄脏源码树。"""
    with tempfile.TemporaryDirectory(prefix="minigpt-sdist-") as tmp:
        copy = Path(tmp) / "src-copy"
        shutil.copytree(REPO / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for name in homework_bundle.PACKAGING_FILES:
            shutil.copy(REPO / name, copy / name)
        code = ("import sys; from setuptools import build_meta; "
                "print(build_meta.build_sdist(sys.argv[1]))")
        env = dict(os.environ, SOURCE_DATE_EPOCH=os.environ.get("SOURCE_DATE_EPOCH", "1767225600"))
        proc = subprocess.run([sys.executable, "-c", code, str(out_dir)], cwd=copy, env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"[dist] 打 sdist 失败：\n{proc.stdout}{proc.stderr}")
        return out_dir / proc.stdout.strip().splitlines()[-1]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def collect(build_root: Path, out: Path, student_root: Path | None = None) -> dict[str, Path]:
    """从 build_root/_build 的网站与 PDF、student_root/_build 的学生版网站收集发布文件到 out；
    返回 {种类: 路径}。student_root 默认是 build_root/student（clean_build 把学生版构建在那里）。"""
    build = build_root / "_build"
    html = build / "html"
    student = (student_root or build_root / "student") / "_build"
    english = build / "en" / "_build"
    for folder in (build, english):
        for marker in (".last-html-ok", ".last-pdflatex-ok"):
            if not (folder / marker).exists():
                raise SystemExit(f"[dist] {folder} 里没有一次成功的{'网站' if 'html' in marker else ' PDF '}构建（{marker}）")
    check_student_site(student)
    v = version()
    names = artifact_names(v)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    made = {}
    sources = {"pdf": build / "latex" / "book.pdf",
               "notebooks": html / book_notebooks.NOTEBOOKS_ZIP,
               "homework": html / homework_bundle.BUNDLE,
               "wheel": html / names["wheel"],
               "pdf_en": english / "latex" / "book.pdf",
               "notebooks_en": html / "en" / book_notebooks.NOTEBOOKS_ZIP,
               "homework_en": html / "en" / homework_bundle.BUNDLE,
               "autograder": html / autograder_bundle.AUTOGRADER,
               "autograder_en": html / "en" / autograder_bundle.AUTOGRADER}
    for kind, source in sources.items():
        if not source.is_file():
            raise SystemExit(f"[dist] 构建里没有 {source}")
        made[kind] = out / names[kind]
        shutil.copy2(source, made[kind])
    made["student_site"] = out / names["student_site"]
    zip_site(student / "html", made["student_site"], f"{BOOK}-student-{v}")
    publish_student_site(student / "html", html, made["student_site"])  # 网站上也有一份：教师指南链接它，网站压缩包里因而也有
    made["site"] = out / names["site"]
    zip_site(html, made["site"], f"{BOOK}-{v}")
    sdist = build_sdist(out)
    if sdist.name != names["sdist"]:
        raise SystemExit(f"[dist] sdist 的文件名是 {sdist.name}，应当是 {names['sdist']}")
    made["sdist"] = sdist
    lines = [f"{sha256(p)}  {p.name}\n" for p in sorted(made.values())]
    (out / SUMS).write_text("".join(lines), encoding="utf-8")
    return made


def clean_build(build_root: Path) -> None:
    """在 build_root 下从零构建网站与 PDF（先删掉整个 build_root：不复用执行缓存，也不复用 Sphinx 环境），
    再在 build_root/student 下构建两种语言的学生版网站与 PDF（执行缓存取自刚才那次构建：同一次发布，
    页面不再执行一遍；英文的学生版网站在学生版网站的 en/ 下）。"""
    if build_root.exists():
        shutil.rmtree(build_root)
    build_root.mkdir(parents=True)
    script = REPO / "tools" / "build_book.py"
    for lang in ("zh", "en"):
        for builder in ("html", "pdflatex"):
            code = subprocess.run([sys.executable, str(script), "--builder", builder, "--fresh", "--lang", lang,
                                   "--out", str(build_root)], cwd=REPO).returncode
            if code != 0:
                raise SystemExit(f"[dist] {lang} 的 {builder} 构建失败（退出码 {code}），dist/ 没有更新")
    caches = {"zh": build_root / "_build", "en": build_root / "_build" / "en" / "_build"}
    for lang in ("zh", "en"):
        for builder in ("pdflatex", "html"):  # PDF 在前：学生版网站只在自己的 PDF 已经建好时链接它
            code = subprocess.run([sys.executable, str(script), "--builder", builder, "--student", "--fresh",
                                   "--lang", lang, "--out", str(build_root / "student"),
                                   "--cache-from", str(caches[lang])], cwd=REPO).returncode
            if code != 0:
                raise SystemExit(f"[dist] {lang} 学生版的 {builder} 构建失败（退出码 {code}），dist/ 没有更新")
    # PDF 构建成功后 build_book.py 把它复制进网站（首页的“下载 PDF”），网站压缩包里因而也有它


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-build", type=Path, default=None,
                        help="不构建，从这个目录下已有的 _build 收集（build_book.py 的 --out 目录）")
    parser.add_argument("--out", type=Path, default=REPO / "dist", help="输出目录（默认 dist/，先清空）")
    parser.add_argument("--publish-student-site", action="store_true",
                        help="只把 _build/student 里两种语言的学生版网站打成 zip，放到 _build/html 根目录（make html 用）")
    args = parser.parse_args(argv)
    if args.publish_student_site:
        student = REPO / "_build" / "student" / "_build"
        check_student_site(student)
        target = publish_student_site(student / "html", REPO / "_build" / "html")
        print(f"[dist] 学生版网站：{target.relative_to(REPO)}（{target.stat().st_size / 1e6:.2f} MB）")
        return 0
    started = time.monotonic()
    build_root = args.from_build.resolve() if args.from_build else REPO / "_build" / "dist-build"
    if args.from_build is None:
        clean_build(build_root)
    made = collect(build_root, args.out.resolve())
    print(f"[dist] {args.out}（{time.monotonic() - started:.0f} 秒）：")
    for path in sorted(made.values()):
        print(f"  {path.stat().st_size / 1e6:8.2f} MB  {path.name}")
    print(f"  {SUMS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
