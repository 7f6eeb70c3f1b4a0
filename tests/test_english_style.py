"""英文版的文风：locale/en/STYLE.md 里机器看得出的那部分。

逐条核对英文目录（locale/en/LC_MESSAGES/ 下每页一个 .po，以及代码里的人话 code.po）：

- 美式拼写（-ize、labor、judgment、gray……），不用英式写法；
- 不用翻译腔的译法：交出不译 hand over / hand out，取回不译 take back，模型的任务是 predict 不是 guess
  （"random guessing" 这个基线、检查器 "does not guess" 除外），正文不叫 main text；
- 破折号是不带空格的 em dash（不用 " - "），数字范围用 en dash（1–3，不用 1-3）；
- 术语一个概念一个写法（heatmap、Boolean、multi-head、feed-forward、LayerNorm、sublayer……）；
- 标题（页面的各级标题、练习与提示框的标题、目录的分组名）用 sentence case：只有第一个词、冒号后的第一个词、
  专有名词和几个固定大写的术语首字母大写；
- 不把三四个分句用分号串成一句（列表除外：分号前有冒号引出的是列表）；
- 编号的东西写全称（Figure、Equation，不写 Fig.、eq.），写 "Let us" 不写 "let's"，乘号两边有空格（3 × 3），
  短列表不加 serial comma（Q, K and V），正文用直引号（构建时自动变成弯引号），标题与框的标题用弯引号，
  逗号与句号放在后引号里面（美式）。

每条规则先在植入了错误的文字上证明它抓得住（test_each_rule_catches_a_planted_error），再要求真实的目录里一条都没有。
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import i18n  # noqa: E402

# ---- 规则 -------------------------------------------------------------------------------------------

def prose_only(text: str) -> str:
    """去掉不是英文散文的部分：公式、行内代码、MyST 角色、链接目标、HTML 标签。"""
    text = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", "MATH", text, flags=re.S)
    text = re.sub(r"\{[a-z][a-z:-]*\}`[^`]*`", "ROLE", text)
    text = re.sub(r"``[^`]*``|`[^`]*`", "CODE", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"<[^<>\n]+>", " ", text)
    return text


BRITISH = [  # (英式写法, 美式写法)
    (r"\b(\w+?)is(e|es|ed|ing|ation|ations)\b", None),  # -ise 动词，下面的 NOT_ISE 排除普通词
    (r"\blabour", "labor"), (r"\bjudgement", "judgment"), (r"\bcolour", "color"), (r"\bbehaviour", "behavior"),
    (r"\bneighbour", "neighbor"), (r"\bfavour", "favor"), (r"\bcentre", "center"), (r"\bmodelling", "modeling"),
    (r"\blabelled", "labeled"), (r"\btravelled", "traveled"), (r"\bgrey\b", "gray"), (r"\btowards\b", "toward"),
    (r"\banalyse", "analyze"), (r"\bcatalogue", "catalog"), (r"\blearnt\b", "learned"), (r"\bwhilst\b", "while"),
    (r"\bamongst\b", "among"),
]
NOT_ISE = {  # 以 -ise 结尾、本来就这样拼的词的词干
    "ra", "otherw", "prec", "prom", "exerc", "no", "r", "ar", "conc", "w", "likew", "adv", "rev", "dev", "surpr",
    "compr", "comprom", "prem", "pra", "expert", "parad", "franch", "po", "cru", "appr", "advert", "improv",
    "enterpr", "merchand", "vert", "ch", "tw", "den", "mort", "n", "d", "b", "precis", "concis", "wis", "fore",
    "exorc", "rai", "upra", "pra", "la", "chem", "s", "t", "cl", "pa", "l", "v", "m",
}

FORBIDDEN = [  # (写法, 为什么、改成什么)
    (r"\bhand(s|ed|ing)? (over|out)\b", "交出译作 returns / outputs / passes on，不是 hand over / hand out"),
    (r"\b(take|takes|taken|taking|took) back\b", "取回译作 retrieve（take back 是“收回”）"),
    (r"(?<!random )(?<!at random )\bguess(es|ed|ing)?\b(?<!does not guess)", "模型的任务是 predict，不是 guess"),
    (r"\bmain text\b", "正文不译 main text：the text、the sections"),
    (r"\bGPT's homework\b", "GPT 的训练任务是 training task，不是 homework"),
    (r"\bthe attention mechanism of the main\b", "attention，不是 the attention mechanism"),
    (r"\b(Fig|fig|Eq|eq|Eqs|eqs)\.(?=\s)", "编号的图与公式写全称：Figure 2.1、Equation (2.3)"),
    (r"\b[Ll]et's\b(?! build)", "写 Let us，不写 let's（引用的标题照原样）"),
    (r"\bno standard answers?\b", "开放的练习 have no single right answer"),
]

FORMS = [  # 散文与代码里的人话都查（图上的字在 code.po 里）
    (r"(?<=\d)×|×(?=\d)", "乘号两边各有一个空格：3 × 3"),
]

PROSE_FORMS = [  # 只查页面的散文（弯引号那条不查标题：标题本来就写弯引号）
    (r"(?<![\w-])(\w+|CODE|MATH|ROLE), ((?!MATH\b)\w+|CODE|ROLE), (and|or) ", "短列表不加 serial comma：Q, K and V"),
    (r"[“”]", "正文写直引号（构建时的 smart quotes 把它印成弯引号）；弯引号只用在标题与框的标题里"),
    (r"(?<=[^\s(\[{=])[\"”][.,]", "美式标点：逗号与句号放在后引号里面（\"the cat sat,\" 不写 \"the cat sat\",）"),
]

DASHES = [
    (r"(?<=[A-Za-z.,;)\]]) - (?=[A-Za-z(\[])", "破折号写作不带空格的 em dash（—），不是 \" - \""),
    (r"(?<=\w) -- (?=\w)", "破折号写作不带空格的 em dash（—），不是 \" -- \""),
    (r"(?<=\w) — |(?<=\w)— | —(?=\w)", "em dash 两边不加空格"),
    (r"(?<![\w.-])(?!\d{4}-\d\d-\d\d)\d{1,3}-\d{1,3}(?![\w-])", "数字范围用 en dash（1–3），不用连字符"),
    (r"\b(Sections?|Assignments?|Equations?|Figures?|Tables?|pages?|steps?) \d+ ?[-–] ?\d+ ?[-–]", "范围写错了"),
    (r"\b(Sections?|Assignments?|steps?|positions?|layers?) \d+ - \d+\b", "数字范围用不带空格的 en dash（1–3）"),
]

TERMS = [  # (别的写法, 本书用的写法)
    (r"\bheat[ -]maps?\b", "heatmap"), (r"\bHeat[ -]maps?\b", "Heatmap"),
    (r"(?<![`.\w])boolean\b", "Boolean"),
    (r"\bfeed ?forward network", "feed-forward network"), (r"\bfeed forward\b", "feed-forward"),
    (r"\bmulti ?head attention\b", "multi-head attention"), (r"\bMulti ?head attention\b", "Multi-head attention"),
    (r"\b[Ll]ayer [Nn]orm\b|\bLayernorm\b|(?<![`.\w])layernorm\b", "LayerNorm"),
    (r"\bsub-layers?\b", "sublayer"), (r"\b[Tt]ransformer block", "Transformer Block（或小写的 block）"),
    (r"\bpre-LN\b|\bpost-LN\b", "Pre-LN / Post-LN"), (r"\bself attention\b", "self-attention"),
    (r"\bscaled dot product attention\b", "scaled dot-product attention"),
    (r"\bThink About It\b", "Think about it"), (r"\bminibatch", "batch"),
]


def sentence_problems(text: str) -> list[str]:
    """一句话里两个以上的分号，而且不是冒号引出的列表：改成几句。"""
    out = []
    prose = prose_only(text)
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(*\"])|\n", prose):
        if sentence.lstrip().startswith("**") and sentence.count(";") and "**" in sentence.split(";")[1]:
            continue  # 术语表里 “**英文** …；**符号** …” 这样的字段列表
        if sentence.count(";") >= 2 and ":" not in sentence.split(";")[0]:
            out.append(f"一句里 {sentence.count(';')} 个分号（拆成几句）：{sentence.strip()[:90]}")
    return out


def text_problems(text: str, *, prose: bool, heading: bool = False) -> list[str]:
    """一条译文里机器看得出的文风问题。prose：页面正文（还要查破折号与分号）；否则是代码里的人话。
    heading：这条是标题（标题里的引号照 heading_problems 的规矩写弯的）。"""
    clean = prose_only(text)
    found = []
    for pattern, right in BRITISH:
        for m in re.finditer(pattern, clean, re.I):
            if right is None:
                if m.group(1).lower() in NOT_ISE or len(m.group(1)) < 3 or m.group(1).endswith("w"):
                    continue
                found.append(f"英式拼写 {m.group(0)!r}：用 -ize")
            else:
                found.append(f"英式拼写 {m.group(0)!r}：用 {right}")
    for pattern, why in FORBIDDEN:
        for m in re.finditer(pattern, clean, re.I):
            if "does not guess" in clean[max(0, m.start() - 9):m.end()]:
                continue
            found.append(f"{m.group(0)!r}：{why}")
    for pattern, right in TERMS:
        found += [f"{m.group(0)!r}：本书写作 {right}" for m in re.finditer(pattern, clean)]
    for pattern, why in FORMS:
        found += [f"{m.group(0)!r}：{why}" for m in re.finditer(pattern, clean)]
    if prose:
        for pattern, why in PROSE_FORMS[:1] if heading else PROSE_FORMS:
            found += [f"{m.group(0)!r}：{why}" for m in re.finditer(pattern, clean)]
        for pattern, why in DASHES:
            found += [f"{m.group(0)!r}：{why}" for m in re.finditer(pattern, clean)]
        found += sentence_problems(text)
    return found


ALWAYS_CAPITALIZED = {
    "Query", "Queries", "Key", "Keys", "Value", "Values", "LayerNorm", "RMSNorm", "Pre-LN", "Post-LN",
    "Transformer", "GPT", "GPT's", "RNN", "RNNs", "RNN's", "FFN", "FFN's", "PyTorch", "PyTorch's",
    "Python", "BERT", "ReLU", "GELU", "Add", "Norm", "Chinese", "English", "Section", "Assignment", "Edition",
    "I", "X", "Q", "K", "V", "MATH", "CODE", "ROLE", "Mini-GPT", "GPT-2", "GPT-3", "HuggingFace", "nanoGPT",
    "Gradescope",
}


def heading_problems(title: str) -> list[str]:
    """标题的大小写：sentence case。第一个词、冒号（或问号）后的第一个词、专有名词与固定大写的术语以外，
    词首不大写（单个大写字母、全大写的缩写、带数字的名字照旧）；Block 只在术语 Transformer Block 里大写。"""
    bad = []
    first, prev = True, ""
    for word in re.findall(r"[A-Za-z][\w'’-]*|[:?!]", prose_only(title)):
        if word in ":?!":
            first = True
            continue
        if first:
            first, prev = False, word
            continue
        allowed = word.replace("’", "'") in ALWAYS_CAPITALIZED or word.isupper() or bool(re.search(r"\d", word))
        if word == "Block":
            allowed = prev == "Transformer"
        if word[0].isupper() and not allowed:
            bad.append(word)
        prev = word
    out = [f"标题用 sentence case，这些词不该大写：{', '.join(dict.fromkeys(bad))}（{title}）"] if bad else []
    if re.search(r"['\"]", prose_only(title)):  # 解答框的标题照抄练习的标题而不经 smart quotes：写弯引号
        out.append(f"标题里写弯引号与弯撇号（“ ” ’）：{title}")
    return out


# ---- 从中文源文件找出标题 ----------------------------------------------------------------------------

def page_headings(path: Path) -> list[str]:
    """一页里的标题（中文）：Markdown 的各级标题（代码单元与代码块里的 # 注释不算），练习与提示框的标题。"""
    heads = []
    fences: list[str] = []  # 打开着的围栏（``` 或 :::，可以嵌套）
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\s*(`{3,}|:{3,})\s*(\{([a-z-]+)\})?\s*(.*)$", line)
        if m and (m.group(2) or m.group(4)):  # 开一个围栏（``` 后面跟着指令或语言）
            if not fences and m.group(3) in ("exercise", "admonition") and m.group(4):
                heads.append(m.group(4).strip())
            fences.append(m.group(1))
            continue
        if m and fences and m.group(1)[0] == fences[-1][0] and len(m.group(1)) >= len(fences[-1]):
            fences.pop()
            continue
        if m and not fences:  # 不带语言的 ``` 代码块
            fences.append(m.group(1))
            continue
        h = re.match(r"^#{1,6}\s+(.+?)\s*$", line)
        if h and not fences:
            heads.append(h.group(1))
    return heads


def catalogs() -> dict[str, dict[str, str]]:
    folder = i18n.locale_dir(REPO)
    out = {p.stem: i18n.translations(p) for p in sorted((folder / "book").glob("*.po"))}
    out["code"] = i18n.translations(folder / "code.po")
    return out


def english_headings() -> list[tuple[str, str]]:
    """[(页面, 英文标题)]：各页的标题，以及 _toc.yml 里目录分组的名字（在 code.po 里）。"""
    cats = catalogs()
    out = []
    for page in sorted((REPO / "book").glob("*.md")):
        done = cats.get(page.stem, {})
        for head in page_headings(page):
            if head in done:
                out.append((page.stem, done[head]))
    toc = i18n.read_catalog(i18n.locale_dir(REPO) / "code.po")
    out += [("_toc.yml", m.string) for m in toc if m.id and any(loc[0] == "_toc.yml" for loc in m.locations)]
    return out


BOOK_TITLE = "The Attention Mechanism and the Transformer Block"  # 书名（封面、根页面）照书名的规矩首字母大写


# ---- 测试 ------------------------------------------------------------------------------------------

PLANTED = [
    ("The weights are normalised before use.", "英式拼写"),
    ("the division of labour between heads", "英式拼写"),
    ("a matter of judgement", "英式拼写"),
    ("what a token hands over once found", "hand over"),
    ("the tensor a block hands out", "hand over"),
    ("Content is taken back in proportion.", "retrieve"),
    ("position i must guess the token at i+1", "predict"),
    ("the attention of the main text", "main text"),
    ("Rebuild it - with the same seed - and compare.", "em dash"),
    ("the end of Sections 1-6", "en dash"),
    ("a heat map of the weights", "heatmap"),
    ("a boolean mask", "Boolean"),
    ("the multihead attention layer", "multi-head attention"),
    ("see Think About It below", "Think about it"),
    ("first this; then that; then the other thing.", "分号"),
    ("as Fig. 2.1 shows", "Figure"),
    ("by eq. (2.3)", "Figure 2.1、Equation"),
    ("Let's measure it.", "Let us"),
    ("a 3×3 table", "乘号"),
    ("it projects into Q, K, and V", "serial comma"),
    ("the token “cat”", "直引号"),
    ("These exercises have no standard answer.", "single right answer"),
    ('Take the sentence "the cat sat".', "美式标点"),
    ('it says "I can be a subject", and', "美式标点"),
]


@pytest.mark.parametrize("text, what", PLANTED)
def test_each_rule_catches_a_planted_error(text, what):
    found = text_problems(text, prose=True)
    assert any(what in p for p in found), (text, found)


@pytest.mark.parametrize("text", [
    "The weights are normalized; the loss of random guessing is ln 10.",
    "If no row matches, the checker does not guess.",
    "Exercises are precise, and the noise is likewise small.",
    "Edition 4 (2026-12-05) covers Sections 1–6—and the `nn.MultiheadAttention` argument `is_boolean`.",
    "It computes $x - \\mu$ and `t - 1`, a Boolean mask and a heatmap.",
    "The parts, in order: attention; the causal mask; several heads; and the FFN.",
    "See Figure 2.1 and Equation (2.3); let us measure a 3 × 3 table of Q, K and V.",
    "Karpathy's video *Let's build GPT* has no single right answer.",
    "Assembling a block, LayerNorm and the residual path, and Section 7's figure.",
    'Take the sentence "the cat sat." It says "I can be a subject," and `print("a", "b")`.',
])
def test_correct_english_passes(text):
    assert text_problems(text, prose=True) == []


@pytest.mark.parametrize("title, ok", [
    ("Step 4: Retrieve content by the weights", True),
    ("Step 4: Take Back Content According to the Shares", False),
    ("What is inside a block", True),
    ("What Is Inside a Block", False),
    ("The Transformer Block: Connecting attention and the FFN", True),
    ("Query, Key and Value: Two for matching, one for content", True),
    ("Say Again What You Have Seen", False),
    ("Each head scales by its own $\\sqrt{d_k}$, and all heads share one mask matrix", True),
    ("New in this book: LayerNorm and the Post-LN block", True),
    ("New in this book: LayerNorm and the Post-LN Block", False),
    ("Counting the FFN’s parameters", True),
    ("Counting the FFN's parameters", False),
    ("Why the two “the” tokens differ", True),
    ('Why the two "the" tokens differ', False),
])
def test_heading_case_rule(title, ok):
    assert (heading_problems(title) == []) == ok, heading_problems(title)


def test_the_heading_finder_skips_code_comments(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# 标题\n\n```{code-cell} ipython3\n# 注释\nx = 1\n```\n\n## 小节\n\n"
                    ":::{admonition} 答案\n内容\n:::\n\n```{exercise} 练习题\n题目\n```\n", encoding="utf-8")
    assert page_headings(page) == ["标题", "小节", "答案", "练习题"]


def test_english_catalogs_follow_the_style_sheet():
    problems = []
    headings = {title for _page, title in english_headings()}
    for name, done in catalogs().items():
        for msgid, text in done.items():
            if text == msgid:
                continue  # 原样照搬的消息（独立成行的公式、代码名）不是英文散文
            problems += [f"{name}: {p}" for p in text_problems(text, prose=name != "code", heading=text in headings)]
    assert not problems, f"{len(problems)} 处不合 locale/en/STYLE.md：\n" + "\n".join(problems[:60])


def test_english_headings_are_in_sentence_case():
    heads = english_headings()
    assert len(heads) > 100, f"只找到 {len(heads)} 个标题：标题的提取坏了"
    problems = [f"{page}: {p}" for page, title in heads if title != BOOK_TITLE for p in heading_problems(title)]
    assert not problems, "\n".join(problems)


# ---- 页面以外的英文：编号、页脚、目录分组、文献 ---------------------------------------------------------

def english_build_config() -> dict:
    import yaml

    config = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))
    return i18n.english_config(config, i18n.Translator(REPO))


