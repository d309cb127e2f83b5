"""EnvBase.__new__ takes the constructor's arguments, as TorchRL's does."""

import copy
import pickle

import torch
from tensordict import TensorDict

from rl_core.envs import EnvBase
from rl_core.specs import Bounded, Composite, Unbounded


class _Counter(EnvBase):
    """Counts its actions; its ``__new__`` forwards the arguments as TorchRL subclasses do."""

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls, *args, **kwargs)
        instance.__dict__["made_with"] = (args, dict(kwargs))
        return instance

    def __init__(self, start, *, batch_size=None):
        super().__init__(batch_size=batch_size)
        self.start = float(start)
        self.observation_spec = Composite(count=Unbounded(shape=(1,)))
        self.action_spec = Bounded(0.0, 1.0, shape=(1,))

    def _reset(self, tensordict):
        return TensorDict(count=torch.full((1,), self.start))

    def _step(self, tensordict):
        count = tensordict["count"] + tensordict["action"]
        return TensorDict(count=count, reward=count.clone(), terminated=count > 2.5)

    def _set_seed(self, seed):
        torch.manual_seed(seed)


def test_a_subclass_new_may_pass_the_constructor_arguments_up():
    env = _Counter(1.0, batch_size=[])
    assert env.made_with == ((1.0,), {"batch_size": []})
    traj = env.rollout(5, policy=lambda td: td.set("action", torch.ones(1)))
    assert traj["next", "count"].squeeze(-1).tolist() == [2.0, 3.0]


def test_copies_and_pickles_still_build_the_env():
    env = _Counter(0.5)
    clone = copy.deepcopy(env)
    assert clone.start == 0.5
    assert pickle.loads(pickle.dumps(env)).start == 0.5
