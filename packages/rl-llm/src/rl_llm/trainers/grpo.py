"""GRPOTrainer: the GRPO loop (collect, learn, push weights to the generator) over built parts."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import torch
from tensordict import TensorDictBase


def _total_loss(out: TensorDictBase) -> torch.Tensor:
    """The sum of a loss output's ``loss_*`` entries (TorchRL's convention)."""
    terms = [
        value
        for key, value in out.items()
        if isinstance(key, str) and key.startswith("loss_") and torch.is_tensor(value)
    ]
    if not terms:
        raise KeyError(
            f"GRPOTrainer: the loss module's output has no 'loss_*' entry, got keys "
            f"{sorted(str(k) for k in out.keys())}. Return the loss terms under 'loss_' names."
        )
    return torch.stack([t.sum() for t in terms]).sum()


class GRPOTrainer:
    """Trains a language-model policy with GRPO (or any loss whose output holds ``loss_*``).

    The loop: each batch the collector yields (e.g. an :class:`~rl_llm.collectors.LLMCollector`
    with ``postproc=MCAdvantage(grpo_size=...)``) counts ``batch.numel() * frame_skip`` frames;
    it is written to ``replay_buffer`` when one is given. Then, ``num_epochs`` times,
    ``optim_steps_per_batch`` micro-batches are drawn (``replay_buffer.sample(batch_size)``,
    or the collected batch, cut to ``batch_size`` random rows when set). Each micro-batch's
    loss (the sum of its ``loss_*`` entries, under ``torch.autocast`` with ``mixed_precision``)
    is divided by ``gradient_accumulation_steps`` and back-propagated; every
    ``gradient_accumulation_steps`` micro-batches the gradients are clipped to ``clip_norm``
    and the optimizer steps. Every ``weight_update_frequency`` optimizer steps,
    ``weight_sync_sender.update_weights()`` pushes the weights to the inference engine (and
    ``empty_replay_buffer_on_weight_update`` empties the buffer: synchronous GRPO). The loss
    module learns in train mode; each of its modules gets its own mode back after each batch's
    optimisation (a policy model in eval mode generates in eval mode). The loop
    ends once ``total_frames`` frames were collected; an unfinished accumulation at the end is
    dropped.

    After each collected batch, :attr:`logs` gets a dict: ``frames``, ``optim_steps``, the
    batch's mean ``reward`` (``log_rewards``), the mean of each ``loss_*`` entry, of each
    entry whose name holds ``kl`` (``log_kl``), and ``grad_norm``; a ``logger`` (any object
    with ``log_scalar(name, value, step=...)``) receives them every ``log_interval`` frames.
    With ``save_trainer_file`` the trainer's :meth:`state_dict` is saved every
    ``save_trainer_interval`` frames and at the end.

    TorchRL's ``optimization_stepper``, ``checkpoint*``, ``progress_bar``, ``async_collection``
    and ``log_timings`` arguments are not taken: the step above is built in, an asynchronous
    collector (``LLMCollector.start()``) is iterated like a synchronous one.

    Args:
        collector: an iterable of collected batches (TensorDicts with a ``("next",
            "reward")`` entry when ``log_rewards``).
        total_frames: stop after this many frames (dialog turns).
        frame_skip: frames per collected element (1 for LLM tasks).
        optim_steps_per_batch: micro-batches per epoch over each collected batch.
        loss_module: a module mapping a micro-batch to an output with ``loss_*`` entries.
        optimizer: the optimizer of the trained parameters.
        weight_sync_sender: an object with ``update_weights()``, or None.
        weight_update_frequency: optimizer steps between weight pushes.
        empty_replay_buffer_on_weight_update: empty the replay buffer after each push.
        replay_buffer: an object with ``extend``, ``sample`` (and ``empty`` when emptied).
        batch_size: rows per micro-batch (the buffer's own batch size when None).
        mixed_precision: run the loss under ``torch.autocast`` (float16 adds a GradScaler).
        autocast_dtype: the autocast dtype.
        gradient_accumulation_steps: micro-batches per optimizer step.
        logger: an object with ``log_scalar(name, value, step=...)``.
        clip_grad_norm: clip the gradients' norm before each step.
        clip_norm: the norm to clip to (None: no clipping).
        seed: seeds torch (and the collector, if it has ``set_seed``).
        save_trainer_interval: frames between saves.
        log_interval: frames between logger calls.
        save_trainer_file: where to save the trainer's state.
        num_epochs: epochs over each collected batch.
        log_rewards: log the batches' mean reward.
        log_kl: log the loss output's ``*kl*`` entries.

    Raises:
        ValueError: a count below 1 (or ``total_frames`` below 1), or a missing optimizer.
        TypeError: a ``weight_sync_sender`` without ``update_weights``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.trainers import GRPOTrainer
        >>> w = torch.nn.Parameter(torch.zeros(2))
        >>> def loss(td):
        ...     return TensorDict(loss_objective=-(td["x"] * w).sum(-1).mean())
        >>> batches = [TensorDict(x=torch.ones(4, 2), batch_size=[4]) for _ in range(3)]
        >>> trainer = GRPOTrainer(collector=batches, total_frames=8, optim_steps_per_batch=2,
        ...     loss_module=loss, optimizer=torch.optim.SGD([w], lr=0.5), clip_norm=None)
        >>> trainer.train()
        >>> trainer.collected_frames, trainer.optim_steps, w.tolist()
        (8, 4, [2.0, 2.0])
    """

    def __init__(
        self,
        *,
        collector: Iterable[TensorDictBase],
        total_frames: int,
        frame_skip: int = 1,
        optim_steps_per_batch: int,
        loss_module: torch.nn.Module | Callable[[TensorDictBase], TensorDictBase],
        optimizer: torch.optim.Optimizer | None = None,
        weight_sync_sender: Any = None,
        weight_update_frequency: int = 1,
        empty_replay_buffer_on_weight_update: bool = False,
        replay_buffer: Any = None,
        batch_size: int | None = None,
        mixed_precision: bool = False,
        autocast_dtype: torch.dtype = torch.bfloat16,
        gradient_accumulation_steps: int = 1,
        logger: Any = None,
        clip_grad_norm: bool = True,
        clip_norm: float | None = 1.0,
        seed: int | None = None,
        save_trainer_interval: int = 10000,
        log_interval: int = 10000,
        save_trainer_file: str | os.PathLike | None = None,
        num_epochs: int = 1,
        log_rewards: bool = True,
        log_kl: bool = True,
    ) -> None:
        counts = {
            "total_frames": total_frames,
            "frame_skip": frame_skip,
            "optim_steps_per_batch": optim_steps_per_batch,
            "weight_update_frequency": weight_update_frequency,
            "gradient_accumulation_steps": gradient_accumulation_steps,
            "num_epochs": num_epochs,
            "log_interval": log_interval,
            "save_trainer_interval": save_trainer_interval,
        }
        bad = {k: v for k, v in counts.items() if not isinstance(v, int) or v < 1}
        if bad:
            raise ValueError(f"GRPOTrainer: expected integers >= 1, got {bad}.")
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"GRPOTrainer: expected batch_size >= 1 or None, got {batch_size!r}.")
        if optimizer is None:
            raise ValueError(
                "GRPOTrainer: expected an optimizer (torch.optim.Optimizer over the trained "
                "parameters), got None."
            )
        if weight_sync_sender is not None and not callable(
            getattr(weight_sync_sender, "update_weights", None)
        ):
            raise TypeError(
                f"GRPOTrainer: expected weight_sync_sender with an update_weights() method, got "
                f"{type(weight_sync_sender).__name__}."
            )
        if empty_replay_buffer_on_weight_update and replay_buffer is None:
            raise ValueError(
                "GRPOTrainer: empty_replay_buffer_on_weight_update=True needs a replay_buffer."
            )
        self.collector = collector
        self.total_frames = total_frames
        self.frame_skip = frame_skip
        self.optim_steps_per_batch = optim_steps_per_batch
        self.loss_module = loss_module
        self.optimizer = optimizer
        self.weight_sync_sender = weight_sync_sender
        self.weight_update_frequency = weight_update_frequency
        self.empty_replay_buffer_on_weight_update = empty_replay_buffer_on_weight_update
        self.replay_buffer = replay_buffer
        self.batch_size = batch_size
        self.mixed_precision = mixed_precision
        self.autocast_dtype = autocast_dtype
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.logger = logger
        self.clip_norm = clip_norm if clip_grad_norm else None
        self.save_trainer_interval = save_trainer_interval
        self.log_interval = log_interval
        self.save_trainer_file = save_trainer_file
        self.num_epochs = num_epochs
        self.log_rewards = log_rewards
        self.log_kl = log_kl
        self.collected_frames = 0
        self.optim_steps = 0
        self.weight_updates = 0
        self.logs: list[dict[str, float]] = []
        self._micro_batches = 0
        self._last_log = self._last_save = 0
        self._params = [p for group in optimizer.param_groups for p in group["params"]]
        device = self._params[0].device.type if self._params else "cpu"
        self._device_type = device
        self._scaler = torch.amp.GradScaler(
            device, enabled=mixed_precision and autocast_dtype == torch.float16
        )
        if seed is not None:
            torch.manual_seed(seed)
            if callable(getattr(collector, "set_seed", None)):
                collector.set_seed(seed)

    def _micro_batch(self, batch: TensorDictBase) -> TensorDictBase:
        if self.replay_buffer is not None:
            if self.batch_size is None:
                return self.replay_buffer.sample()
            return self.replay_buffer.sample(self.batch_size)
        if self.batch_size is None or self.batch_size >= batch.shape[0]:
            return batch
        return batch[torch.randperm(batch.shape[0])[: self.batch_size]]

    def _learn(self, micro: TensorDictBase, sums: dict[str, list[float]]) -> None:
        with torch.autocast(
            self._device_type, dtype=self.autocast_dtype, enabled=self.mixed_precision
        ):
            out = self.loss_module(micro)
            loss = _total_loss(out)
        self._scaler.scale(loss / self.gradient_accumulation_steps).backward()
        for key, value in out.items():
            if not (isinstance(key, str) and torch.is_tensor(value)):
                continue
            if key.startswith("loss_") or (self.log_kl and "kl" in key.lower()):
                sums.setdefault(key, []).append(value.detach().float().mean().item())
        self._micro_batches += 1
        if self._micro_batches % self.gradient_accumulation_steps:
            return
        self._scaler.unscale_(self.optimizer)
        if self.clip_norm is not None:
            norm = torch.nn.utils.clip_grad_norm_(self._params, self.clip_norm)
            sums.setdefault("grad_norm", []).append(float(norm))
        self._scaler.step(self.optimizer)
        self._scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        self.optim_steps += 1
        if (
            self.weight_sync_sender is not None
            and self.optim_steps % self.weight_update_frequency == 0
        ):
            self.weight_sync_sender.update_weights()
            self.weight_updates += 1
            if self.empty_replay_buffer_on_weight_update:
                self.replay_buffer.empty()

    def train(self) -> None:
        """Runs the loop until ``total_frames`` frames are collected (see the class doc)."""
        modules = (
            list(self.loss_module.modules())
            if isinstance(self.loss_module, torch.nn.Module)
            else []
        )
        try:
            for batch in self.collector:
                self.collected_frames += batch.numel() * self.frame_skip
                if self.replay_buffer is not None:
                    self.replay_buffer.extend(batch.reshape(-1))
                sums: dict[str, list[float]] = {}
                # Learn in train mode, then give every module its mode back (the policy's
                # model generates the next batch in eval mode: no dropout).
                modes = [m.training for m in modules]
                for m in modules:
                    m.training = True
                try:
                    for _ in range(self.num_epochs):
                        for _ in range(self.optim_steps_per_batch):
                            self._learn(self._micro_batch(batch), sums)
                finally:
                    for m, mode in zip(modules, modes, strict=True):
                        m.training = mode
                self._log(batch, sums)
                if self.collected_frames >= self.total_frames:
                    break
        finally:
            self.optimizer.zero_grad(set_to_none=True)
            self._micro_batches = 0
        if self.save_trainer_file is not None:
            self.save_trainer()

    def _log(self, batch: TensorDictBase, sums: dict[str, list[float]]) -> None:
        entry = {"frames": float(self.collected_frames), "optim_steps": float(self.optim_steps)}
        reward = batch.get(("next", "reward"), None) if self.log_rewards else None
        if reward is not None:
            entry["reward"] = reward.float().mean().item()
        entry.update({k: sum(v) / len(v) for k, v in sums.items()})
        self.logs.append(entry)
        if self.logger is not None and self.collected_frames - self._last_log >= self.log_interval:
            self._last_log = self.collected_frames
            for name, value in entry.items():
                self.logger.log_scalar(name, value, step=self.collected_frames)
        if (
            self.save_trainer_file is not None
            and self.collected_frames - self._last_save >= self.save_trainer_interval
        ):
            self._last_save = self.collected_frames
            self.save_trainer()

    def state_dict(self) -> dict[str, Any]:
        """The loss module's and optimizer's states and the counters."""
        state: dict[str, Any] = {
            "optimizer": self.optimizer.state_dict(),
            "collected_frames": self.collected_frames,
            "optim_steps": self.optim_steps,
            "weight_updates": self.weight_updates,
        }
        if isinstance(self.loss_module, torch.nn.Module):
            state["loss_module"] = self.loss_module.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` returned."""
        missing = {"optimizer", "collected_frames", "optim_steps"} - set(state_dict)
        if missing:
            raise KeyError(f"GRPOTrainer.load_state_dict: the state lacks {sorted(missing)}.")
        self.optimizer.load_state_dict(state_dict["optimizer"])
        if isinstance(self.loss_module, torch.nn.Module) and "loss_module" in state_dict:
            self.loss_module.load_state_dict(state_dict["loss_module"])
        self.collected_frames = state_dict["collected_frames"]
        self.optim_steps = state_dict["optim_steps"]
        self.weight_updates = state_dict.get("weight_updates", 0)

    def save_trainer(self) -> None:
        """Saves :meth:`state_dict` to ``save_trainer_file`` (written whole, then renamed)."""
        if self.save_trainer_file is None:
            raise ValueError("GRPOTrainer.save_trainer: no save_trainer_file was given.")
        path = os.fspath(self.save_trainer_file)
        torch.save(self.state_dict(), path + ".tmp")
        os.replace(path + ".tmp", path)
