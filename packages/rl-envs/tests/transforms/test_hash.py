"""Hash: SHA-256 hashes of strings in an env and on data, and the inverse map."""

import hashlib

import pytest
import torch
from tensordict import TensorDict

from rl_core import Composite, EnvBase, NonTensor, TransformedEnv, Unbounded, check_env_specs
from rl_envs.transforms import Hash


def _sha(text: str) -> list[int]:
    return list(hashlib.sha256(text.encode()).digest())


class WordEnv(EnvBase):
    """Observation ``"word"``: the string ``f"w{count}"`` of each sub-env's step count."""

    def __init__(self, batch_size=(2,)):
        super().__init__(batch_size=batch_size)
        b = tuple(self.batch_size)
        self.observation_spec = Composite(
            word=NonTensor(shape=b, example_data="w0"), count=Unbounded(shape=(*b, 1)), shape=b
        )
        self.action_spec = Unbounded(shape=(*b, 1))

    def _words(self, count):
        td = TensorDict(count=count, batch_size=self.batch_size)
        td["word"] = [f"w{int(c)}" for c in count.reshape(-1)]
        return td

    def _reset(self, tensordict, **kwargs):
        return self._words(torch.zeros(*self.batch_size, 1))

    def _step(self, tensordict):
        out = self._words(tensordict["count"] + 1)
        out["reward"] = torch.zeros(*self.batch_size, 1)
        out["done"] = torch.zeros(*self.batch_size, 1, dtype=torch.bool)
        return out

    def _set_seed(self, seed):
        pass


def test_hashes_strings_of_a_batched_env_as_sha256():
    env = TransformedEnv(WordEnv(), Hash(in_keys=["word"], out_keys=["hash"]))
    check_env_specs(env)
    assert env.observation_spec["hash"].shape == (2, 32)
    assert env.observation_spec["hash"].dtype == torch.uint8
    traj = env.rollout(3, lambda td: td.set("action", torch.zeros(2, 1)))
    assert traj["next", "hash"][0, 2].tolist() == _sha("w3")
    assert traj["hash"][1, 0].tolist() == _sha("w0")


def test_seed_custom_hash_fn_and_inverse_map():
    td = TensorDict(batch_size=[2])
    td["text"] = ["abc", "de"]
    seeded = Hash(["text"], ["h"], seed="s")(td.clone())
    assert seeded["h"][0].tolist() == _sha("sabc")
    lengths = Hash(["text"], ["h"], hash_fn=lambda s: torch.tensor([len(s)]))(td.clone())
    assert lengths["h"].squeeze(-1).tolist() == [3, 2]
    repertoire = {}
    t = Hash(["text"], ["h"], in_keys_inv=["text_back"], out_keys_inv=["h"], repertoire=repertoire)
    hashed = t(td.clone())
    assert len(repertoire) == 2
    back = t.inv(hashed.exclude("text"))
    assert back.get("text_back").tolist() == ["abc", "de"]
    unknown = TensorDict(h=torch.zeros(2, 32, dtype=torch.uint8), batch_size=[2])
    assert t.inv(unknown).get("text_back").tolist() == [None, None]


def test_hash_errors():
    with pytest.raises(ValueError, match="in_keys_inv needs a repertoire"):
        Hash(["a"], ["h"], in_keys_inv=["a"], out_keys_inv=["h"])
    with pytest.raises(TypeError, match=r"Hash\.reproducible_hash: expected a str"):
        Hash(["a"], ["h"])(TensorDict(a=torch.zeros(2)))


def test_default_hash_is_the_sha256_digest_as_32_uint8_as_torchrl():
    # FIPS 180-2 test vector: SHA-256("abc")
    expected = bytes.fromhex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    digest = Hash.reproducible_hash("abc")
    assert digest.dtype == torch.uint8
    assert digest.shape == (32,)
    assert digest.tolist() == list(expected)
    # a seed is prepended to the string; None hashes as the empty string
    assert Hash.reproducible_hash("bc", seed="a").tolist() == list(expected)
    assert Hash.reproducible_hash(None).tolist() == list(hashlib.sha256(b"").digest())
    td = TensorDict(batch_size=[2])
    td["text"] = ["abc", "abc"]
    out = Hash(["text"], ["h"])(td)["h"]
    assert out.dtype == torch.uint8
    assert out.tolist() == [list(expected)] * 2
