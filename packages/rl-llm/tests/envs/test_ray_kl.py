"""RayKLRewardTransform and RayRetrieveKL: the same values as the local transforms, computed in
a Ray actor that builds its models from a factory and is shared by name."""

import copy

import pytest
import torch
from tensordict import TensorDict
from testkit.ray_cluster import local_ray_cluster

from rl_core import TransformedEnv
from rl_llm.data import History
from rl_llm.envs import ChatEnv, KLRewardTransform, RayKLRewardTransform, RayRetrieveKL, RetrieveKL
from rl_llm.modules import TransformersWrapper

pytestmark = pytest.mark.ray
pytest.importorskip("transformers", reason='needs pip install "rl-llm[transformers]"')


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray instance on loopback for the module, in a fresh temp dir."""
    with local_ray_cluster("rl-llm-ray-", skip_reason='pip install "rl-llm[ray]"') as ray:
        yield ray


def _scorer_factory(folder):
    def build():
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(folder).eval()
        return TransformersWrapper(model, AutoTokenizer.from_pretrained(folder), generate=False)

    return build


def _drifted_policy(tiny_model, tiny_tokenizer):
    policy_model = copy.deepcopy(tiny_model)
    with torch.no_grad():
        policy_model.lm_head.weight.mul_(3.0)
    return TransformersWrapper(
        policy_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 5, "do_sample": True}
    )


def _batch(policy):
    torch.manual_seed(0)
    prompt = History.from_chats([[{"role": "user", "content": "What is 2+2?"}]] * 3)
    batch = policy(TensorDict(history={"prompt": prompt}, batch_size=[3]))
    batch["next"] = TensorDict(reward=torch.ones(3, 1), batch_size=[3])
    return batch


def test_kl_reward_in_an_actor_matches_the_local_transform(
    ray_cluster, tiny_model_dir, tiny_model, tiny_tokenizer
):
    policy = _drifted_policy(tiny_model, tiny_tokenizer)
    local = KLRewardTransform(
        TransformersWrapper(tiny_model, tiny_tokenizer, generate=False), coeff=0.5
    )
    remote = RayKLRewardTransform(
        ref_model_factory=_scorer_factory(str(tiny_model_dir)), coeff=0.5, actor_name="ref-kl"
    )
    try:
        expected, got = local(_batch(policy)), remote(_batch(policy))
        torch.testing.assert_close(got["next", "reward"], expected["next", "reward"])
        torch.testing.assert_close(got["next", "kl_penalty"], expected["next", "kl_penalty"])
        torch.testing.assert_close(got["ref_log_probs"], expected["ref_log_probs"])
        assert expected["next", "kl_penalty"].abs().sum() > 0
        # In an env, at each step; a second transform by name shares the actor.
        shared = RayKLRewardTransform(
            ref_model_factory=_scorer_factory("unused"), coeff=0.5, actor_name="ref-kl"
        )
        env = TransformedEnv(ChatEnv(batch_size=(2,)), shared)
        torch.manual_seed(1)
        td = env.step(policy(env.reset(TensorDict(query=["a", "b"], batch_size=[2]))))
        torch.testing.assert_close(td["next", "reward"], -0.5 * td["next", "kl_penalty"])
        assert td["ref_log_probs"].shape == td["log_probs"].response.shape
    finally:
        remote.shutdown()
    with pytest.raises(ValueError, match="expected exactly one of ref_model and ref_model_factory"):
        RayKLRewardTransform()


def test_retrieve_kl_in_an_actor_matches_the_local_transform(
    ray_cluster, tiny_model_dir, tiny_model, tiny_tokenizer
):
    policy = _drifted_policy(tiny_model, tiny_tokenizer)
    local = RetrieveKL(ref_model=TransformersWrapper(tiny_model, tiny_tokenizer, generate=False))
    remote = RayRetrieveKL(ref_model_factory=_scorer_factory(str(tiny_model_dir)))
    try:
        expected, got = local(_batch(policy)), remote(_batch(policy))
        for key in [("next", "reward"), ("next", "kl_penalty"), ("ref_log_probs", "full")]:
            torch.testing.assert_close(got[key], expected[key])
        assert expected["next", "kl_penalty"].abs().sum() > 0
    finally:
        remote.shutdown()
    with pytest.raises(ValueError, match="expected exactly one of gen_model and gen_model_factory"):
        RayRetrieveKL(None, ref_model_factory=_scorer_factory("x"))
