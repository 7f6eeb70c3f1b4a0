"""读者笔记本（book/_ext/book_notebooks.py）：每个执行过的页面一份，离开本仓库也能运行。

期望都从构建出来的页面推出（页面文字正在改写，这里不写死任何一句）：页面上看得见的代码单元、glue 填进正文的值、
术语链接、图表编号。慢测试在仓库之外的全新环境（conftest 的 fresh_venv：只有 torch、numpy、matplotlib、
ipykernel）里，从网站上的全书笔记本包出发，每个笔记本从头到尾跑一遍，打印的内容与页面相同。
"""

from __future__ import annotations

import base64
import re
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

from support import pagekit
from support.book import MYST_NOTEBOOK_HEADER, REPO, toc_docnames

sys.path.insert(0, str(REPO / "book" / "_ext"))
import book_notebooks  # noqa: E402
import book_release  # noqa: E402

BASEURL = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"]["html_baseurl"]


def executed_pages() -> list[str]:
    return [doc for doc in toc_docnames()
            if (REPO / f"{doc}.md").read_text(encoding="utf-8").startswith(MYST_NOTEBOOK_HEADER.split("kernelspec")[0])]


PAGES = executed_pages()


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def unescape_md(text: str) -> str:
    return re.sub(r"\\([\\`*_\[\]<>#|])", r"\1", text)


@pytest.fixture(scope="module")
def notebooks(built_book) -> dict[str, nbformat.NotebookNode]:
    out = {}
    for doc in PAGES:
        path = built_book.html / "_sources" / f"{doc}.ipynb"
        assert path.is_file(), f"{doc} 没有读者笔记本 {path}"
        out[doc] = nbformat.read(path, as_version=4)
    return out


def markdown(nb) -> str:
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def body_code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code" and "book-install" not in c.metadata.get("tags", [])]


def test_there_are_executed_pages_to_export():
    assert len(PAGES) >= 8, PAGES


def test_download_menu_offers_the_reader_notebook(built_book, notebooks):
    for doc in PAGES:
        page = built_book.html / f"{doc}.html"
        hrefs = pagekit.resources(page).buttons.get("download-notebook-button", [])
        assert len(hrefs) == 1, (doc, hrefs)
        assert (page.parent / hrefs[0]).resolve() == (built_book.html / "_sources" / f"{doc}.ipynb").resolve()
        zips = pagekit.resources(page).buttons.get("download-notebooks-zip-button", [])
        assert zips and (page.parent / zips[0]).resolve() == (built_book.html / book_notebooks.NOTEBOOKS_ZIP).resolve()


def test_reader_notebook_markdown_holds_no_myst_syntax(notebooks):
    for doc, nb in notebooks.items():
        text = markdown(nb)
        left = [m for m in book_notebooks.MYST_MARKERS if m in text]
        assert not left, f"{doc} 的 Markdown 里还有 MyST 标记 {left}"
        assert not re.search(r"^:::", text, re.M), doc
        assert "myst_nb" not in "\n".join(c.source for c in nb.cells), doc


def test_first_cells_say_in_chinese_how_to_install_the_package(notebooks):
    version = book_release.package_version(REPO)
    for doc, nb in notebooks.items():
        intro, install = nb.cells[0], nb.cells[1]
        assert intro.cell_type == "markdown" and "安装" in intro.source, doc
        assert f"`{book_release.DISTRIBUTION}`" in intro.source and "import minigpt" in intro.source, doc
        assert install.cell_type == "code" and "book-install" in install.metadata["tags"], doc
        assert f'BOOK_VERSION = "{version}"' in install.source and "pip" in install.source, doc
        assert BASEURL in install.source, doc   # 不在笔记本包里时从网站下载 wheel


def test_code_cells_are_the_pages_visible_cells_with_the_pages_outputs(built_book, notebooks):
    for doc, nb in notebooks.items():
        doc_html = pagekit.soup(built_book.html / f"{doc}.html")
        article = pagekit.articles(doc_html)[0]
        inputs = article.select("div.cell div.cell_input pre")
        # 正文里的代码单元成为代码单元；折叠的答案（解答、提示框）里的写成引用块里的代码
        nested = [pre for pre in inputs if pre.find_parent(class_=["solution", "admonition", "exercise"])]
        visible = [pre.get_text() for pre in inputs if pre not in nested]
        cells = body_code_cells(nb)
        assert [squash(c.source) for c in cells] == [squash(v) for v in visible], doc
        quoted = squash(re.sub(r"^>[ ]?", "", markdown(nb), flags=re.M))
        for pre in nested:
            assert squash(pre.get_text()) in quoted, (doc, pre.get_text()[:200])
        page_outputs = squash(" ".join(o.get_text() for o in article.select("div.cell div.cell_output")))
        for cell in cells:
            for out in cell.outputs:
                if out.output_type == "stream":
                    assert squash(out.text) in page_outputs, (doc, out.text[:200])


