"""作业检查器（见「作业」页）：一个模块一道小题，诊断写成表。

每个检查器都从题目给的数据重新算出正确答案，在容差 ``TOLERANCE`` 之内相等才算通过：

- 没填（还是 None 或 ...）→ ``HomeworkNotFilled``，指出哪个空还没有填写；
- 填错 → ``HomeworkWrong``，说明检查了什么、最可能错在哪一步、怎样找到它，
  但不透露正确的数值；
- 类型、形状、设备、数据类型不对，或出现 NaN → 也是 ``HomeworkWrong``，
  用中文说明期望什么、收到什么；
- 通过 → 打印一行 “✔ 作业 N 通过：…”，返回 None
  （笔记本里的调用不必用分号压住返回值）。

两个异常都是 AssertionError 的子类。检查器自己不会因为奇怪的输入抛出别的异常。
在 Jupyter 里，这两个异常只显示一行“异常名: 说明”，不带检查器内部的调用栈
（``_render_traceback_``，IPython 的约定）；学生自己代码里的其他错误照常带着行号显示。

模块：

- ``errors``：两个异常；``values``：把答案整理成张量或整数、容差；
- ``hints``：诊断表的一行（``Diagnosis``）、按表找诊断、“像是舍入了”的提示；
- ``given_data``：题目给的数据（``exercise_inputs``）；``exercise``：一道小题的描述（``Exercise``）；
- ``checker``：笔记本里的检查器（它和批改程序判的是同一件事：同一个判题函数、同一份重新生成的题目数据）；
- ``dot_score``、``score_matrix``（作业 1）、``mask_matrix``、``masked_weights``（作业 2）、
  ``ffn_params``（作业 3）、``split_merge``、``mha_forward``（作业 4）、``layer_norm``、``block``（作业 5）：
  一道小题一个模块（作业 1–3 是来源教程的三道题，作业 4、5 是本书补充的）；
- ``exercises``：题目清单 ``EXERCISES``（一道小题一行）和由它做成的 ``check_xxx``。

批改作业用 ``python -m minigpt.grade``（见 minigpt/grading/）；它用 ``EXERCISES`` 和
``exercise_inputs()``：题目数据由包重新生成，只从学生的笔记本里取答案变量。
``Exercise.run`` 返回通过时的那一行消息。
"""

from .errors import HomeworkNotFilled, HomeworkWrong
from .exercise import Exercise
from .exercises import CHECKERS, EXERCISES
from .given_data import block_exercise_data, exercise_inputs
from .values import TOLERANCE, TOLERANCE_TEXT

globals().update(CHECKERS)   # check_dot_score、check_score_matrix ……：每道小题一个

__all__ = ["EXERCISES", "Exercise", "HomeworkNotFilled", "HomeworkWrong", "TOLERANCE", "TOLERANCE_TEXT",
           "block_exercise_data", "exercise_inputs", *CHECKERS]
