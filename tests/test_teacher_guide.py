"""「教师指南」的教学部分：每道练习都有参考答案，参考答案不进学生版网站，引用的诊断真实存在，交互图一张不漏，
第 7 节练习的参考答案（要训练模型，不在构建时算）句句属实。

参考答案藏在 sphinx-exercise 的 solution-start … solution-end 里，学生版网站（tools/build_book.py --student）
由 book/_ext/book_exercises.py 把它们整块去掉，和作业页的参考答案同一个机制。
"""

from __future__ import annotations

import ast
import html
import re
import sys
import zipfile
from pathlib import Path

import pytest

from support.book import REPO
from support.pagekit import soup

sys.path.insert(0, str(REPO / "book" / "_ext"))
sys.path.insert(0, str(REPO / "tools"))
import book_exercises  # noqa: E402
import dist  # noqa: E402

GUIDE = REPO / "book" / "teacher_guide.md"
SECTIONS = ("s1_intuition", "s2_scaled_dot_product", "s3_causal_mask", "s4_multi_head", "s5_ffn", "s6_block",
            "s7_trained_heads", "appendix_rnn")


def guide() -> str:
    return GUIDE.read_text(encoding="utf-8")


def section_exercises() -> dict[str, int]:
    """每一节末尾“## 练习”下的题数（编号的列表项）；没有这一段的（附录）是 0。"""
    counts = {}
    for name in SECTIONS:
        page = (REPO / "book" / f"{name}.md").read_text(encoding="utf-8")
        part = page.split("\n## 练习\n", 1)
        if len(part) == 1:
            counts[name] = 0
            continue
        body = re.split(r"\n#{1,2} ", part[1], maxsplit=1)[0]
        counts[name] = len(re.findall(r"^\d+\. ", body, re.M))
    return counts


def test_every_exercise_at_the_end_of_a_section_has_a_model_answer_and_a_rubric_in_the_guide():
    counts = section_exercises()
    assert sum(counts.values()) >= 13 and counts["appendix_rnn"] == 0, counts
    text = guide()
    labels = re.findall(r"```\{exercise\}[^\n]*\n:label: (tg-ex-s(\d)-(\d))\n", text)
    want = {f"tg-ex-s{name[1]}-{i}" for name, n in counts.items() if n for i in range(1, n + 1)}
    assert {label for label, _, _ in labels} == want
    for label in want:
        block = text.split(f"```{{solution-start}} {label}\n", 1)[1].split("```{solution-end}", 1)[0]
        assert "参考答案" in block and "评分（4 分）" in block, label
        points = [int(p) for p in re.findall(r"^- (\d) 分：", block, re.M)]
        assert sum(points) == 4, (label, points)


def test_the_student_edition_strips_every_model_answer_from_the_guide_source():
    """学生版网站复制的 .md 源文件经 strip_solutions 改写：参考答案、评分标准和算答案的代码都不剩。"""
    text = guide()
    stripped = book_exercises.strip_solutions(text)
    assert stripped.count(book_exercises.HIDDEN_NOTE) == text.count("```{solution-start}") >= 13
    for gone in ("参考答案：", "评分（4 分）", "glue(\"tg_", "{glue:text}`tg_", "def pre_ln"):
        assert gone in text and gone not in stripped, gone
    # 练习的题目本身（不是答案）留着
    assert stripped.count("```{exercise}") == text.count("```{exercise}")


def _cited() -> list[tuple[str, str]]:
    """诊断表里引用的 (学生看到的提示开头, 诊断名)。"""
    return re.findall(r"「([^」]+)」[^（「]*（`([a-z_]+)`）", guide())


