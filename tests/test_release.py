"""发布：一个版本号、make dist 的全部文件与校验和、离线网站压缩包、sdist、许可证与引用、更新记录、
站点地图与分享信息。

dist/ 的测试不再构建一遍书：tools/dist.py 的 collect 从测试共用的那次整本书构建（网站 + PDF）收集，
与 make dist 在干净构建之后做的是同一个函数。
"""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
import yaml

from support import pagekit
from support.book import REPO, toc_docnames
from support.processes import clean_env

sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "book" / "_ext"))
import book_release  # noqa: E402
import dist  # noqa: E402

VERSION = book_release.package_version(REPO)
CONFIG = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"]
BASEURL = CONFIG["html_baseurl"]


# ---------------------------------------------------------------- 名字与版本

def test_distribution_is_minigpt_book_and_the_version_is_written_once():
    import minigpt

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == book_release.DISTRIBUTION == "minigpt-book"
    assert "version" not in project and "version" in project["dynamic"]
    assert VERSION == minigpt.__version__
    # 版本号的字面值只出现在 src/minigpt/__init__.py 里
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    holders = []
    for name in tracked:
        path = REPO / name
        # 锁文件（requirements.lock、npm 的 package-lock.json）里是别的包的版本号，碰巧相同也不算
        if path.suffix in (".ipynb", ".lock", ".png", ".svg") or name == "package-lock.json" \
                or not path.is_file() or name.startswith("tests/"):
            continue
        if re.search(rf"(?<![\d.]){re.escape(VERSION)}(?![\d.])", path.read_text(encoding="utf-8", errors="ignore")):
            holders.append(name)
    assert holders == ["src/minigpt/__init__.py"], holders


def test_site_footer_and_pdf_title_page_print_the_version(built_book, built_pdf):
    line = book_release.edition_line(VERSION)
    assert line == f"第 {VERSION.split('.')[0]} 版 · minigpt-book {VERSION}"
    footer_line = book_release.footer_line(VERSION)
    assert VERSION in footer_line
    for doc in toc_docnames():
        footer = pagekit.soup(built_book.html / f"{doc}.html").select_one(".extra_footer")
        assert footer is not None and footer_line in footer.get_text(), doc
    first = subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(built_pdf.root / "_build" / "latex" / "book.pdf"),
                            "-"], capture_output=True, text=True, check=True).stdout
    assert squash(line) in squash(first)


def test_changelog_has_one_entry_per_edition_newest_first(built_book):
    edition = book_release.edition(VERSION)
    text = (REPO / "book" / "changelog.md").read_text(encoding="utf-8")
    assert [int(n) for n in re.findall(r"^## 第 (\d+) 版", text, re.M)] == list(range(edition, 0, -1))
    page = pagekit.load(built_book, "changelog")
    assert f"第 {edition} 版（minigpt-book {VERSION}）" in page.text


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


# ---------------------------------------------------------------- 许可证、引用、致谢

def test_licence_citation_and_credit_to_the_source_tutorial(built_book):
    licence = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Attribution-ShareAlike 4.0 International Public License" in licence
    assert "MIT License" in licence and "Permission is hereby granted, free of charge" in licence
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"] == "MIT"
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["title"] and cff["authors"]
    assert set(cff["license"]) == {"CC-BY-SA-4.0", "MIT"}
    source = "Attention 机制与 Transformer Block"
    index = pagekit.load(built_book, "index").text
    # 前言写明书的讲法出自“来源教程”，引文（{cite:p}）印出它的书名
    assert source in index and "来源教程" in index and "作者不详" in index
    # 前言写明两种许可（PDF 里没有网站的页脚，读者只能从这里知道能不能转载、改编）
    assert "CC BY-SA 4.0" in index and "MIT 许可" in index and "CITATION.cff" in index
    references = pagekit.load(built_book, "references").text
    assert source in references and "作者不详" in references
    bib = (REPO / "book" / "references.bib").read_text(encoding="utf-8")
    entry = bib[bib.index("source_tutorial_zh"):].split("\n}")[0]
    assert "author" not in entry, "来源教程的作者不详：不写作者"


# ---------------------------------------------------------------- 站点地图与分享信息

