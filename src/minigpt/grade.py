"""批改作业的命令（见「教师指南」一页）::

    python -m minigpt.grade 提交.ipynb … [--json 报告.json] [--csv 成绩.csv]

代码在子包 ``minigpt.grading`` 里（一个模块一件事）；这个文件只是命令的入口，
``python -m minigpt.grade --help`` 列出全部选项。
"""

import sys

# 只导入命令行入口：判分（grade_submission，连带 torch 和检查器）
# 由 minigpt.grading 在用到时才导入，所以 --help、选项写错、
# 拒绝运行不必先花一两秒
from .grading import main

if __name__ == "__main__":
    sys.exit(main())