def test_the_english_build_names_figures_in_full():
    """英文的 {numref} 印 “Figure 2.1”、“Table 6.1”（Sphinx 的英文默认是 “Fig. 2.1”）。"""
    formats = english_build_config()["sphinx"]["config"]["numfig_format"]
    assert formats["figure"] % "2.1" == "Figure 2.1" and formats["table"] % "6.1" == "Table 6.1"


def test_the_footer_links_the_license_deed_in_the_readers_language():
    import jinja2

    template = jinja2.Template((REPO / "book" / "_ext" / "templates" / "book-license.html").read_text(encoding="utf-8"))
    english, chinese = (template.render(language=lang, copyright="2026") for lang in ("en", "zh_CN"))
    assert "by-sa/4.0/deed.en\"" in english and "deed.zh-hans" not in english
    assert "by-sa/4.0/deed.zh-hans\"" in chinese


def test_sidebar_captions_are_the_style_sheets():
    toc = i18n.Translator(REPO)
    import yaml

    parts = toc.yaml_text(yaml.safe_load((REPO / "_toc.yml").read_text(encoding="utf-8")), "_toc.yml")["parts"]
    assert [p["caption"] for p in parts] == ["Getting started", "Sections", "Review, appendix and assignments"]


def test_bibtex_titles_stay_as_published():
    """文献的标题不译（读者要按原标题检索）；其余含中文的字段（出版形式、备注）照常翻译。"""
    import i18n_text as tx

    source = "@misc{x,\n  title = {{中文标题}},\n  howpublished = {中文教程},\n}\n"
    assert [p.text for p in tx.bib_pieces(source)] == ["中文教程"]


def test_the_english_hints_say_this_number_for_one_number_and_stay_lower_case_after_a_colon():
    """r36c F9：score 只是一个数，英文却说 "Your numbers look rounded to 4 decimal places"；constant_offset 那句
    跟在 "Checking each element of S:" 后面，却以大写的 "Every" 开头。"""
    from minigpt.homework import hints

    tr = i18n.translations(i18n.locale_dir(REPO) / "code.po")
    for d in (0, 1, 4):
        one, many = hints.copied_hint(d, one=True), hints.copied_hint(d)
        assert one != many
    assert tr["这个数像是四舍五入到了 {d} 位小数"].startswith("This number looks rounded")
    assert tr["这个数像是四舍五入到了 1 位小数"] == "This number looks rounded to 1 decimal place"
    assert tr["这个数像是取了整（int(…) 或 round(…)）：这里的数一般是小数，"].startswith("This number")
    offset = next(v for k, v in tr.items() if k.startswith("每个数都比正确值多了同一个数"))
    assert offset.startswith("every number differs"), offset