def test_every_cited_diagnosis_exists_and_quotes_what_the_student_sees():
    homework = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "src" / "minigpt" / "homework").glob("*.py"))
    cited = _cited()
    assert len(cited) >= 40
    for quote, name in cited:
        assert f'"{name}"' in homework, f"没有这条诊断：{name}"
        for piece in quote.split("…"):
            piece = piece.strip(" ，")
            assert piece in homework, f"{name}：学生看到的提示里没有「{piece}」"
    # 表格“主要的诊断”一栏里的名字也都存在
    table = guide().split("(tg-homework)=", 1)[1].split("(tg-interactive)=", 1)[0]
    names = [n for cell in re.findall(r"^  - (`[a-z_]+`(?:、`[a-z_]+`)+)$", table, re.M)
             for n in re.findall(r"`([a-z_]+)`", cell)]
    assert len(names) >= 30
    for name in names:
        assert f'"{name}"' in homework, name


def test_the_english_guide_quotes_the_english_hints():
    """英文版的诊断表引用英文提示：每个“…”里的文字都是 code.po 里某条译文的一部分。"""
    from babel.messages.pofile import read_po

    with open(REPO / "locale" / "en" / "LC_MESSAGES" / "code.po", "rb") as f:
        english = "\n".join(m.string for m in read_po(f) if m.id)
    with open(REPO / "locale" / "en" / "LC_MESSAGES" / "book" / "teacher_guide.po", "rb") as f:
        rows = [m.string for m in read_po(f) if m.id and "「" in m.id and "（`" in m.id]
    # 引用的提示紧跟着诊断的名字：“…”（`name`）；正文里写直引号（locale/en/STYLE.md：构建时印成弯引号）
    quotes = [q for row in rows for q in re.findall(r'[“"]([^”"]+)[”"] \(`', row)]
    assert len(quotes) >= 40
    for quote in quotes:
        for piece in quote.split("…"):
            piece = piece.strip(" ,")
            assert piece in english, f"英文提示里没有 “{piece}”"


def test_every_interactive_figure_of_the_book_is_in_the_guides_table():
    names = set()
    for page in (REPO / "book").glob("*.md"):
        text = page.read_text(encoding="utf-8")
        for key in re.findall(r'glue\("(\w+)", interactive\.\w+\(', text):
            names.add(re.search(r"\{glue:figure\} " + key + r"\n:name: ([\w-]+)", text).group(1))
    assert len(names) >= 6
    section = guide().split("(tg-interactive)=", 1)[1].split("\n## ", 2)[1]
    assert {n for n in names if f"{{numref}}`{n}`" in section} == names


def _answer_texts(page: Path) -> set[str]:
    """整本书网站上教师指南的参考答案（div.solution）里的文字片段：标签之间、至少 12 个字符、带汉字的那些
    （它们在网页源文件里原样出现，和作业页的指纹一样能在任何文本文件里查找）。"""
    found = set()
    for box in soup(page).select("div.solution"):
        for piece in box.find_all(string=True):
            piece = piece.strip()
            if len(piece) >= 12 and re.search(r"[\u4e00-\u9fff]", piece):
                found.add(piece)
    return found


@pytest.mark.book
def test_the_student_site_has_none_of_the_guides_model_answers(built_book, student_site):
    from test_site_student import found

    texts = _answer_texts(built_book.html / "book" / "teacher_guide.html")
    # 其他页面（正文、作业页）里、或者指南自己在参考答案之外也有的片段（例如引用某一节标题的链接文字）
    # 不算参考答案的指纹
    others = "\n".join(html.unescape(p.read_text(encoding="utf-8")) for p in (built_book.html / "book").glob("*.html")
                       if p.name != "teacher_guide.html")
    guide_page = soup(built_book.html / "book" / "teacher_guide.html")
    for box in guide_page.select("div.solution"):
        box.decompose()
    others += "\n" + "\n".join(s.strip() for s in guide_page.find_all(string=True))
    fingerprints = {s for s in texts if s not in others}
    assert len(fingerprints) >= 100
    full = found(built_book.html, fingerprints)
    assert set().union(*full.values()) == fingerprints and "book/teacher_guide.html" in full
    assert found(student_site.html, fingerprints) == {}
    student = soup(student_site.html / "book" / "teacher_guide.html")
    assert student.select("div.solution") == []
    notes = [p.get_text(strip=True) for p in student.select("article p.solution-hidden")]
    assert notes == [book_exercises.HIDDEN_NOTE] * guide().count("```{solution-start}")
    # 练习的题目留在学生版里
    assert len(student.select("div.exercise")) == guide().count("```{exercise}")


