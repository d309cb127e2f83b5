import pytest
import torch
from tensordict import TensorDict
from testkit.ray_cluster import local_ray_cluster

from rl_llm.data import History
from rl_llm.modules import RemoteTransformersWrapper, TransformersWrapper
from rl_llm.testing import build_tiny_chat_model

pytestmark = pytest.mark.ray
pytest.importorskip("transformers", reason='needs pip install "rl-llm[transformers]"')

GREEDY = {"max_new_tokens": 5, "do_sample": False}


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray instance on loopback for the module, in a fresh temp dir."""
    with local_ray_cluster("rl-llm-ray-", skip_reason='pip install "rl-llm[ray]"') as ray:
        yield ray


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-model")
    build_tiny_chat_model(folder)
    return folder


def _prompts():
    chats = [[{"role": "user", "content": "What is 3+4?"}], [{"role": "user", "content": "ok"}]]
    return TensorDict(history={"prompt": History.from_chats(chats)}, batch_size=[2])


def test_generates_in_the_actor_as_the_local_wrapper_does(ray_cluster, model_folder):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    local = TransformersWrapper(
        AutoModelForCausalLM.from_pretrained(model_folder).eval(),
        AutoTokenizer.from_pretrained(model_folder),
        generate_kwargs=GREEDY,
    )
    expected = local(_prompts())
    with RemoteTransformersWrapper(
        str(model_folder), generate_kwargs=GREEDY, actor_name="tiny-policy"
    ) as remote:
        out = remote(_prompts())
        assert torch.equal(out["tokens"].response, expected["tokens"].response)
        torch.testing.assert_close(out["log_probs"].response, expected["log_probs"].response)
        assert out["history"].full.batch_size == (2, 2)
        assert remote.generate is True
        assert remote.pad_token_id == local.pad_token_id
        # A second wrapper by name shares the running actor.
        shared = RemoteTransformersWrapper(str(model_folder), actor_name="tiny-policy")
        assert torch.equal(shared(_prompts())["tokens"].response, expected["tokens"].response)
        shared.shutdown()  # not its actor: left running
        assert torch.equal(remote(_prompts())["tokens"].response, expected["tokens"].response)
        # Weights sent to the actor change what it generates and scores.
        weights = {k: torch.zeros_like(v) for k, v in remote.state_dict().items()}
        remote.load_state_dict(weights)
        zeroed = remote(_prompts())
        # All-zero weights: uniform next-token distribution, log 1/V for every token.
        vocab = local.model.config.vocab_size
        mask = zeroed["masks"].all_assistant_mask[:, -5:]
        lp = zeroed["log_probs"].response[mask]
        torch.testing.assert_close(lp, torch.full_like(lp, -torch.log(torch.tensor(vocab * 1.0))))


def test_scores_given_responses_in_the_actor(ray_cluster, model_folder):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_folder)
    generated = TransformersWrapper(model, tokenizer, generate_kwargs=GREEDY)(_prompts())
    with RemoteTransformersWrapper(str(model_folder), generate=False) as scorer:
        scored = scorer(generated.select("tokens", "masks").clone())
    torch.testing.assert_close(
        scored["log_probs"].response, generated["log_probs"].response, atol=1e-5, rtol=1e-5
    )


def test_bad_arguments_are_named(ray_cluster, model_folder, tmp_path):
    model, _ = build_tiny_chat_model()
    with pytest.raises(
        ValueError, match=r"expected model as a folder or hub id .* got Qwen2ForCausalLM"
    ):
        RemoteTransformersWrapper(model)
    with pytest.raises(ValueError, match=r"num_gpus=1 but the Ray cluster has 0"):
        RemoteTransformersWrapper(str(tmp_path), num_gpus=1)
    with pytest.raises(ValueError, match="expected max_concurrency >= 1, got 0"):
        RemoteTransformersWrapper(str(tmp_path), max_concurrency=0)
    with pytest.raises(ValueError, match=r"the model folder '.*missing' does not exist"):
        RemoteTransformersWrapper(str(tmp_path / "missing"))
    # The actor fails to build the wrapper: the cause comes back by name.
    with pytest.raises(ValueError, match=r"(?s)could not build a TransformersWrapper.*got 'chat'"):
        RemoteTransformersWrapper(str(model_folder), input_mode="chat")
