"""不发布过期输出：改了 src/minigpt 里的函数，下一次构建必须重新执行页面。

jupyter-cache 只看代码单元本身，页面的代码没变，它就会沿用旧输出；tools/build_book.py 用
包的摘要（执行键）来清空缓存。这里在一个临时副本里验证这一点。
"""

from __future__ import annotations

import uuid

import pytest

from support.book import MYST_NOTEBOOK_HEADER, make_mini_book, run_build

pytestmark = [pytest.mark.book, pytest.mark.kernel,  # 构建小书：每页启动一个内核，共用一个建好的字体缓存
              pytest.mark.usefixtures("shared_font_cache")]

PAGE = MYST_NOTEBOOK_HEADER + """
# 过期输出检查

```{code-cell} ipython3
from minigpt import data
print(data.encode("the cat sat"))
```
"""


def test_editing_the_package_reexecutes_pages(tmp_path):
    root = make_mini_book(tmp_path, {"stale": PAGE}, with_package=True)
    marker = f"STALE-CHECK-{uuid.uuid4().hex[:12]}"
    html = root / "_build" / "html" / "stale.html"

    first = run_build(root, timeout=900)
    assert first.returncode == 0, first.output[-4000:]
    assert "[0, 2, 4]" in html.read_text(encoding="utf-8")
    assert marker not in html.read_text(encoding="utf-8")

    # 改变包里一个函数打印的内容；页面本身一个字也不改
    data_py = root / "src" / "minigpt" / "data.py"
    data_py.write_text(
        data_py.read_text(encoding="utf-8")
        + f"\n\n_encode_before_edit = encode\n\n\ndef encode(words):\n"
        f"    print({marker!r})\n    return _encode_before_edit(words)\n",
        encoding="utf-8",
    )
    second = run_build(root, timeout=900)
    assert second.returncode == 0, second.output[-4000:]
    assert "已清空执行缓存" in second.output
    assert marker in html.read_text(encoding="utf-8"), "改了包，页面却还是旧输出"

    # 什么都不改再构建一次：输出不变，也不再清空缓存
    third = run_build(root, timeout=900)
    assert third.returncode == 0
    assert "已清空执行缓存" not in third.output
    assert marker in html.read_text(encoding="utf-8")
