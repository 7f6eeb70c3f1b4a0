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