def test_glued_values_terms_and_figure_numbers_are_written_in(built_book, notebooks):
    for doc, nb in notebooks.items():
        page = pagekit.load(built_book, Path(doc).name)
        text = squash(unescape_md(markdown(nb)))
        for value in page.pasted:
            assert squash(value) in text, f"{doc}: glue 的值 {value!r} 不在笔记本里"
        for number in page.captions:
            assert squash(number) in text, f"{doc}: 图表编号 {number} 不在笔记本里"
        terms = {h.split("#", 1)[1] for h in page.hrefs if "glossary.html#term-" in h}
        linked = set(re.findall(re.escape(BASEURL) + r"book/glossary\.html#(term-[^)\s]+)\)", markdown(nb)))
        assert terms <= linked, f"{doc}: 这些术语没有链到网站的术语表 {sorted(terms - linked)}"
        figures = len(page.figure_ids)
        attached = sum(len(c.get("attachments", {})) for c in nb.cells)
        for cell in nb.cells:  # Jupyter 与 nbconvert 把附件当 base64 显示（SVG 也一样）
            for name, bundle in cell.get("attachments", {}).items():
                for data in bundle.values():
                    assert base64.b64decode(data, validate=True), (doc, name)
                assert f"attachment:{name}" in cell.source, (doc, name)
        assert attached >= figures, f"{doc}: 页面有 {figures} 张图，笔记本里只嵌了 {attached} 张"


def test_notebooks_zip_holds_every_notebook_the_wheel_requirements_and_readme(built_book):
    version = book_release.package_version(REPO)
    wheel = book_notebooks.wheel_name(version)
    folder = book_notebooks.NOTEBOOKS_FOLDER
    with zipfile.ZipFile(built_book.html / book_notebooks.NOTEBOOKS_ZIP) as zf:
        names = set(zf.namelist())
        expected = {f"{folder}/{Path(d).name}.ipynb" for d in PAGES} | {
            f"{folder}/{n}" for n in ("README.md", "requirements.txt", wheel)}
        assert names == expected
        for doc in PAGES:
            assert zf.read(f"{folder}/{Path(doc).name}.ipynb") == (
                built_book.html / "_sources" / f"{doc}.ipynb").read_bytes()
        readme = zf.read(f"{folder}/README.md").decode()
        requirements = zf.read(f"{folder}/requirements.txt").decode().split()
        assert zf.read(f"{folder}/{wheel}") == (built_book.html / wheel).read_bytes()
    assert "全书笔记本" in readme and "pip install -r requirements.txt" in readme
    pinned = {line.split("==")[0] for line in requirements if "==" in line}
    assert pinned == {"torch", "numpy", "matplotlib", "ipykernel"} and f"./{wheel}" in requirements


def _stdout(cell) -> str:
    return "".join(o.text for o in cell.get("outputs", []) if o.output_type == "stream" and o.name == "stdout")


def _errors(cell) -> list[str]:
    return [o.ename for o in cell.get("outputs", []) if o.output_type == "error"]


@pytest.mark.slow  # 全新环境、每个笔记本一个内核
def test_every_notebook_runs_in_a_fresh_venv_and_prints_what_its_page_prints(built_book, fresh_venv, tmp_path,
                                                                             monkeypatch):
    with zipfile.ZipFile(built_book.html / book_notebooks.NOTEBOOKS_ZIP) as zf:
        zf.extractall(tmp_path)
    folder = tmp_path / book_notebooks.NOTEBOOKS_FOLDER
    # 环境里先没有本书的包：第一个笔记本的安装单元要用文件夹里的 wheel 把它装上（不联网）
    fresh_venv.pip("uninstall", "--yes", book_release.DISTRIBUTION)
    for key in ("PYTHONPATH", "VIRTUAL_ENV"):   # 内核里不能 import 到本仓库的 minigpt
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(fresh_venv.jupyter_path))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))

    def run(doc: str) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
        """像读者那样从头到尾运行一个笔记本（它自己的内核）：返回原样的和重新运行过的。"""
        original = nbformat.read(folder / f"{Path(doc).name}.ipynb", as_version=4)
        nb = nbformat.read(folder / f"{Path(doc).name}.ipynb", as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
        NotebookClient(nb, timeout=300, kernel_name=fresh_venv.kernel,
                       resources={"metadata": {"path": str(folder)}}).execute()
        return original, nb

    # 第一个笔记本先单独跑（它装上本书的包）；其余的互不相干，两个两个同时跑（各自一个内核，本机 2 个 CPU）
    results = [run(PAGES[0])]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results += list(pool.map(run, PAGES[1:]))
    installs = []
    for doc, (original, nb) in zip(PAGES, results):
        installs.append(_stdout(nb.cells[1]))
        for before, after in zip(body_code_cells(original), body_code_cells(nb)):
            assert squash(_stdout(after)) == squash(_stdout(before)), (doc, before.source[:200])
            assert _errors(after) == _errors(before), (doc, before.source[:200])
    assert installs[0].startswith("已安装") and book_notebooks.wheel_name(book_release.package_version(REPO)) in installs[0]
    assert all("已经装好" in text for text in installs[1:]), installs
    # 每个笔记本都给图装上中文字体（读者那里没有书页的隐藏设置单元）
    assert all("图中的中文字体： " in text for text in installs), installs
    # 内核像读者那里一样写下 .pyc（support/processes.py 的 DIRTY）：后面的笔记本不必再把 torch 编译一遍
    venv = fresh_venv.python.parent.parent
    assert list(venv.glob("lib/python*/site-packages/torch/__pycache__/*.pyc")), "全新环境的内核没有写 .pyc"
