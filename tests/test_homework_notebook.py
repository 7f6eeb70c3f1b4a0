"""作业页与学生版笔记本（book/homework.md → book/homework_student.ipynb）。

- 笔记本由 tools/make_student_notebook.py 从页面生成，已提交的版本必须是最新的、不含答案；
- 构建出的作业页：三道题、答案折叠、答案的输出里有检查器的 ✔、初始代码显示“还没有填写”、
  作业包的链接（页面上与每页的下载菜单里）指向网站上真实存在的 zip、链接到教师指南、可见的代码单元里没有构建用的 glue；
- 教师指南（book/teacher_guide.md）是单独的一页：发放、收集、批改、结果的读法、沙箱与上限、分值表；
  作业页上不再有批改程序与沙箱的内部细节。

笔记本在全新环境里的运行见 tests/test_homework_bundle.py；检查器见 tests/test_homework.py；批改见
tests/test_homework_grade.py。
"""

from __future__ import annotations

import importlib.util
import re
import zipfile
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from support.book import REPO
from support.pagekit import soup as read_html

BOOK = REPO / "book"
NOTEBOOK = BOOK / "homework_student.ipynb"
STARTERS = ["1a", "1b", "2a", "2b", "3", "4a", "4b", "5a", "5b"]  # 页面上初始代码的编号（标签 hw-starter-<编号>）
EXERCISE_LABELS = ["hw-ex-score", "hw-ex-mask", "hw-ex-ffn", "hw-ex-heads", "hw-ex-block"]


