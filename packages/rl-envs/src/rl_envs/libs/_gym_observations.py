"""GymWrapper's observations: spec entries, decoders, readers and the step row blocks.

Built once per wrapper (and again when its observation spec is set up anew) from the
gymnasium observation space: which entries the observation spec holds (the space's, pixels,
or both), how each gymnasium observation becomes those entries, and which of them a step
writes into preallocated row blocks (:class:`StepRows`) instead of decoding them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch

from rl_core.keys import OBSERVATION, PIXELS
from rl_core.specs import Bounded, Composite, TensorSpec
from rl_envs.libs._gym_codecs import make_decoder
from rl_envs.libs._gym_rows import StepRows, block_observation
from rl_envs.libs._gym_specs import gym_space_to_spec

# (entry key, key in the gymnasium observation or None for the whole of it, decoder)
Decoders = list[tuple[str, str | None, Callable[[Any], torch.Tensor]]]


class ObservationLayout(NamedTuple):
    """A wrapper's observation entries and how a step or a reset reads them."""

    entries: dict[str, TensorSpec]  # the observation spec's entries
    rows: StepRows  # the row blocks of step outputs
    reset_rows: StepRows  # the row blocks of fused step-and-reset next roots
    read: Callable[[Any], dict[str, Any]]  # every observation entry (resets)
    read_step: Callable[[Any], dict[str, Any]] | None  # those rows do not hold; None: none
    decode_single: tuple | None  # SAME_STEP: decoders of one sub-env's observation


def read_pixels(env: Any, vector: bool) -> torch.Tensor:
    """``env.render()`` as a uint8 tensor (frames stacked for a vector env)."""
    frames = env.render()
    frames = np.stack(frames) if vector else np.array(frames)
    return torch.from_numpy(frames)


def _pixels_spec(env: Any, vector: bool, who: str) -> Bounded:
    if getattr(env, "render_mode", None) != "rgb_array":
        raise ValueError(
            f"{who}: from_pixels needs an env that renders 'rgb_array', got "
            f"render_mode={getattr(env, 'render_mode', None)!r}. Make it with "
            f"render_mode='rgb_array'."
        )
    env.reset()
    frame = read_pixels(env, vector)
    return Bounded(0, 255, shape=frame.shape, dtype=frame.dtype)


def _reader(
    decoders: Decoders, pixels: Callable[[], torch.Tensor] | None
) -> Callable[[Any], dict[str, Any]]:
    """``read(obs)``: the entries that ``decoders`` (and ``pixels``) give, as a dict."""
    if pixels is None and len(decoders) == 1 and decoders[0][1] is None:
        key, _, decode = decoders[0]
        return lambda obs: {key: decode(obs)}  # one observation: the common case

    def read(obs: Any) -> dict[str, Any]:
        out = {key: decode(obs if src is None else obs[src]) for key, src, decode in decoders}
        if pixels is not None:
            out[PIXELS] = pixels()
        return out

    return read


def observation_layout(
    env: Any,
    space: Any,
    batch: tuple[int, ...],
    *,
    vector: bool,
    categorical: bool,
    from_pixels: bool,
    pixels_only: bool,
    same_step: bool,
    who: str,
) -> ObservationLayout:
    """The observation layout of a wrapper of ``env`` whose (single) observation space is
    ``space``.

    Args:
        env: the gymnasium env (rendered for pixels).
        space: the observation space of one (sub-)env.
        batch: the wrapper's batch shape.

    Keyword Args:
        vector: ``env`` is a vector env.
        categorical: ``Discrete`` spaces become ``Categorical`` (see ``gym_space_to_spec``).
        from_pixels: add ``env.render()`` frames under ``"pixels"``.
        pixels_only: with ``from_pixels``, drop the space's own entries.
        same_step: the vector env autoresets in ``SAME_STEP`` mode (final observations are
            decoded one sub-env at a time).
        who: the wrapper, as errors name it.

    Raises:
        ValueError: the space has a ``"pixels"`` entry of its own beside ``from_pixels``, or
            ``from_pixels`` on an env that does not render ``"rgb_array"``.
    """
    spec = gym_space_to_spec(space, batch_size=batch, categorical_action_encoding=categorical)
    # Vector envs copy their observations by default: no second copy is needed then.
    copy = not (vector and getattr(env, "copy", False))
    if isinstance(spec, Composite):
        state = {key: spec[key] for key in spec.keys()}
        plan = [(key, key, space.spaces[key], spec[key]) for key in spec.keys()]
    else:
        state = {OBSERVATION: spec}
        plan = [(OBSERVATION, None, space, spec)]
    keep_state = not (from_pixels and pixels_only)
    entries = dict(state) if keep_state else {}
    pixels = None
    if from_pixels:
        if PIXELS in entries:
            raise ValueError(
                f"{who}: the observation space already has a {PIXELS!r} entry; use "
                f"pixels_only=True or rename that entry."
            )
        entries[PIXELS] = _pixels_spec(env, vector, who)
        pixels = functools.partial(read_pixels, env, vector)
    decoders: Decoders = []
    if keep_state:
        decoders = [
            (key, src, make_decoder(sub, leaf, batch, copy=copy)) for key, src, sub, leaf in plan
        ]
    # A small observation goes into row blocks (one copy, no tensor built per step), for
    # vector envs too: their own copy is skipped where the sub-envs are stepped directly.
    block = block_observation(plan[0], batch) if len(decoders) == 1 else None
    # The next roots of fused step-and-resets go into their own blocks: the merged
    # observation is a new array either way.
    reset_block = block
    # Resets read every observation; steps read those the row blocks do not hold.
    step_decoders = decoders if block is None else []
    decode_single = None
    if same_step and keep_state:
        single = gym_space_to_spec(space, categorical_action_encoding=categorical)
        decode_single = tuple(
            (key, src, make_decoder(sub, single[src] if src is not None else single, ()))
            for key, src, sub, _ in plan
        )
    return ObservationLayout(
        entries=entries,
        rows=StepRows(batch, block),
        reset_rows=StepRows(batch, reset_block),
        read=_reader(decoders, pixels),
        read_step=_reader(step_decoders, pixels) if step_decoders or pixels else None,
        decode_single=decode_single,
    )


__all__ = ["ObservationLayout", "observation_layout", "read_pixels"]
