"""批改用的题目清单（见「作业」一节的「给教师」）：每道小题的答案变量、检查器和分值。"""

from __future__ import annotations

from .causal_mask import check_causal_mask
from .dot_score import check_dot_score
from .exercise import Exercise
from .ffn_params import check_ffn_params
from .masked_weights import check_masked_weights
from .score_matrix import check_score_matrix

EXERCISES = (
    Exercise("1a", "作业 1（一）一个分数", ("score",), "check_dot_score",
             lambda a, x: check_dot_score.judge(
                 a["score"], x["q"], x["k"], x["Q"], x["K"]),
             points=1),
    Exercise("1b", "作业 1（二）分数矩阵", ("S",), "check_score_matrix",
             lambda a, x: check_score_matrix.judge(a["S"], x["Q"], x["K"])),
    Exercise("2a", "作业 2（一）遮蔽矩阵", ("mask",), "check_causal_mask",
             lambda a, x: check_causal_mask.judge(a["mask"], x["seq_len"])),
    Exercise("2b", "作业 2（二）遮蔽后的权重", ("weights",), "check_masked_weights",
             lambda a, x: check_masked_weights.judge(
                 a["weights"], x["scores"], x["d_k"]),
             points=3),
    Exercise("3", "作业 3 FFN 的参数个数", ("w1_params", "w2_params", "total_params"),
             "check_ffn_params",
             lambda a, x: check_ffn_params.judge(
                 a["w1_params"], a["w2_params"], a["total_params"],
                 x["hidden_size"], x["d_ff"])),
)
