"""批改用的题目清单（见「作业」一节的「给教师」），以及由它做成的、笔记本里调用的检查器。

每道小题：答案变量、笔记本传给检查器的题目数据、判题函数和分值。笔记本里的 ``check_xxx``
和批改程序判的都是 ``Exercise.run(答案, exercise_inputs())``。
"""

from __future__ import annotations

from .causal_mask import judge_causal_mask
from .dot_score import judge_dot_score
from .exercise import Exercise, notebook_checker
from .block import judge_block_output
from .ffn_params import judge_ffn_params
from .heads import judge_split_merge
from .layer_norm import judge_layer_norm
from .masked_weights import judge_masked_weights
from .mha_forward import judge_mha_output
from .score_matrix import judge_score_matrix

EXERCISES = (
    Exercise("1a", "作业 1（一）一个分数", ("score",), "check_dot_score",
             lambda a, x: judge_dot_score(a["score"], x["q"], x["k"], x["Q"], x["K"]),
             points=1, given=("q", "k", "Q", "K")),
    Exercise("1b", "作业 1（二）分数矩阵", ("S",), "check_score_matrix",
             lambda a, x: judge_score_matrix(a["S"], x["Q"], x["K"]), given=("Q", "K")),
    Exercise("2a", "作业 2（一）遮蔽矩阵", ("mask",), "check_causal_mask",
             lambda a, x: judge_causal_mask(a["mask"], x["seq_len"]), given=("seq_len",)),
    Exercise("2b", "作业 2（二）遮蔽后的权重", ("weights",), "check_masked_weights",
             lambda a, x: judge_masked_weights(a["weights"], x["scores"], x["d_k"]),
             points=3, given=("scores", "d_k")),
    Exercise("3", "作业 3 FFN 的参数个数", ("w1_params", "w2_params", "total_params"),
             "check_ffn_params",
             lambda a, x: judge_ffn_params(a["w1_params"], a["w2_params"], a["total_params"],
                                           x["hidden_size"], x["d_ff"]),
             given=("hidden_size", "d_ff")),
    # 以下是本书补充的题（来源教程的作业只有上面三道）
    Exercise("4a", "作业 4（一）拆成各头、再合并", ("heads", "merged"), "check_split_merge",
             lambda a, x: judge_split_merge(a["heads"], a["merged"], x["x"], x["num_heads"]),
             given=("x", "num_heads")),
    Exercise("4b", "作业 4（二）多头注意力的输出", ("attn_out",), "check_mha_output",
             lambda a, x: judge_mha_output(a["attn_out"], x["x"], x["mha"]),
             points=3, given=("x", "mha")),
    Exercise("5a", "作业 5（一）亲手算 LayerNorm", ("ln_out",), "check_layer_norm",
             lambda a, x: judge_layer_norm(a["ln_out"], x["h"], x["gamma"], x["beta"], x["eps"]),
             given=("h", "gamma", "beta", "eps")),
    Exercise("5b", "作业 5（二）组装 Post-LN Block", ("block_out",), "check_block_output",
             lambda a, x: judge_block_output(a["block_out"], x["x"], x["block"]),
             points=3, given=("x", "block")),
)

_BY_KEY = {e.key: e for e in EXERCISES}

check_dot_score = notebook_checker(_BY_KEY["1a"], judge_dot_score)
check_score_matrix = notebook_checker(_BY_KEY["1b"], judge_score_matrix)
check_causal_mask = notebook_checker(_BY_KEY["2a"], judge_causal_mask)
check_masked_weights = notebook_checker(_BY_KEY["2b"], judge_masked_weights)
check_ffn_params = notebook_checker(_BY_KEY["3"], judge_ffn_params)
check_split_merge = notebook_checker(_BY_KEY["4a"], judge_split_merge)
check_mha_output = notebook_checker(_BY_KEY["4b"], judge_mha_output)
check_layer_norm = notebook_checker(_BY_KEY["5a"], judge_layer_norm)
check_block_output = notebook_checker(_BY_KEY["5b"], judge_block_output)
