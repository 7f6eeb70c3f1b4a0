"""第 1 节的词表与玩具输入。"""

import pytest
import torch

from minigpt.data import ID2WORD, VOCAB, decode, encode, make_toy_example


def test_vocab_is_the_source_vocab():
    assert VOCAB == {"the": 0, "a": 1, "cat": 2, "dog": 3, "sat": 4,
                     "ran": 5, "on": 6, "mat": 7, "[PAD]": 8, "[UNK]": 9}
    assert all(ID2WORD[i] == w for w, i in VOCAB.items())


def test_encode_accepts_string_and_list_and_maps_unknown_to_unk():
    assert encode("the cat sat") == [0, 2, 4]
    assert encode(["the", "cat", "sat"]) == [0, 2, 4]
    assert encode("the bird sat") == [0, 9, 4]


def test_decode_inverts_encode_and_rejects_bad_ids():
    assert decode([0, 2, 4]) == ["the", "cat", "sat"]
    assert decode(torch.tensor([6, 0, 7])) == ["on", "the", "mat"]
    with pytest.raises(ValueError, match=r"0\.\.9.*42"):
        decode([42])


def test_toy_example_shapes_and_no_grad_fn():
    t = make_toy_example()
    assert t.words == ("the", "cat", "sat") and t.ids == [0, 2, 4]
    assert t.X.shape == (3, 4) and t.Q.shape == t.K.shape == t.V.shape == (3, 4)
    assert all(x.grad_fn is None and not x.requires_grad for x in (t.X, t.Q, t.K, t.V))


def test_toy_example_is_reproducible_and_consistent_with_its_modules():
    a, b = make_toy_example(), make_toy_example()
    assert torch.equal(a.X, b.X) and torch.equal(a.V, b.V)
    assert torch.equal(a.X, a.embedding.weight[torch.tensor(a.ids)].detach())
    assert torch.allclose(a.Q, a.X @ a.W_Q.weight.detach().T)
    assert a.W_Q.bias is None


def test_toy_example_seed_changes_tensors():
    assert not torch.equal(make_toy_example(seed=0).X, make_toy_example().X)
