"""检查器和批改程序说到几个答案时的连法：中文“a、b 和 c”，英文版按英文的习惯“a, b and c”。"""

import pytest

from minigpt.homework.names import listing
from minigpt.homework.values import require
from minigpt.homework import HomeworkNotFilled


@pytest.mark.parametrize("names,said", [
    ([], ""), (["x"], "x"), (["heads", "merged"], "heads 和 merged"),
    (["w1_params", "w2_params", "total_params"], "w1_params、w2_params 和 total_params"),
])
def test_names_are_joined_with_and_before_the_last(names, said):
    assert listing(names) == said


def test_a_message_about_two_answers_names_both_joined_by_and():
    with pytest.raises(HomeworkNotFilled, match="^heads 和 merged 都还没有填写"):
        require(heads=None, merged=None, x=1)


def english_listing():
    """英文版的 listing：把 names.py 按 locale/en 的译文翻成英文，再执行它。"""
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(repo / "tools"))
    import i18n

    path = repo / "src" / "minigpt" / "homework" / "names.py"
    source = i18n.Translator(repo).file(path, "py", {})
    namespace: dict = {"__name__": "names_en"}
    exec(compile(source, "names_en.py", "exec"), namespace)
    return namespace["listing"]


@pytest.mark.parametrize("items,chinese,english", [
    (["8", "9"], "8 和 9", "8 and 9"),
    (["3", "12", "14", "23"], "3、12、14 和 23", "3, 12, 14 and 23"),
    (["0.08", "0.38", "0.92"], "0.08、0.38 和 0.92", "0.08, 0.38 and 0.92"),
    (["7"], "7", "7"),
])
def test_number_lists_read_as_each_language_writes_them(items, chinese, english):
    """正文里 glue 的一串数（种子、Block、位置）：中文“3、12 和 23”，英文“3, 12 and 23”（没有连续逗号）。"""
    assert listing(items) == chinese
    assert english_listing()(items) == english
