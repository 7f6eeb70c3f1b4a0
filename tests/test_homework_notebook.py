"""作业页与学生版笔记本（book/homework.md → book/homework_student.ipynb）。

- 笔记本由 tools/make_student_notebook.py 从页面生成，已提交的版本必须是最新的、不含答案；
- 原样运行（nbclient，本环境的内核，工作目录 book/）：停在第一个检查器，报“还没有填写”，不是 NameError；
- 把页面上的参考答案填进去：从头到尾运行无误，每个检查器都确认通过；
- 构建出的作业页：三道题、答案折叠、答案的输出里有检查器的 ✔、初始代码显示“还没有填写”、下载链接有效。

检查器对典型错误答案的拒绝见 tests/test_homework.py。
"""

from __future__ import annotations

import copy
import importlib.util
import re
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from conftest import REPO

BOOK = REPO / "book"
NOTEBOOK = BOOK / "homework_student.ipynb"
STARTERS = ["1a", "1b", "2a", "2b", "3"]  # 页面上初始代码的编号（标签 hw-starter-<编号>）
EXERCISE_LABELS = ["hw-ex-score", "hw-ex-mask", "hw-ex-ffn"]


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


def _execute(nb) -> nbformat.NotebookNode:
    nb = copy.deepcopy(nb)
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(BOOK)}})
    client.execute()
    return nb


def _text_outputs(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
        elif "text/plain" in out.get("data", {}):
            parts.append(out.data["text/plain"])
    return "".join(parts)


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
    for cell in nb.cells:
        if any(t.startswith("hw-starter-") for t in _tags(cell)):
            assert "None" in cell.source and "# TODO" in cell.source
            assert re.search(r"^check_\w+\(", cell.source, re.M), "初始代码要以检查器调用结尾"
    # 三道题的题目都在，标题与检查器说的“作业 N”一致
    headings = re.findall(r"^## (作业 \d)：", "\n".join(c.source for c in nb.cells if c.cell_type == "markdown"),
                          re.M)
    assert headings == ["作业 1", "作业 2", "作业 3"]


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


# ---------------------------------------------------------------- 运行笔记本

def test_notebook_as_is_stops_at_the_first_checker_saying_not_filled():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    with pytest.raises(CellExecutionError) as info:
        client = NotebookClient(nb, timeout=120, kernel_name="python3",
                                resources={"metadata": {"path": str(BOOK)}})
        client.execute()
    assert info.value.ename == "HomeworkNotFilled", info.value.evalue
    assert "还没有填写" in info.value.evalue
    failed = [c for c in nb.cells if any(o.output_type == "error" for o in c.get("outputs", []))]
    assert len(failed) == 1 and _tags(failed[0]) == ["hw-starter-1a"], "应当停在第一个检查器"
    first = nb.cells.index(failed[0])
    later = nb.cells[first + 1:]
    assert all(not c.get("outputs") for c in later if c.cell_type == "code"), "出错后不应再往下运行"


def test_notebook_with_reference_answers_runs_clean():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    answers = tool.solutions()
    for cell in nb.cells:
        for tag in _tags(cell):
            if tag.startswith("hw-starter-"):
                cell.source = answers[tag[len("hw-starter-"):]]
    done = _execute(nb)  # 任何单元出错都会抛 CellExecutionError
    confirmations = {}
    for cell in done.cells:
        for tag in _tags(cell):
            if tag.startswith("hw-starter-"):
                confirmations[tag] = _text_outputs(cell)
    assert set(confirmations) == {f"hw-starter-{n}" for n in STARTERS}
    for tag, text in confirmations.items():
        number = tag[len("hw-starter-")][0]
        assert f"✔ 作业 {number} 通过" in text, f"{tag} 没有通过：{text!r}"


# ---------------------------------------------------------------- 构建出的作业页

@pytest.fixture(scope="module")
def homework_html(built_book):
    path = built_book.html / "book" / "homework.html"
    return path, BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.mark.book
def test_homework_page_title_and_three_exercises(homework_html):
    _, soup = homework_html
    assert soup.find("h1").get_text(strip=True).startswith("作业")
    exercises = soup.select("div.exercise")
    assert [e.get("id") for e in exercises] == EXERCISE_LABELS
    titles = [e.select_one(".admonition-title").get_text(" ", strip=True) for e in exercises]
    for title, word in zip(titles, ["Attention score", "Causal mask", "FFN"]):
        assert word in title
    text = soup.get_text()
    assert "不要" in text or "别让" in text, "开头要说明 AI 的使用边界"
    assert "AI" in soup.select_one("article").get_text()[:400]


@pytest.mark.book
def test_solutions_are_collapsed_dropdowns_with_checker_confirmations(homework_html):
    _, soup = homework_html
    solutions = soup.select("div.solution")
    assert len(solutions) == 3
    for solution, n in zip(solutions, ("1", "2", "3")):
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
    for phrase in ("还没有求和", "转置（K@Q.T）", "用torch.tril而不是torch.triu", "先softmax、再把未来位置乘0",
                   "漏了偏置"):
        assert phrase in flat, f"页面上缺少检查器对典型错误的说明：{phrase}"


@pytest.mark.book
def test_download_link_resolves_to_the_student_notebook(homework_html):
    path, soup = homework_html
    links = [a["href"] for a in soup.select("a.download, a[download]") if "homework_student.ipynb" in a["href"]]
    links += [a["href"] for a in soup.select("a") if a.get("href", "").endswith("homework_student.ipynb")]
    assert links, "作业页上没有指向 homework_student.ipynb 的下载链接"
    target = (path.parent / unquote(urlsplit(links[0]).path)).resolve()
    assert target.is_file(), f"下载链接 {links[0]} 指向的文件不存在"
    assert _summary(nbformat.read(target, as_version=4)) == _summary(nbformat.read(NOTEBOOK, as_version=4))
