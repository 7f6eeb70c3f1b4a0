"""第 3 节“训练会把偷看放大”的实验（minigpt.leak）：不遮蔽时注意力学会抄下一个位置，遮蔽时抄不到。"""

import math

import pytest
import torch

from minigpt.attention import causal_mask
from minigpt.leak import LEAK_SEEDS, TinyNextTokenModel, train_leak_seeds, train_next_token


@pytest.fixture(scope="module")
def runs():
    return train_next_token(masked=False), train_next_token(masked=True)


def test_without_mask_training_moves_the_weight_onto_the_next_position(runs):
    unmasked, _ = runs
    first, last = unmasked.next_weight[0], unmasked.next_weight[-1]
    assert first < 0.3, first          # 起初大致平均分给各个位置
    assert last > 0.9, last            # 训练后几乎全压在答案所在的位置上
    # 损失远低于瞎猜：前 7 个位置抄到了答案，只剩最后一个位置猜不到
    assert unmasked.losses[-1] < unmasked.chance_loss / 3
    # 换成生成时的条件（看不到后面），它比瞎猜还差
    assert unmasked.eval_loss_masked > unmasked.chance_loss


def test_without_mask_the_last_position_cannot_copy_so_the_loss_floor_is_ln10_over_seq_len(runs):
    """每条样本抽 seq_len + 1 个 token、送进 seq_len 个：最后一个位置的答案不在输入里。

    于是不遮蔽时只有前 seq_len - 1 个位置能抄，平均损失的下限是 ln 10 / seq_len，不是 0；
    训练损失从上方逼近这个下限。
    """
    unmasked, _ = runs
    n = unmasked.seq_len
    assert n == 8 and len(unmasked.eval_loss_by_position) == n
    floor = unmasked.chance_loss / n
    *copied, last = unmasked.eval_loss_by_position
    assert last > unmasked.chance_loss - 0.1, last          # 最后一个位置只能瞎猜
    assert sum(copied) / len(copied) < 0.1, copied           # 其余位置抄到了答案
    tail = sum(unmasked.losses[-20:]) / 20
    assert floor < tail < floor + 0.15, (tail, floor)
    # 按位置测的平均就是整体损失，它同样在下限之上
    assert sum(unmasked.eval_loss_by_position) / n > floor


def test_without_mask_the_weight_climbs_while_the_loss_falls(runs):
    """正文：右图权重曲线爬升的那一段，对着的正是左图损失曲线下落的那一段。"""
    unmasked, _ = runs
    w, loss = unmasked.next_weight, unmasked.losses
    half = next(i for i, v in enumerate(w) if v > 0.5)   # 权重爬到一半的那一步
    start, end = loss[0], sum(loss[-20:]) / 20
    share = (start - loss[half]) / (start - end)           # 这时损失已经降了多少
    assert 0.2 < share < 0.8, (half, share)
    # 权重基本不动的最后 40 步里，损失也基本不动
    assert max(w[-40:]) - min(w[-40:]) < 0.05 and max(loss[-40:]) - min(loss[-40:]) < 0.3


def test_with_mask_nothing_leaks_and_the_loss_stays_at_chance(runs):
    _, masked = runs
    assert max(masked.next_weight) == 0.0
    assert masked.chance_loss == pytest.approx(math.log(10))
    assert abs(sum(masked.losses[-20:]) / 20 - masked.chance_loss) < 0.05
    assert abs(masked.eval_loss_masked - masked.chance_loss) < 0.05
    # 遮蔽时训练条件就是生成条件：每个位置都在瞎猜
    assert all(abs(v - masked.chance_loss) < 0.05 for v in masked.eval_loss_by_position)


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


def test_the_leak_conclusions_hold_for_every_seed_the_page_reports():
    """第 3 节说“换几个种子结论都成立”：每个种子上不遮蔽都学会抄、换成生成条件比瞎猜差，遮蔽时权重恰好为 0。"""
    runs = train_leak_seeds()
    assert tuple(runs) == LEAK_SEEDS and len(LEAK_SEEDS) >= 5
    for seed, (unmasked, masked) in runs.items():
        assert unmasked.next_weight[0] < 0.3 and unmasked.next_weight[-1] > 0.9, seed
        assert unmasked.losses[-1] < unmasked.chance_loss / 3, seed
        assert unmasked.eval_loss_masked > unmasked.chance_loss, seed
        assert unmasked.eval_loss_by_position[-1] > unmasked.chance_loss - 0.1, seed
        assert max(masked.next_weight) == 0.0, seed
        assert abs(masked.losses[-1] - masked.chance_loss) < 0.1, seed
