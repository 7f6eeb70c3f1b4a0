"""Gradescope 的自动批改程序 zip：网站根目录的 ``minigpt-autograder.zip``（Sphinx 扩展，在 _config.yml 的
local_extensions 里登记；「教师指南」的「在 Gradescope 上批改」一节链接它）。

配置做不到：zip 里要有这一版的 wheel（作业包用的那一个，``homework_bundle.site_wheel``），以及由
``minigpt.grading.gradescope`` 写出的 setup.sh 与 run_autograder。英文版的书构建时导入的是英文的 minigpt
（PYTHONPATH 指向英文版的 src），所以英文网站上的 zip 带英文的 wheel（+en）和英文的说明。
HTML 构建成功、书里有作业页时才写；书里没有 src/minigpt（测试用的小书）时什么都不做。
"""

from __future__ import annotations

from pathlib import Path

AUTOGRADER = "minigpt-autograder.zip"
HOMEWORK_DOC = "book/homework"


def torch_pin(root: Path) -> str:
    """requirements.lock 里 torch 的版本（去掉 +cpu 之类的本地标签）：setup.sh 装同一个版本。"""
    for line in (root / "requirements.lock").read_text(encoding="utf-8").splitlines():
        if line.startswith("torch=="):
            return line.split("==", 1)[1].split("+")[0].strip()
    raise RuntimeError(f"{root / 'requirements.lock'} 里没有 torch==…")


def write_autograder(app, exception) -> None:
    if exception is not None or app.builder.format != "html" or HOMEWORK_DOC not in app.env.found_docs:
        return
    from sphinx.util import logging

    from homework_bundle import site_wheel   # 同目录的本地扩展

    root = Path(app.confdir)
    try:
        wheel = site_wheel(app)
        if wheel is None:
            return
        from minigpt.grading.gradescope import build_zip

        build_zip(wheel, torch_pin(root), Path(app.outdir) / AUTOGRADER)
    except (OSError, RuntimeError) as err:
        logging.getLogger(__name__).warning(f"[autograder_bundle] 没能生成 {AUTOGRADER}：{err}")


def setup(app) -> dict:
    app.connect("build-finished", write_autograder, priority=600)   # 在作业包（默认 500）之后：wheel 已经打好
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
