"""第 3 节“训练会把偷看放大”的实验（minigpt.leak）：不遮蔽时注意力学会抄下一个位置，遮蔽时抄不到。"""

import math

import pytest
import torch

from minigpt.attention import causal_mask
from minigpt.leak import TinyNextTokenModel, train_next_token


@pytest.fixture(scope="module")
def runs():
    return train_next_token(masked=False), train_next_token(masked=True)


def test_without_mask_training_moves_the_weight_onto_the_next_position(runs):
    unmasked, _ = runs
    first, last = unmasked.next_weight[0], unmasked.next_weight[-1]
    assert first < 0.3, first          # 起初大致平均分给 8 个位置
    assert last > 0.9, last            # 训练后几乎全压在答案所在的位置上
    # 损失远低于瞎猜：前 7 个位置抄到了答案，只剩最后一个位置猜不到
    assert unmasked.losses[-1] < unmasked.chance_loss / 3
    # 换成生成时的条件（看不到后面），它比瞎猜还差
    assert unmasked.eval_loss_masked > unmasked.chance_loss


def test_with_mask_nothing_leaks_and_the_loss_stays_at_chance(runs):
    _, masked = runs
    assert max(masked.next_weight) == 0.0
    assert masked.chance_loss == pytest.approx(math.log(10))
    assert abs(sum(masked.losses[-20:]) / 20 - masked.chance_loss) < 0.05
    assert abs(masked.eval_loss_masked - masked.chance_loss) < 0.05


def test_training_is_reproducible_and_restores_the_thread_count():
    threads = torch.get_num_threads()
    a = train_next_token(masked=True, steps=3)
    b = train_next_token(masked=True, steps=3)
    assert a == b
    assert torch.get_num_threads() == threads


def test_tiny_model_shapes_and_masked_weights():
    torch.manual_seed(0)
    model = TinyNextTokenModel(vocab_size=10, seq_len=5, d_model=8)
    logits, w = model(torch.randint(10, (2, 5)), causal_mask(5))
    assert logits.shape == (2, 5, 10) and w.shape == (2, 5, 5)
    assert torch.equal(w.triu(1), torch.zeros(2, 5, 5))
