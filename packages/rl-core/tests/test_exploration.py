import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, ProbabilisticTensorDictModule, interaction_type

from rl_core.exploration import ExplorationType, exploration_type, set_exploration_type


def test_exploration_type_is_tensordicts_interaction_type():
    assert ExplorationType is InteractionType
    assert {t.name for t in ExplorationType} >= {"RANDOM", "DETERMINISTIC", "MODE", "MEAN"}


def test_context_manager_sets_and_restores_also_on_error():
    assert exploration_type() is None
    with set_exploration_type(ExplorationType.RANDOM):
        assert exploration_type() is ExplorationType.RANDOM
        assert interaction_type() is InteractionType.RANDOM
        with set_exploration_type("MODE"):
            assert exploration_type() is ExplorationType.MODE
        assert exploration_type() is ExplorationType.RANDOM
    assert exploration_type() is None
    with pytest.raises(RuntimeError, match="boom"), set_exploration_type("mean"):
        raise RuntimeError("boom")
    assert exploration_type() is None


def test_decorator():
    @set_exploration_type("deterministic")
    def inner():
        return exploration_type()

    assert inner() is ExplorationType.DETERMINISTIC
    assert exploration_type() is None


def test_tensordict_probabilistic_modules_obey_it():
    module = ProbabilisticTensorDictModule(
        in_keys=["loc", "scale"],
        out_keys=["action"],
        distribution_class=torch.distributions.Normal,
        default_interaction_type=InteractionType.RANDOM,
    )
    td = TensorDict({"loc": torch.zeros(1000), "scale": torch.ones(1000)}, [1000])
    with set_exploration_type(ExplorationType.MEAN):
        assert (module(td.clone())["action"] == 0).all()
    torch.manual_seed(0)
    assert module(td.clone())["action"].std() > 0.5


def test_bad_input_names_the_choices():
    with pytest.raises(ValueError, match=r"expected one of MODE, .*RANDOM.*got 'explore'"):
        set_exploration_type("explore")
    with pytest.raises(TypeError, match="got int"):
        set_exploration_type(3)
