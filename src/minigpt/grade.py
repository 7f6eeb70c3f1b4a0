"""批改作业的命令（见「作业」一节的「给教师」）::

    python -m minigpt.grade 提交.ipynb … [--json 报告.json] [--csv 成绩.csv]

代码在子包 ``minigpt.grading`` 里（一个模块一件事）；这个文件只是命令的入口，
``python -m minigpt.grade --help`` 列出全部选项。
"""

import sys

from .grading import grade_submission, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
