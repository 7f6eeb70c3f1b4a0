"""题目清单（每道小题的分值也列在教师指南的「批改」一节）：一道小题一行。批改程序用它，笔记本里的 ``check_xxx`` 也由它做成。

加一道小题：写好它的判题函数 judge_xxx（参数是答案变量和题目数据），在这里加一行；
作业页上它的初始代码单元带标签 hw-starter-<编号>，调用 check_xxx。
"""

from __future__ import annotations

from .block import judge_block_output
from .checker import notebook_checker
from .dot_score import judge_dot_score
from .exercise import Exercise
from .ffn_params import judge_ffn_params
from .layer_norm import judge_layer_norm
from .mask_matrix import judge_causal_mask
from .masked_weights import judge_masked_weights
from .mha_forward import judge_mha_output
from .score_matrix import judge_score_matrix
from .split_merge import judge_split_merge

EXERCISES = (
    Exercise("1a", "作业 1（一）一个分数", judge_dot_score, points=1, section=2),
    Exercise("1b", "作业 1（二）分数矩阵", judge_score_matrix, section=2),
    Exercise("2a", "作业 2（一）遮蔽矩阵", judge_causal_mask, section=3),
    Exercise("2b", "作业 2（二）遮蔽后的权重", judge_masked_weights, points=3, section=3),
    Exercise("3", "作业 3 FFN 的参数个数", judge_ffn_params, section=5),
    # 以下是本书补充的题（来源教程的作业只有上面三道）
    Exercise("4a", "作业 4（一）拆成各头、再合并", judge_split_merge, section=4),
    Exercise("4b", "作业 4（二）多头注意力的输出", judge_mha_output, points=3, section=4),
    Exercise("5a", "作业 5（一）亲手算 LayerNorm", judge_layer_norm, section=6),
    Exercise("5b", "作业 5（二）组装 Post-LN Block", judge_block_output, points=3, section=6),
)

# 笔记本里调用的检查器：{check_xxx: 检查器}
CHECKERS = {e.checker: notebook_checker(e, EXERCISES) for e in EXERCISES}
