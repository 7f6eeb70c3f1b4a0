"""第 7 节（训练出来的头）用到的全部接口，一处汇总（见第 7 节 训练出来的头）。

代码按用处分在几个模块里，各自一次读得完：

- `minigpt.tinygpt`：模型 `TinyGPT`；
- `minigpt.tasks`：两个训练任务的数据（重复序列、玩具语法）；
- `minigpt.training`：训练与训练途中的记录；
- `minigpt.probes`：只读权重和输出的测量（两个角色的分数、损失）；
- `minigpt.interventions`：改动模型再看后果（拿掉一个头、换 Key 或 Query、改道）；
- `minigpt.seeds`：同一配置的多个种子，训练结果的存取。
"""

from .tinygpt import TinyGPT, init_model  # noqa: F401
from .tasks import (  # noqa: F401
    GRAMMAR_SENTENCES, GRAMMAR_WORDS, REPEAT_MAX, REPEAT_MIN, REPEAT_SEQ_LEN,
    REPEAT_VOCAB, VERB_OF, RepeatBatch, grammar_batch, repeat_batch, sentence_ids,
)
from .probes import (  # noqa: F401
    copy_rows, determiner_head, earlier_occurrence_score, first_pass_weight,
    grammar_probs, head_scores, induction_score, induction_targets, offset_weight,
    previous_token_by_row, previous_token_score, repeat_losses, second_pass_losses,
    uniform_first_pass_score, uniform_weights,
)
from .interventions import (  # noqa: F401
    head_output, mixed_induction, redirected_copy, without_head,
)
from .training import (  # noqa: F401
    TrainedModel, block_means, first_step_above, phase_curves, train_grammar,
    train_repeat,
)