@pytest.mark.slow
def test_the_model_answer_for_seeds_6_and_7_in_section_7_holds():
    """第 7 节练习 1 的参考答案（种子 6、7，与页面的种子 0–5 比）：页面填进去的数之外，答案里每一句结论。
    训练结果与构建时存下的逐位相同（heads_cases 读 _build/.trained，没有就训练）。"""
    from support import heads_cases as C
    from minigpt.claims import claim_counts
    from minigpt.seeds import ROLE

    page = {s: st.facts for s, st in C.studies().items()}
    new = {s: st.facts for s, st in C.studies((6, 7)).items()}
    six, seven = new[6], new[7]
    # 种子 6：分层不变，头的编号变了
    assert six["prev"] > ROLE > six["prev_other"]
    assert six["ind2_min"] > ROLE and six["ind1_max"] < ROLE and six["prev2_max"] < ROLE
    assert six["prev_head"] != page[0]["prev_head"]
    # 种子 7：八个分数没有一个过门槛，能抄位置的损失比页面上每个种子都高
    assert max(seven["prev"], seven["prev2_max"], seven["ind1_max"], seven["ind2_max"]) < ROLE
    assert seven["copy"] > max(f["copy"] for f in page.values())
    # 归纳分数：种子 6 在页面的范围里，种子 7 在它下面
    lo = min(f["ind2_min"] for f in page.values())
    hi = max(f["ind2_max"] for f in page.values())
    assert lo <= six["ind2_min"] and six["ind2_max"] <= hi and seven["ind2_max"] < lo
    # 成形的时间：页面的种子里，“至多差 25 步”和“紧挨着陡降”都是每个种子成立，“同一个副本”不是；
    # 种子 6 的归纳分数在陡降的 25 步结束时过门槛，前一个 token 分数更晚
    counts = claim_counts(page)
    assert counts["next_window"] == counts["at_steepest_drop"] == len(page) > counts["same_window"]
    assert six["step_ind"] == six["fast_to"] < six["step_prev"]
    # “前一个 token 分数……落在这段时间之外”：陡降的 25 步和紧接着的 25 步里都没有它
    from minigpt.claims import SNAPSHOT_EVERY
    assert six["step_prev"] > six["fast_to"] + SNAPSHOT_EVERY
    assert claim_counts(new)["same_window"] == claim_counts(new)["at_steepest_drop"] == 0


@pytest.mark.book
def test_the_guide_links_the_student_site_zip_at_the_site_root_in_both_editions(built_book, student_site):
    """两种语言的教师指南都链接网站根目录上同一个学生版网站 zip（make html 放在那里）；学生版网站自己没有它，
    那里只印链接文字。"""
    name = dist.student_site_on_site()
    pages = {"../": built_book.html / "book" / "teacher_guide.html",
             "../../": built_book.html / "en" / "book" / "teacher_guide.html"}
    for up, page in pages.items():
        assert [a["href"] for a in soup(page).select("a.book-student-site-link")] == [up + name], page
    student = student_site.html
    for page in (student / "book" / "teacher_guide.html", student / "en" / "book" / "teacher_guide.html"):
        assert soup(page).select("a.book-student-site-link") == [], page
        assert name not in page.read_text(encoding="utf-8")


@pytest.mark.book
def test_the_published_student_site_zip_holds_both_editions_and_is_rewritten_only_when_it_changes(
        student_site, tmp_path):
    target = dist.publish_student_site(student_site.html, tmp_path)
    assert target == tmp_path / dist.student_site_on_site()
    with zipfile.ZipFile(target) as zf:
        names = set(zf.namelist())
    top = next(iter(names)).split("/")[0]
    for page in ("index.html", "book/teacher_guide.html", "en/index.html", "en/book/teacher_guide.html"):
        assert f"{top}/{page}" in names
    stamp = target.stat().st_mtime_ns
    assert dist.publish_student_site(student_site.html, tmp_path) == target
    assert target.stat().st_mtime_ns == stamp  # 内容没变：make html 再运行一次不改动网站


