"""LLMHashingEnv: token-by-token text generation whose state is identified by a hash.

Every state (a token chain) carries an int64 ``"hashing"``: the hash of the prompt at reset,
then at each step the hash of ``(previous hash, new token)``. Two chains that reach the same
tokens by the same steps have the same hash, so a search tree can key its nodes by hash alone
(TorchRL stores them in an ``MCTSForest``) and repeated chains are found without comparing
tokens.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from rl_core import Categorical, Composite, EnvBase, NonTensor, Unbounded

HASH_KEY = "hashing"


def token_chain_hash(rows: torch.Tensor) -> torch.Tensor:
    """``[N]`` int64: a hash of each row of an ``[N, L]`` integer tensor, the same in every
    process and run (BLAKE2b of the row's int64 bytes, little-endian, read as a signed int64).

    TorchRL's default, ``SipHash``, uses Python's ``hash`` of the bytes, which changes from
    run to run unless ``PYTHONHASHSEED`` is fixed; this one does not.

    Examples:
        >>> import torch
        >>> from rl_llm.envs.llm_hashing_env import token_chain_hash
        >>> h = token_chain_hash(torch.tensor([[1, 2], [1, 2], [2, 1]]))
        >>> h.dtype, bool(h[0] == h[1]), bool(h[0] == h[2])
        (torch.int64, True, False)
    """
    data = rows.detach().to("cpu", torch.int64).contiguous().numpy().astype("<i8")
    values = [
        int.from_bytes(
            hashlib.blake2b(row.tobytes(), digest_size=8).digest(), "little", signed=True
        )
        for row in data
    ]
    return torch.tensor(values, dtype=torch.int64)


class LLMHashingEnv(EnvBase):
    """Text generation one token at a time; each state carries the hash of its token chain.

    Reset reads the prompt tokens at ``observation_key`` (``[*B, L]`` integers) and writes
    them back with ``"hashing"`` (``[*B, 1]`` int64, ``hashing_module`` of the prompt) and,
    with ``text_output``, the decoded text at ``text_key``. A step reads ``"action"`` (``[*B,
    1]``, the next token), appends it (``[*B, L + 1]``) and writes the new hash,
    ``hashing_module(cat([hash, action]))``: the hash of a state depends on its parent's and
    on the token, so the hashes follow the chain in O(1) per step. The reward is 0 and a
    chain never ends by itself (add transforms for both).

    Args:
        vocab_size: the number of tokens (the action's range); defaults to
            ``len(tokenizer)``.
        hashing_module: ``[N, M]`` integers to ``[N]`` int64 hashes; defaults to
            :func:`token_chain_hash` (stable across runs, unlike TorchRL's ``SipHash``).
        observation_key: where the token chain is read and written.
        text_output: also write the decoded chain at ``text_key`` (needs ``tokenizer``).
        tokenizer: a tokenizer with ``batch_decode`` (and ``__call__`` for
            :meth:`make_tensordict`).
        text_key: where the text is written.
        batch_size: the env's batch shape (TorchRL's env takes it from each reset; rl-core
            envs have a fixed one).

    The token chain grows by one each step, and rl-core's specs have fixed shapes: it is
    read and written at ``observation_key`` but is not in ``observation_spec``, which holds
    ``"hashing"`` (and the text).

    Raises:
        ValueError: no ``vocab_size`` and no tokenizer, ``text_output`` without a tokenizer;
            (on reset/step) a missing or malformed prompt or action, naming the key, or a
            ``hashing_module`` that does not return one int64 per row.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.envs import LLMHashingEnv
        >>> env = LLMHashingEnv(10, text_output=False, batch_size=(2,))
        >>> td = env.reset(TensorDict(observation=torch.tensor([[1, 2], [1, 2]]), batch_size=[2]))
        >>> td["action"] = torch.tensor([[3], [4]])
        >>> nxt = env.step(td)["next"]
        >>> nxt["observation"].tolist(), bool(nxt["hashing"][0] == nxt["hashing"][1])
        ([[1, 2, 3], [1, 2, 4]], False)
    """

    def __init__(
        self,
        vocab_size: int | None = None,
        *,
        hashing_module: Callable[[torch.Tensor], torch.Tensor] | None = None,
        observation_key: NestedKey = "observation",
        text_output: bool = True,
        tokenizer: Any = None,
        text_key: NestedKey | None = "text",
        batch_size: tuple[int, ...] | torch.Size = (1,),
    ) -> None:
        if vocab_size is None:
            if tokenizer is None:
                raise ValueError(
                    "LLMHashingEnv: expected vocab_size (the number of tokens) or a tokenizer "
                    "to read it from; got neither."
                )
            vocab_size = len(tokenizer)
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"LLMHashingEnv: expected vocab_size >= 1, got {vocab_size!r}.")
        if text_output and tokenizer is None:
            raise ValueError(
                "LLMHashingEnv: text_output=True decodes each chain and needs a tokenizer; "
                "pass tokenizer= or text_output=False."
            )
        if hashing_module is not None and not callable(hashing_module):
            raise ValueError(
                f"LLMHashingEnv: expected hashing_module to be callable ([N, M] integers to "
                f"[N] int64), got {type(hashing_module).__name__}."
            )
        super().__init__(batch_size=batch_size)
        self.vocab_size = vocab_size
        self.hashing_module = hashing_module if hashing_module is not None else token_chain_hash
        self.tokenizer = tokenizer
        self.observation_key = observation_key
        self.text_output = bool(text_output)
        self.text_key = (text_key if text_key is not None else "text") if text_output else None
        shape = self.batch_size
        observation = {HASH_KEY: Unbounded(shape=(*shape, 1), dtype=torch.int64)}
        if self.text_key is not None:
            observation[self.text_key] = NonTensor(shape=shape)
        self.observation_spec = Composite(observation, shape=shape)
        self.action_spec = Categorical(vocab_size, shape=(*shape, 1), dtype=torch.int64)

    def _hash(self, rows: torch.Tensor) -> torch.Tensor:
        """``hashing_module`` of ``[*B, M]`` rows as ``[*B, 1]`` int64, checked."""
        flat = rows.reshape(-1, rows.shape[-1])
        hashes = self.hashing_module(flat)
        if not isinstance(hashes, torch.Tensor) or hashes.shape != (flat.shape[0],):
            got = tuple(hashes.shape) if isinstance(hashes, torch.Tensor) else type(hashes).__name__
            raise ValueError(
                f"LLMHashingEnv: expected hashing_module to return one hash per row, shape "
                f"({flat.shape[0]},), got {got}."
            )
        return hashes.to(torch.int64).reshape(*rows.shape[:-1], 1)

    def _chain(self, tensordict: TensorDictBase | None, where: str) -> torch.Tensor:
        tokens = None if tensordict is None else tensordict.get(self.observation_key, None)
        expected = (*self.batch_size, "L")
        if not isinstance(tokens, torch.Tensor):
            raise ValueError(
                f"LLMHashingEnv.{where}: expected the token chain at {self.observation_key!r} "
                f"(integers of shape {expected}), got "
                f"{'nothing' if tokens is None else type(tokens).__name__}. Reset with a "
                f"prompt: env.reset(TensorDict({{{self.observation_key!r}: ids}}, batch_size)) "
                f"or env.make_tensordict(text)."
            )
        if (
            tokens.is_floating_point()
            or tokens.dtype == torch.bool
            or tokens.shape[:-1] != self.batch_size
            or tokens.ndim != len(self.batch_size) + 1
        ):
            raise ValueError(
                f"LLMHashingEnv.{where}: expected integer tokens of shape {expected} at "
                f"{self.observation_key!r}, got {tokens.dtype} {tuple(tokens.shape)}."
            )
        return tokens.long()

    def _output(self, tokens: torch.Tensor, hashes: torch.Tensor) -> TensorDict:
        out = TensorDict(
            {self.observation_key: tokens, HASH_KEY: hashes}, batch_size=self.batch_size
        )
        if self.text_key is not None:
            flat = tokens.reshape(-1, tokens.shape[-1])
            texts = self.tokenizer.batch_decode(flat.tolist())
            out.set(self.text_key, texts if self.batch_size else texts[0])
        return out

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        tokens = self._chain(tensordict, "reset")
        return self._output(tokens, self._hash(tokens))

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        tokens = self._chain(tensordict, "step")
        action = tensordict.get("action", None)
        shape = (*self.batch_size, 1)
        if (
            not isinstance(action, torch.Tensor)
            or action.is_floating_point()
            or action.shape != shape
            or bool(((action < 0) | (action >= self.vocab_size)).any())
        ):
            got = (
                f"{action.dtype} {tuple(action.shape)}"
                if isinstance(action, torch.Tensor)
                else type(action).__name__
            )
            raise ValueError(
                f"LLMHashingEnv.step: expected 'action' as integer tokens in [0, "
                f"{self.vocab_size}) of shape {shape}, got {got}."
            )
        action = action.long()
        previous = tensordict.get(HASH_KEY, None)
        if previous is None:
            previous = self._hash(tokens)
        hashes = self._hash(torch.cat([previous.reshape(shape).long(), action], -1))
        out = self._output(torch.cat([tokens, action], -1), hashes)
        out.set("reward", torch.zeros(shape))
        out.set("done", torch.zeros(shape, dtype=torch.bool))
        out.set("terminated", torch.zeros(shape, dtype=torch.bool))
        return out

    def _set_seed(self, seed: int | None) -> None:
        """Nothing to seed: the env is deterministic."""

    def make_tensordict(self, input: str | list[str]) -> TensorDictBase:
        """Tokenizes a prompt (or one per batch row) and resets the env on it.

        Raises:
            ValueError: no tokenizer, a number of prompts other than the batch's, or prompts
                of different token lengths (a chain is not padded: its hash would change).
        """
        if self.tokenizer is None:
            raise ValueError(
                "LLMHashingEnv.make_tensordict: needs a tokenizer; build the env with "
                "tokenizer= or reset with token ids."
            )
        texts = [input] if isinstance(input, str) else list(input)
        rows = max(1, self.batch_size.numel())
        if len(texts) != rows:
            raise ValueError(
                f"LLMHashingEnv.make_tensordict: expected {rows} prompt(s) for batch_size "
                f"{tuple(self.batch_size)}, got {len(texts)}."
            )
        ids = [list(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        if len({len(i) for i in ids}) != 1:
            raise ValueError(
                f"LLMHashingEnv.make_tensordict: expected prompts of one token length, got "
                f"lengths {[len(i) for i in ids]}; a chain is not padded (padding would change "
                f"its hash): reset with token ids of equal length instead."
            )
        tokens = torch.tensor(ids, dtype=torch.int64).reshape(*self.batch_size, -1)
        return self.reset(TensorDict({self.observation_key: tokens}, batch_size=self.batch_size))
