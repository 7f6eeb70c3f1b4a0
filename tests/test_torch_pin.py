"""教师指南和作业包的 README 装的 PyTorch 与 Gradescope 的 setup.sh 是同一个版本（requirements.lock 里的 torch）。
教师试用报告 r36t 的 F1：以前这几行不写版本，命令行批改、Gradescope 和学生的机器可能装上不同的 PyTorch。"""

from __future__ import annotations

import importlib.util
import re

from support.book import REPO

_spec = importlib.util.spec_from_file_location("homework_bundle", REPO / "book" / "_ext" / "homework_bundle.py")
homework_bundle = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(homework_bundle)


def _installs(text: str) -> list[str]:
    return re.findall(r"pip install (\S+)(?= --index-url| *$| *`)", text, re.M)


def test_every_torch_install_in_the_guide_and_the_bundle_readme_pins_the_locked_version():
    pin = homework_bundle.torch_pin(REPO)
    readme = homework_bundle.README.format(wheel="w.whl", version="v", torch=pin)
    guide = (REPO / "book" / "teacher_guide.md").read_text(encoding="utf-8")
    lines = [line for text in (readme, guide) for line in text.splitlines()
             if re.search(r"pip install \"?torch\b", line)]
    assert len(lines) >= 5, lines
    for line in lines:
        assert f'"torch=={pin}"' in line, line