def test_sitemap_lists_every_page_under_the_base_url(built_book):
    assert BASEURL.startswith("https://") and BASEURL.endswith("/")
    root = ET.parse(built_book.html / "sitemap.xml").getroot()
    locs = sorted(e.text for e in root.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc"))
    assert locs == sorted(f"{BASEURL}{doc}.html" for doc in toc_docnames())


def test_every_page_carries_opengraph_title_description_and_image(built_book):
    image = CONFIG["ogp_image"]
    assert (built_book.html / image).is_file()
    for doc in toc_docnames():
        soup = pagekit.soup(built_book.html / f"{doc}.html")
        og = {m["property"]: m["content"] for m in soup.select("meta[property^='og:']")}
        assert og["og:url"] == f"{BASEURL}{doc}.html", doc
        assert og["og:title"] and len(og["og:description"]) > 20, doc
        assert og["og:image"] == BASEURL + image, doc


# ---------------------------------------------------------------- make dist

@pytest.fixture(scope="module")
def dist_dir(built_pdf, built_pdf_en, student_site, tmp_path_factory) -> Path:
    """make dist 的文件：两种语言的网站（及学生版）与 PDF 都要先构建好。"""
    out = tmp_path_factory.mktemp("dist") / "dist"
    dist.collect(built_pdf.root, out, student_site.root)
    return out


def test_dist_holds_every_artifact_and_their_sha256_sums(dist_dir):
    names = dist.artifact_names(VERSION)
    assert sorted(p.name for p in dist_dir.iterdir()) == sorted([*names.values(), dist.SUMS])
    sums = {}
    for line in (dist_dir / dist.SUMS).read_text(encoding="utf-8").splitlines():
        digest, name = line.split("  ", 1)
        sums[name] = digest
    assert set(sums) == set(names.values())
    for name, digest in sums.items():
        assert hashlib.sha256((dist_dir / name).read_bytes()).hexdigest() == digest, name
    assert subprocess.run(["sha256sum", "--quiet", "-c", dist.SUMS], cwd=dist_dir).returncode == 0
    assert (dist_dir / names["pdf"]).read_bytes()[:5] == b"%PDF-"


def test_site_archive_opens_offline_from_index_html(dist_dir, tmp_path):
    with zipfile.ZipFile(dist_dir / dist.artifact_names(VERSION)["site"]) as zf:
        zf.extractall(tmp_path)
    site = tmp_path / f"{dist.BOOK}-{VERSION}"
    index = pagekit.resources(site / "index.html")
    assert index.refresh, "index.html 应当跳到首页"
    target = site / index.refresh.split("url=", 1)[1]
    assert target.is_file(), target
    for page in (target, site / f"{toc_docnames()[2]}.html"):
        res = pagekit.resources(page)
        for url in res.loads:
            assert "://" not in url and not url.startswith("//"), f"{page.name} 从别的主机加载 {url}"
            assert (page.parent / url.split("?")[0].split("#")[0]).resolve().is_file(), f"{page.name}: 缺 {url}"
        assert pagekit.articles(pagekit.soup(page)), page
    assert (site / CONFIG["book_pdf_on_site"]).is_file()


def test_dist_holds_a_student_site_without_solutions_beside_the_full_one(dist_dir, tmp_path):
    from test_site_student import found, solution_lines

    names = dist.artifact_names(VERSION)
    lines = solution_lines()
    for kind, expect_solutions in (("site", True), ("student_site", False)):
        with zipfile.ZipFile(dist_dir / names[kind]) as zf:
            zf.extractall(tmp_path / kind)
        (root,) = (tmp_path / kind).iterdir()
        assert (root / "book" / "homework.html").is_file() and (root / "book" / "teacher_guide.html").is_file()
        assert bool(found(root, lines)) is expect_solutions, kind


def test_dist_holds_a_gradescope_autograder_per_edition_with_that_editions_wheel(dist_dir):
    names = dist.artifact_names(VERSION)
    wheels = {"autograder": names["wheel"], "autograder_en": names["wheel"].replace(VERSION, f"{VERSION}+en")}
    for kind, wheel in wheels.items():
        with zipfile.ZipFile(dist_dir / names[kind]) as zf:
            assert sorted(zf.namelist()) == sorted(["setup.sh", "run_autograder", "README.md", wheel]), kind
            setup, readme = zf.read("setup.sh").decode(), zf.read("README.md").decode()
            assert f'"./{wheel}[grade]"' in setup and "--index-url https://download.pytorch.org/whl/cpu" in setup
            with zipfile.ZipFile(io.BytesIO(zf.read(wheel))) as inner:   # wheel 里的 minigpt 是哪种语言的
                version = inner.read("minigpt/__init__.py").decode()
            assert (f'"{VERSION}+en"' in version) is (kind == "autograder_en"), kind
        english = kind == "autograder_en"
        assert bool(re.search(r"[\u4e00-\u9fff]", setup + readme)) is not english, kind


@pytest.mark.slow  # 全新环境里从 sdist 安装
def test_sdist_installs_in_a_fresh_venv_and_imports(dist_dir, fresh_venv, tmp_path):
    sdist = dist_dir / dist.artifact_names(VERSION)["sdist"]
    fresh_venv.pip("install", "--quiet", "--force-reinstall", "--no-deps", "--no-build-isolation", str(sdist))
    code = ("import importlib.metadata, minigpt; "
            "print(importlib.metadata.version('minigpt-book'), minigpt.__version__, minigpt.__file__)")
    out = subprocess.run([str(fresh_venv.python), "-c", code], cwd=tmp_path, env=clean_env(),
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[:2] == [VERSION, VERSION]
    assert "site-packages" in out[2] and REPO.as_posix() not in out[2]