def _load_tool():
    spec = importlib.util.spec_from_file_location("make_student_notebook",
                                                  REPO / "tools" / "make_student_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _summary(nb) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source, _tags(c)) for c in nb.cells]


# ---------------------------------------------------------------- 笔记本与页面同源

def test_committed_notebook_is_up_to_date():
    committed = nbformat.read(NOTEBOOK, as_version=4)
    regenerated = tool.build_notebook()
    assert _summary(committed) == _summary(regenerated), \
        "book/homework_student.ipynb 已过期：运行 .venv/bin/python tools/make_student_notebook.py"
    assert committed.metadata["kernelspec"]["name"] == "python3"
    nbformat.validate(committed)


def test_notebook_has_every_starter_and_no_solution():
    nb = tool.build_notebook()
    starter_tags = [t for c in nb.cells for t in _tags(c) if t.startswith("hw-starter-")]
    assert starter_tags == [f"hw-starter-{n}" for n in STARTERS]
    solutions = tool.solutions()
    assert sorted(solutions) == sorted(STARTERS)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    for number, answer in solutions.items():
        key_line = next(line for line in answer.splitlines() if "=" in line and "None" not in line
                        and not line.startswith(("seq_len", "hidden_size")))
        assert key_line not in code, f"答案 {number} 的代码 {key_line!r} 漏进了学生版"
    assert "solution" not in "\n".join(c.source for c in nb.cells).lower()
    # 检查器只打印、不返回值：调用后面不需要分号；也不用 %xmode（它会藏起学生自己报错的行号）
    assert not re.search(r"check_\w+\(.*\)\s*;", code) and "%xmode" not in code
    for cell in nb.cells:
        if any(t.startswith("hw-starter-") for t in _tags(cell)):
            assert "None" in cell.source and "# TODO" in cell.source
            assert re.search(r"^check_\w+\(", cell.source, re.M), "初始代码要以检查器调用结尾"
    # 三道题的题目都在，标题与检查器说的“作业 N”一致
    headings = re.findall(r"^## (作业 \d)：", "\n".join(c.source for c in nb.cells if c.cell_type == "markdown"),
                          re.M)
    assert headings == ["作业 1", "作业 2", "作业 3", "作业 4", "作业 5"]


def test_generator_refuses_tagged_cells_inside_a_solution(tmp_path):
    page = (BOOK / "homework.md").read_text(encoding="utf-8")
    leaked = page.replace(":tags: [hw-solution-3]", ":tags: [hw-student, hw-solution-3]")
    assert leaked != page
    bad = tmp_path / "homework.md"
    bad.write_text(leaked, encoding="utf-8")
    with pytest.raises(ValueError, match="答案会漏进学生版"):
        tool.build_notebook(bad)


def test_exercise_directive_becomes_plain_markdown():
    text, nxt = tool.exercise_to_markdown("```{exercise} 标题\n:label: x\n:nonumber:\n\n正文 $a$\n```", 2)
    assert text == "## 作业 2：标题\n\n正文 $a$" and nxt == 3


# ---------------------------------------------------------------- 构建出的作业页

@pytest.fixture(scope="module")
def homework_html(built_book):
    path = built_book.html / "book" / "homework.html"
    return path, read_html(path)


@pytest.mark.book
def test_homework_page_title_and_three_exercises(homework_html):
    _, soup = homework_html
    assert soup.find("h1").get_text(strip=True).startswith("作业")
    exercises = soup.select("div.exercise")
    assert [e.get("id") for e in exercises] == EXERCISE_LABELS
    titles = [e.select_one(".admonition-title").get_text(" ", strip=True) for e in exercises]
    words = ["点积与分数矩阵", "遮住未来", "数出 FFN 的参数",
             "多头注意力", "LayerNorm 与 Post-LN Block"]
    assert len(titles) == len(words)
    for title, word in zip(titles, words):
        assert title == f"作业（{word}）", title  # 计分的题叫“作业”，和各节不计分的“练习”分开（issue 26）  # 中文标题用全角括号（book_exercises 的第 1 项）
    text = soup.get_text()
    assert "改代码的还是你自己的手" in text, "开头要说明 AI 的使用边界"
    assert "AI" in soup.select_one("article").get_text()[:400]
    assert "Exception reporting mode" not in text  # 不用 %xmode：检查器的提示本来就只有一行
    for solution in soup.select("div.solution"):
        title = solution.select_one(".admonition-title").get_text()
        assert "（" in title and "(" not in title, title
        assert "作业（" in title and "练习" not in title, title


@pytest.mark.book
def test_solutions_are_collapsed_dropdowns_with_checker_confirmations(homework_html):
    _, soup = homework_html
    solutions = soup.select("div.solution")
    assert len(solutions) == 5
    for solution, n in zip(solutions, ("1", "2", "3", "4", "5")):
        assert "dropdown" in solution.get("class", []), "答案必须折叠（:class: dropdown）"
        outputs = " ".join(o.get_text() for o in solution.select("div.cell_output"))
        assert f"✔ 作业 {n} 通过" in outputs, f"作业 {n} 的答案输出里没有检查器的确认"
        assert "Error" not in outputs and "Traceback" not in outputs
    assert soup.select_one("div.solution").select("div.cell.tag_hw-solution-1a")


@pytest.mark.book
def test_starter_cells_show_the_not_filled_message_and_nothing_else(homework_html):
    _, soup = homework_html
    for n in STARTERS:
        cell = soup.select_one(f"div.cell.tag_hw-starter-{n}")
        assert cell is not None, f"页面上没有初始代码 {n}"
        assert "tag_raises-exception" in cell.get("class", [])
        out = cell.select_one("div.cell_output").get_text()
        assert "HomeworkNotFilled" in out and "还没有填写" in out, out
        assert "NameError" not in out and "TypeError" not in out


@pytest.mark.book
def test_wrong_answer_examples_show_the_checkers_diagnosis(homework_html):
    _, soup = homework_html
    text = " ".join(o.get_text() for o in soup.select("div.cell_output"))
    flat = re.sub(r"\s+", "", text)
    for phrase in ("还没有求和", "算成了K@Q.T", "用torch.tril而不是torch.triu", "先softmax、再把未来位置乘0",
                   "漏了偏置", "直接view/reshape", "Pre-LN的排法"):
        assert phrase in flat, f"页面上缺少检查器对典型错误的说明：{phrase}"


def _bundle_ok(target) -> None:
    assert target.is_file(), f"作业包 {target} 不存在"
    with zipfile.ZipFile(target) as zf:
        names = zf.namelist()
        assert "minigpt-homework/homework_student.ipynb" in names and "minigpt-homework/README.md" in names
        assert any(re.fullmatch(r"minigpt-homework/minigpt_book-[\d.]+-py3-none-any\.whl", n) for n in names), names
        notebook = zf.read("minigpt-homework/homework_student.ipynb")
    assert notebook == NOTEBOOK.read_bytes()


@pytest.mark.book
def test_homework_page_links_the_bundle(homework_html):
    path, soup = homework_html
    section = soup.find(id="hw-bundle")
    links = [a["href"] for a in section.select("a[href]") if a["href"].endswith("minigpt-homework.zip")]
    assert links, "「在自己的电脑上做题」一节里没有作业包的链接"
    _bundle_ok((path.parent / unquote(urlsplit(links[0]).path)).resolve())


@pytest.mark.book
def test_download_menu_of_every_page_links_the_bundle(built_book):
    for page in (built_book.html / "book").glob("*.html"):
        soup = read_html(page)
        item = soup.select_one("a.btn-download-homework-bundle-button")
        assert item is not None, f"{page.name}: 下载菜单里没有作业包"
        assert item.get_text(strip=True) == "作业包"
        assert (page.parent / item["href"]).resolve() == (built_book.html / "minigpt-homework.zip").resolve()
    _bundle_ok(built_book.html / "minigpt-homework.zip")


@pytest.fixture(scope="module")
def teacher_html(built_book):
    return read_html(built_book.html / "book" / "teacher_guide.html")


@pytest.mark.book
def test_homework_page_links_the_teachers_guide_and_keeps_no_sandbox_internals(homework_html):
    path, soup = homework_html
    article = soup.select_one("article")
    links = [a["href"] for a in article.select("a[href]") if "teacher_guide.html" in a["href"]]
    assert links and (path.parent / urlsplit(links[0]).path).is_file()
    text = article.get_text(" ", strip=True)
    for internal in ("bubblewrap", "/dev/shm", "--no-sandbox", "--notebook-timeout", "退出码", "CSV", "umask",
                     "python -m minigpt.grade"):
        assert internal not in text, f"作业页上还有批改的内部细节：{internal}"
    assert soup.find(id="hw-teacher") is None


@pytest.mark.book
def test_teachers_guide_explains_handing_out_collecting_and_grading(teacher_html):
    assert teacher_html.find("h1").get_text(strip=True).startswith("教师指南")
    section = teacher_html.select_one("article")
    text = section.get_text(" ", strip=True)
    for must in ("minigpt-homework.zip", "python -m minigpt.grade", "--json", "--timeout", "退出码",
                 "bubblewrap", "--no-sandbox", "--csv", "--resume", "--jobs", "学号", "BOM", "umask",
                 "--index-url", "--student", "make dist"):
        assert must in text, must
    tables = {tuple(th.get_text(strip=True) for th in t.select("thead th")): t for t in section.select("table")}
    status = tables[("结果", "含义")]
    from minigpt.grading.results import STATUS_TEXT

    assert [tr.find("td").get_text(strip=True) for tr in status.select("tbody tr")] == [
        STATUS_TEXT[k] for k in ("passed", "wrong", "not_attempted", "missing", "error", "timeout")]
    assert set(STATUS_TEXT) == {"passed", "wrong", "not_attempted", "missing", "error", "timeout"}


@pytest.mark.book
def test_teachers_guide_lists_every_sandbox_limit_with_its_flag_and_default(teacher_html):
    from minigpt.grading import cli

    section = teacher_html.select_one("article")
    table = next(t for t in section.select("table") if t.find("th").get_text(strip=True) == "选项")
    rows = {tr.find("code").get_text().split()[0]: tr.find_all("td")[1].get_text(strip=True)
            for tr in table.select("tbody tr")}
    defaults = {a.option_strings[0]: a.default for a in cli.parser()._actions if a.option_strings}
    gib = {"--memory", "--disk"}
    for flag, shown in rows.items():
        if flag == "--jobs":
            assert shown == "CPU 数"
            continue
        value = defaults[flag] / 2**30 if flag in gib else defaults[flag]
        assert float(shown) == value, (flag, shown, value)
    assert set(rows) == {"--timeout", "--notebook-timeout", "--memory", "--processes", "--disk", "--jobs"}
    from minigpt.grading.runner import MAX_RESTARTS

    assert f"最多换 {MAX_RESTARTS} 次内核" in table.get_text(" ", strip=True)


@pytest.mark.book
def test_teachers_guide_prints_the_points_of_every_sub_exercise(teacher_html):
    from minigpt.grading.results import short_name
    from minigpt.homework import EXERCISES

    section = teacher_html.select_one("article")
    table = next(t for t in section.select("table") if t.find("th").get_text(strip=True) == "小题")
    assert [th.get_text(strip=True) for th in table.select("thead th")] == (
        ["小题"] + [short_name(e.key) for e in EXERCISES] + ["合计"])
    cells = [td.get_text(strip=True) for td in table.select("tbody tr td")]
    assert cells == ["分值"] + [str(e.points) for e in EXERCISES] + [str(sum(e.points for e in EXERCISES))]


@pytest.mark.book
def test_visible_code_cells_have_no_build_plumbing(homework_html):
    _, soup = homework_html
    for cell in soup.select("div.cell_input"):
        code = cell.get_text()
        assert "glue(" not in code and "myst_nb" not in code, code[:200]


def test_glossary_links_become_plain_words_and_other_roles_are_refused():
    text, _ = tool.exercise_to_markdown("```{exercise} 题\n:label: x\n\n{term}`Query` 与 {term}`键 <Key>`\n```", 1)
    assert text == "## 作业 1：题\n\nQuery 与 键"
    with pytest.raises(ValueError, match="MyST"):
        tool.exercise_to_markdown("```{exercise} 题\n:label: x\n\n见 {doc}`s1_intuition`\n```", 1)

