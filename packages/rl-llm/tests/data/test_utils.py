import pytest
import torch

from rl_llm.data import PromptGroupSampler, as_nested_tensor, as_padded_tensor


def test_as_padded_tensor_sides_dims_and_values():
    a, b = torch.arange(6).reshape(2, 3), torch.arange(2).reshape(2, 1)
    out = as_padded_tensor([a, b], dim=1, padding_value=-1)
    assert out.tolist() == [[[0, 1, 2], [3, 4, 5]], [[0, -1, -1], [1, -1, -1]]]
    left = as_padded_tensor([a, b], dim=-1, padding_side="left", stack_dim=1)
    assert left.shape == (2, 2, 3)
    assert left[:, 1].tolist() == [[0, 0, 0], [0, 0, 1]]
    with pytest.raises(ValueError, match="expected padding_side"):
        as_padded_tensor([a], padding_side="middle")
    with pytest.raises(ValueError, match="non-empty"):
        as_padded_tensor([])
    with pytest.raises(ValueError, match="one number of dims"):
        as_padded_tensor([a, torch.zeros(3)])


def test_as_nested_tensor_keeps_lengths():
    nt = as_nested_tensor([torch.ones(3), torch.ones(1), torch.ones(2)])
    assert [len(t) for t in nt.unbind()] == [3, 1, 2]
    with pytest.raises(TypeError, match="expected tensors"):
        as_nested_tensor([[1, 2]])


def test_prompt_group_sampler_groups_and_epochs():
    sampler = PromptGroupSampler(5, group_size=3, seed=1)
    first, second = list(sampler), list(sampler)
    for order in (first, second):
        groups = [order[i : i + 3] for i in range(0, 15, 3)]
        assert all(len(set(g)) == 1 for g in groups)
        assert sorted(g[0] for g in groups) == [0, 1, 2, 3, 4]
    assert first != second  # reshuffled per epoch
    loader = torch.utils.data.DataLoader(
        list("abcd"), sampler=PromptGroupSampler(4, group_size=2, shuffle=False), batch_size=4
    )
    assert [list(b) for b in loader] == [["a", "a", "b", "b"], ["c", "c", "d", "d"]]
    with pytest.raises(ValueError, match="group_size >= 1"):
        PromptGroupSampler(3, group_size=0)
