import functools
import sys

import pytest
import torch
from testkit.ray_cluster import local_ray_cluster

from rl_llm.collectors import LLMCollector, RayLLMCollector
from rl_llm.envs import GSM8KEnv, make_arithmetic_dataset
from rl_llm.modules import RemoteTransformersWrapper, TransformersWrapper
from rl_llm.objectives import MCAdvantage
from rl_llm.testing import build_tiny_chat_model

pytestmark = pytest.mark.ray
pytest.importorskip("transformers", reason='needs pip install "rl-llm[transformers]"')

GREEDY = {"max_new_tokens": 4, "do_sample": False}


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray instance on loopback for the module, in a fresh temp dir."""
    with local_ray_cluster("rl-llm-ray-", skip_reason='pip install "rl-llm[ray]"') as ray:
        # The env and policy factories below are shipped to the actor by value: the actor's
        # process cannot import this test module.
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        yield ray


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-model")
    build_tiny_chat_model(folder)
    return folder


def make_env():
    return GSM8KEnv(make_arithmetic_dataset(8, seed=3), batch_size=(4,), repeats=2)


def make_policy(folder):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    return TransformersWrapper(model, AutoTokenizer.from_pretrained(folder), generate_kwargs=GREEDY)


def test_batches_from_the_actor_equal_an_in_process_collector(ray_cluster, model_folder):
    local = LLMCollector(
        make_env(),
        make_policy(model_folder),
        dialog_turns_per_batch=4,
        total_dialog_turns=8,
        postproc=MCAdvantage(grpo_size=2),
    )
    expected = list(local)
    remote = RayLLMCollector(
        make_env,
        policy_factory=functools.partial(make_policy, model_folder),
        dialog_turns_per_batch=4,
        total_dialog_turns=8,
        postproc=MCAdvantage(grpo_size=2),
        track_policy_version=True,
    )
    got = list(remote)
    assert len(got) == len(expected) == 2
    for a, b in zip(got, expected):
        assert torch.equal(a["tokens"].response, b["tokens"].response)
        assert torch.equal(a["next", "reward"], b["next", "reward"])
        torch.testing.assert_close(a["advantage"], b["advantage"])
        assert a["policy_version"].unique().tolist() == [0]
    remote.shutdown()


def test_weights_sent_to_the_actor_reach_the_policy(ray_cluster, model_folder):
    collector = RayLLMCollector(
        make_env,
        policy_factory=functools.partial(make_policy, model_folder),
        dialog_turns_per_batch=4,
        track_policy_version=True,
        sync_iter=False,
    )
    it = iter(collector)
    first = next(it)
    assert first["policy_version"].unique().tolist() == [0]
    model = make_policy(model_folder).model
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    collector.update_policy_weights_(model)
    assert collector.policy_version == 1
    # sync_iter=False collected one batch ahead under the old weights; the next is new.
    assert next(it)["policy_version"].unique().tolist() == [0]
    batch = next(it)
    assert batch["policy_version"].unique().tolist() == [1]
    # Zero weights: a uniform next-token distribution, log 1/V for every generated token.
    mask = batch["masks"].all_assistant_mask[:, -GREEDY["max_new_tokens"] :]
    lp = batch["log_probs"].response[mask]
    vocab = model.config.vocab_size
    torch.testing.assert_close(lp, torch.full_like(lp, -torch.log(torch.tensor(float(vocab)))))
    collector.shutdown()


def test_a_remote_policy_is_shared_and_updated_in_its_own_actor(ray_cluster, model_folder):
    policy = RemoteTransformersWrapper(str(model_folder), generate_kwargs=GREEDY)
    collector = RayLLMCollector(make_env, policy=policy, dialog_turns_per_batch=4)
    local = LLMCollector(
        make_env(), make_policy(model_folder), dialog_turns_per_batch=4, total_dialog_turns=4
    )
    expected = next(iter(local))
    assert torch.equal(collector.next()["tokens"].response, expected["tokens"].response)
    zeros = {k: torch.zeros_like(v) for k, v in policy.state_dict().items()}
    collector.update_policy_weights_(zeros)
    assert all(bool((v == 0).all()) for v in policy.state_dict().values())
    collector.shutdown()
    policy.shutdown()


def test_bad_arguments_are_named(ray_cluster, model_folder):
    factory = functools.partial(make_policy, model_folder)
    with pytest.raises(ValueError, match="exactly one of policy and policy_factory, got neither"):
        RayLLMCollector(make_env, dialog_turns_per_batch=4)
    with pytest.raises(ValueError, match="exactly one of policy and policy_factory, got both"):
        RayLLMCollector(make_env, policy=object(), policy_factory=factory, dialog_turns_per_batch=4)
    with pytest.raises(TypeError, match="expected env to be an EnvBase or a callable"):
        RayLLMCollector(3, policy_factory=factory, dialog_turns_per_batch=4)
    with pytest.raises(ValueError, match="expected dialog_turns_per_batch >= 1, got 0"):
        RayLLMCollector(make_env, policy_factory=factory, dialog_turns_per_batch=0)
    with pytest.raises(ValueError, match=r"num_gpus=1 but the Ray cluster has 0"):
        RayLLMCollector(make_env, policy_factory=factory, dialog_turns_per_batch=4, num_gpus=1)
    with pytest.raises(
        ValueError, match=r"(?s)could not build its collector.*expected env to be an EnvBase"
    ):
        RayLLMCollector(lambda: "not an env", policy_factory=factory, dialog_turns_per_batch=4)