def test_the_units_total_workload_is_computed_from_the_same_estimates_the_sections_state():
    """“一个两周的单元”里的总量由一个代码单元的三张表算出；表里的每个数都是某一节“时间（估计）”一行写的数
    （改了那一行而没改表，这里失败），每一节、每道作业都在表里。"""
    text = guide()
    cell = re.search(r"READ_MINUTES = (\{.*?\})\nEXERCISE_MINUTES = (\{.*?\})\nASSIGNMENT_MINUTES = (\{.*?\})\n", text)
    assert cell, "找不到单元总量的代码单元"
    read, exercises, assignments = (ast.literal_eval(group) for group in cell.groups())
    stated_read, stated_ex, stated_hw = {}, {}, {}
    for number, name in enumerate(SECTIONS[:7], start=1):
        part = text.split(f"(tg-s{number})=", 1)[1].split("\n(tg-", 1)[0]
        line = re.search(r"^时间（估计）：(.*)$", part, re.M).group(1)
        stated_read[number] = int(re.search(r"读并运行约 (\d+) 分钟", line).group(1))
        stated_ex[number] = int(re.search(r"练习(?:合计)?约 (\d+) 分钟", line).group(1))
        stated_hw.update({int(a): int(m) for a, m in re.findall(r"作业 (\d) 约 (\d+) 分钟", line)})
    assert (read, exercises, assignments) == (stated_read, stated_ex, stated_hw)
    assert sorted(assignments) == [1, 2, 3, 4, 5]


def test_the_guide_prints_the_exact_wheel_file_name_of_its_own_homework_bundle(built_site):
    """r36t2 第 6 条：批改的安装命令写出作业包里 wheel 的全名（英文版的带 +en），不留 <版本> 让老师自己填。"""
    import minigpt

    for prefix, version in (("", minigpt.__version__), ("en/", f"{minigpt.__version__}+en")):
        wheel = f"minigpt_book-{version}-py3-none-any.whl"
        page = soup(built_site.html / prefix / "book" / "teacher_guide.html")
        blocks = [pre.get_text() for pre in page.find_all("pre")]
        assert any(f'pip install "{wheel}[grade]"' in b and "torch==" in b for b in blocks), prefix
        assert not any("minigpt_book-<" in b for b in blocks), prefix
        text = page.get_text()
        assert "<版本>-py3" not in text and "<version>-py3" not in text and "<version>+en" not in text, prefix
        with zipfile.ZipFile(built_site.html / prefix / "minigpt-homework.zip") as zf:
            assert f"minigpt-homework/{wheel}" in zf.namelist(), (prefix, zf.namelist())


def test_the_guide_says_what_the_probes_signature_does_not_stop_in_both_languages():
    """r36c F2：指南说签名的密钥“只有批改程序知道”，学生的代码打印或改写的行“都不算数”。五六行代码就能拿到
    探针的签名（密钥在学生的进程里）：指南要说签名挡住什么、挡不住什么，以及伪造为什么换不来分数。"""
    from babel.messages.pofile import read_po

    text = GUIDE.read_text(encoding="utf-8")
    assert "只有批改程序知道的密钥" not in text
    assert "签名也有挡不住的" in text and "换不来正常作答拿不到的分数" in text
    with open(REPO / "locale" / "en" / "LC_MESSAGES" / "book" / "teacher_guide.po", "rb") as f:
        english = " ".join(m.string for m in read_po(f) if m.id and m.string)
    assert "a key only the grader knows" not in english
    assert "The signature has its limits too" in english and "earns no points that honest work would not" in english


def test_the_guide_gives_the_exit_code_of_an_internal_error_the_cli_returns():
    """r36c F1：批改某一份时批改程序自己出错，其余照常批改、退出码 2（test_grading_report 核对命令行真是这样）。"""
    text = GUIDE.read_text(encoding="utf-8")
    assert "批改程序内部出错" in text and "最后退出码是 2" in text
