"""The training loop with hook points: :class:`Trainer`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn
from tqdm.auto import tqdm

from rl_objectives.loggers._utils import as_float
from rl_objectives.loggers.common import Logger
from rl_objectives.trainers._utils import check_positive_int, count_frames, sum_loss_terms
from rl_objectives.trainers.hooks.optimizer import OptimizerHook

#: The hook points of :meth:`Trainer.register_op`, in the order a batch meets them.
HOOK_POINTS = (
    "batch_process",
    "pre_steps_log",
    "pre_optim_steps",
    "pre_epoch",
    "process_optim_batch",
    "post_loss",
    "optimizer",
    "post_optim",
    "post_optim_log",
    "post_epoch",
    "post_steps",
    "post_steps_log",
)


class Trainer:
    """Collects batches, optimises a loss on them and calls hooks at fixed points.

    For each ``batch`` the collector yields::

        batch = batch_process ops(batch)              # each op may return a new batch
        collected_frames += frames in batch           # ("collector", "mask") if present
        pre_steps_log ops(batch) -> scalars to log
        pre_optim_steps ops()
        repeat num_epochs times:
            batch = pre_epoch ops(batch)                 # e.g. advantages (ValueEstimatorHook)
            repeat optim_steps_per_batch times:
                sub_batch = process_optim_batch ops(batch)   # e.g. a replay-buffer sample
                losses = loss_module(sub_batch)
                post_loss ops(sub_batch)
                optimizer ops(losses) -> scalars to log  # OptimizerHook: backward, clip, step
                post_optim ops()                             # e.g. target-network updates
                post_optim_log ops(sub_batch) -> scalars to log
            post_epoch ops()
        log the mean of each scalar entry of `losses` over the steps, and "optim_steps"
        post_steps ops()
        post_steps_log ops(batch) -> scalars to log
        save the trainer file every save_trainer_interval frames

    Training stops once ``collected_frames >= total_frames``, when the collector is
    exhausted, or after a hook calls :meth:`stop`; the trainer file is then saved. A log op
    returns ``None`` or a dict of scalars, with an optional ``"log_pbar": True`` entry to show
    them on the progress bar. Scalars go to the logger at most once every ``log_interval``
    frames per name, with ``step=collected_frames``.

    The collector is any iterable of TensorDicts. :meth:`state_dict` holds the whole training
    state: frame and step counts, the loss module, the optimizer, the hooks registered with
    :meth:`register_module`, the collector's ``state_dict()`` when it has one, and torch's
    random state (CPU, and CUDA when in use). A trainer built the same way that loads it (:meth:`load_from_file`) goes on
    where the saved one stopped.

    Args:
        collector: an iterable of TensorDict batches.
        total_frames: the number of frames to train on, a positive int.
        loss_module: a module mapping a batch to a TensorDict of ``loss*`` terms and
            diagnostics (an rl-core ``LossModule``).
        optimizer: the optimizer of the loss module's parameters: the trainer registers an
            :class:`~rl_objectives.trainers.OptimizerHook` over every ``loss*`` term. ``None``
            registers none: register your own ``OptimizerHook`` s (one per optimizer).

    Keyword Args:
        logger: where scalars go; ``None`` logs nothing (the progress bar still shows them).
        optim_steps_per_batch: optimisation steps per collected batch and epoch; 0 collects
            without training. Defaults to 1.
        num_epochs: passes over each batch (each between ``pre_epoch`` and ``post_epoch``).
            Defaults to 1.
        clip_grad_norm: with ``clip_norm``, clip the gradients' total norm (``True``) or each
            gradient's values (``False``). Defaults to ``True``.
        clip_norm: the clipping threshold; ``None`` (default) clips nothing.
        progress_bar: show a tqdm bar of the collected frames. Defaults to ``True``.
        seed: if given, seeds torch and the collector (its ``set_seed``, when it has one).
        save_trainer_interval: frames between two saves of ``save_trainer_file``.
            Defaults to 10000.
        log_interval: frames between two logger writes of the same scalar. Defaults to 10000.
        save_trainer_file: where :meth:`save_trainer` writes; ``None`` saves nothing.
        frame_skip: frames each collected step stands for. Defaults to 1.

    Raises:
        TypeError: a collector that is not iterable, a loss module that is not an
            ``nn.Module``, an optimizer that is not a ``torch.optim.Optimizer``, a logger that
            is not a :class:`~rl_objectives.loggers.Logger`.
        ValueError: a count that is not a positive int, or a negative ``clip_norm``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.trainers import Trainer
        >>> class Loss(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.weight = torch.nn.Parameter(torch.zeros(()))
        ...
        ...     def forward(self, td):
        ...         return TensorDict(loss_fit=(self.weight - td["target"]).pow(2).mean())
        >>> batches = [TensorDict(target=torch.ones(4), batch_size=[4]) for _ in range(50)]
        >>> loss = Loss()
        >>> trainer = Trainer(batches, 200, loss, torch.optim.SGD(loss.parameters(), lr=0.01),
        ...                   progress_bar=False)
        >>> trainer.train()
        >>> print(trainer.collected_frames, trainer.optim_count, round(loss.weight.item(), 3))
        200 50 0.636
    """

    def __init__(
        self,
        collector: Iterable[TensorDictBase],
        total_frames: int,
        loss_module: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        logger: Logger | None = None,
        optim_steps_per_batch: int = 1,
        clip_grad_norm: bool = True,
        clip_norm: float | None = None,
        progress_bar: bool = True,
        seed: int | None = None,
        save_trainer_interval: int = 10000,
        log_interval: int = 10000,
        save_trainer_file: str | os.PathLike | None = None,
        frame_skip: int = 1,
        num_epochs: int = 1,
    ) -> None:
        if not isinstance(collector, Iterable):
            raise TypeError(
                f"Trainer: collector must be an iterable of TensorDicts, got "
                f"{type(collector).__name__}."
            )
        if not isinstance(loss_module, nn.Module):
            raise TypeError(
                f"Trainer: loss_module must be an nn.Module (a LossModule), got "
                f"{type(loss_module).__name__}."
            )
        if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"Trainer: optimizer must be a torch.optim.Optimizer or None, got "
                f"{type(optimizer).__name__}."
            )
        if logger is not None and not isinstance(logger, Logger):
            raise TypeError(
                f"Trainer: logger must be an rl_objectives.loggers.Logger or None, got "
                f"{type(logger).__name__}."
            )
        if optim_steps_per_batch != 0:
            check_positive_int("Trainer", "optim_steps_per_batch", optim_steps_per_batch)
        if clip_norm is not None and not (isinstance(clip_norm, int | float) and clip_norm >= 0):
            raise ValueError(f"Trainer: clip_norm must be None or >= 0, got {clip_norm!r}.")
        self.collector = collector
        self.total_frames = check_positive_int("Trainer", "total_frames", total_frames)
        self.loss_module = loss_module
        self.optimizer = optimizer
        self.logger = logger
        self.optim_steps_per_batch = optim_steps_per_batch
        self.clip_grad_norm = clip_grad_norm
        self.clip_norm = clip_norm
        self.progress_bar = progress_bar
        self.save_trainer_interval = check_positive_int(
            "Trainer", "save_trainer_interval", save_trainer_interval
        )
        self.log_interval = check_positive_int("Trainer", "log_interval", log_interval)
        self.save_trainer_file = None if save_trainer_file is None else Path(save_trainer_file)
        self.frame_skip = check_positive_int("Trainer", "frame_skip", frame_skip)
        self.num_epochs = check_positive_int("Trainer", "num_epochs", num_epochs)
        self.collected_frames = 0
        self.optim_count = 0
        self.latest_logs: dict[str, float] = {}
        self.latest_log_frames: dict[str, int] = {}
        self._last_logged: dict[str, int] = {}
        self._last_save_frame = 0
        self._pbar_values: dict[str, float] = {}
        self._stop_reason: str | None = None
        self._ops: dict[str, list[tuple[Callable[..., Any], dict[str, Any]]]] = {
            point: [] for point in HOOK_POINTS
        }
        self._modules: dict[str, Any] = {}
        #: The context the loss module runs in (an optimisation stepper may set autocast).
        self.forward_context: Callable[[], contextlib.AbstractContextManager[Any]] = (
            contextlib.nullcontext
        )
        if seed is not None:
            torch.manual_seed(seed)
            if hasattr(collector, "set_seed"):
                collector.set_seed(seed)
        if optimizer is not None:
            OptimizerHook(optimizer).register(self)

    # Hooks.

    def register_op(self, dest: str, op: Callable[..., Any], **kwargs: Any) -> None:
        """Adds ``op`` at the hook point ``dest``; ops at one point run in registration order.

        Args:
            dest: one of :data:`HOOK_POINTS`.
            op: the callable. ``batch_process`` and ``process_optim_batch`` ops take the batch
                and return a batch (or ``None`` to keep it), and so do ``pre_epoch`` ops;
                ``post_loss`` ops take the sub-batch; ``optimizer`` ops take the loss
                TensorDict and return ``None`` or a dict of scalars to log; log ops take the
                batch and return ``None`` or a dict of scalars; the others take no argument.
            **kwargs: keyword arguments passed to ``op`` at every call.

        Raises:
            ValueError: ``dest`` is not a hook point.
            TypeError: ``op`` is not callable.
        """
        if dest not in self._ops:
            raise ValueError(
                f"Trainer.register_op: dest must be one of {HOOK_POINTS}, got {dest!r}."
            )
        if not callable(op):
            raise TypeError(f"Trainer.register_op: op must be callable, got {type(op).__name__}.")
        self._ops[dest].append((op, kwargs))

    def register_module(self, name: str, module: Any) -> None:
        """Puts ``module``'s ``state_dict()`` in the trainer's under ``hooks/{name}``.

        Args:
            name: a name unique among the registered modules.
            module: anything with ``state_dict()`` and ``load_state_dict(state)``.

        Raises:
            ValueError: the name is taken.
            TypeError: ``module`` lacks ``state_dict`` or ``load_state_dict``.
        """
        if name in self._modules:
            raise ValueError(
                f"Trainer.register_module: a module is already registered as {name!r}. "
                f"Register the hook with another name (hook.register(trainer, name=...))."
            )
        if not (hasattr(module, "state_dict") and hasattr(module, "load_state_dict")):
            raise TypeError(
                f"Trainer.register_module: {name!r} must have state_dict() and "
                f"load_state_dict(), got {type(module).__name__}."
            )
        self._modules[name] = module

    def registered_modules(self) -> dict[str, Any]:
        """The modules registered with :meth:`register_module`, by name (a copy)."""
        return dict(self._modules)

    def optimizer_hook_count(self) -> int:
        """The number of ops registered at ``"optimizer"`` so far."""
        return len(self._ops["optimizer"])

    def stop(self, reason: str) -> None:
        """Ends training after the current batch (hooks call it, e.g. early stopping)."""
        self._stop_reason = reason

    @property
    def stop_reason(self) -> str | None:
        """Why :meth:`stop` was called during the last :meth:`train`, or ``None``."""
        return self._stop_reason

    def _process(self, dest: str, batch: TensorDictBase) -> TensorDictBase:
        for op, kwargs in self._ops[dest]:
            out = op(batch, **kwargs)
            if out is not None:
                batch = out
        return batch

    def _call(self, dest: str, *args: Any) -> None:
        for op, kwargs in self._ops[dest]:
            op(*args, **kwargs)

    def _call_log(self, dest: str, batch: TensorDictBase) -> None:
        for op, kwargs in self._ops[dest]:
            out = op(batch, **kwargs)
            if out is None:
                continue
            out = dict(out)
            log_pbar = bool(out.pop("log_pbar", False))
            self._log(log_pbar=log_pbar, **out)

    def _log(self, *, log_pbar: bool = False, **values: Any) -> None:
        for name, value in values.items():
            value = as_float("Trainer", name, value)
            self.latest_logs[name] = value
            self.latest_log_frames[name] = self.collected_frames
            if log_pbar:
                self._pbar_values[name] = value
            last = self._last_logged.get(name)
            if self.logger is not None and (
                last is None or self.collected_frames - last >= self.log_interval
            ):
                self.logger.log_scalar(name, value, step=self.collected_frames)
                self._last_logged[name] = self.collected_frames

    # The loop.

    def train(self) -> None:
        """Runs the loop until ``total_frames`` frames are collected (see the class doc)."""
        self._stop_reason = None
        if self.collected_frames >= self.total_frames:
            return
        pbar = tqdm(
            total=self.total_frames, initial=self.collected_frames, disable=not self.progress_bar
        )
        try:
            for batch in self.collector:
                batch = self._process("batch_process", batch)
                frames = count_frames(batch) * self.frame_skip
                self.collected_frames += frames
                self._call_log("pre_steps_log", batch)
                if self.optim_steps_per_batch > 0:
                    self.optim_steps(batch)
                self._call("post_steps")
                self._call_log("post_steps_log", batch)
                pbar.update(frames)
                if self._pbar_values:
                    pbar.set_postfix({k: f"{v:.4g}" for k, v in self._pbar_values.items()})
                if self.collected_frames >= self.total_frames or self._stop_reason is not None:
                    break
                self.save_trainer()
        finally:
            pbar.close()
        self.save_trainer(force_save=True)

    def steps_per_epoch(self, batch: TensorDictBase) -> int:
        """Optimisation steps per epoch on ``batch``: ``optim_steps_per_batch`` here."""
        return self.optim_steps_per_batch

    def optim_steps(self, batch: TensorDictBase) -> None:
        """Runs ``num_epochs`` epochs of optimisation steps on ``batch`` and logs the losses."""
        if not self._ops["optimizer"]:
            raise ValueError(
                "Trainer: no optimizer: build the trainer with optimizer=... or register an "
                "OptimizerHook (OptimizerHook(optimizer).register(trainer))."
            )
        self._call("pre_optim_steps")
        totals: dict[str, torch.Tensor] = {}
        count = 0
        for _ in range(self.num_epochs):
            batch = self._process("pre_epoch", batch)
            for _ in range(self.steps_per_epoch(batch)):
                self.optim_count += 1
                count += 1
                sub_batch = self._process("process_optim_batch", batch)
                with self.forward_context():
                    losses = self.loss_module(sub_batch)
                self._call("post_loss", sub_batch)
                for name, value in self._optimizer_step(losses).items():
                    totals[name] = totals[name] + value if name in totals else value
                self._call("post_optim")
                self._call_log("post_optim_log", sub_batch)
            self._call("post_epoch")
        means = {name: (total / max(count, 1)).item() for name, total in totals.items()}
        self._log(optim_steps=self.optim_count, **means)

    def _optimizer_step(self, losses: TensorDictBase) -> dict[str, torch.Tensor]:
        _, logged = sum_loss_terms(type(self.loss_module).__name__, losses)
        for op, kwargs in self._ops["optimizer"]:
            out = op(losses, **kwargs)
            if out is not None:
                logged.update(
                    {name: torch.as_tensor(v).detach().float() for name, v in out.items()}
                )
        return logged

    # Checkpoints.

    def state_dict(self) -> dict[str, Any]:
        """The whole training state; see the class doc."""
        state = {
            "collected_frames": self.collected_frames,
            "optim_count": self.optim_count,
            "last_save_frame": self._last_save_frame,
            "last_logged": dict(self._last_logged),
            "latest_logs": dict(self.latest_logs),
            "latest_log_frames": dict(self.latest_log_frames),
            "loss_module": self.loss_module.state_dict(),
            "hooks": {name: module.state_dict() for name, module in self._modules.items()},
            **({} if self.optimizer is None else {"optimizer": self.optimizer.state_dict()}),
            "torch_rng_state": torch.get_rng_state(),
        }
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["cuda_rng_states"] = torch.cuda.get_rng_state_all()
        if hasattr(self.collector, "state_dict"):
            state["collector"] = self.collector.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a :meth:`state_dict` into this trainer (built with the same parts).

        Raises:
            KeyError: the state lacks an entry, or holds a hook not registered here.
        """
        missing = [k for k in ("collected_frames", "loss_module", "hooks") if k not in state_dict]
        if missing:
            raise KeyError(
                f"Trainer.load_state_dict: the state lacks {missing}; expected a dict made by "
                f"Trainer.state_dict()."
            )
        unknown = sorted(set(state_dict["hooks"]) - set(self._modules))
        if unknown:
            raise KeyError(
                f"Trainer.load_state_dict: the state holds hooks {unknown} that are not "
                f"registered here (registered: {sorted(self._modules)}). Register the same "
                f"hooks, under the same names, before loading."
            )
        self.collected_frames = int(state_dict["collected_frames"])
        self.optim_count = int(state_dict.get("optim_count", 0))
        self._last_save_frame = int(state_dict.get("last_save_frame", self.collected_frames))
        self._last_logged = dict(state_dict.get("last_logged", {}))
        self.latest_logs = dict(state_dict.get("latest_logs", {}))
        self.latest_log_frames = dict(state_dict.get("latest_log_frames", {}))
        self.loss_module.load_state_dict(state_dict["loss_module"])
        if self.optimizer is not None:
            if "optimizer" not in state_dict:
                raise KeyError(
                    "Trainer.load_state_dict: the state holds no 'optimizer' entry but this "
                    "trainer has an optimizer; load a state saved by a trainer built with one."
                )
            self.optimizer.load_state_dict(state_dict["optimizer"])
        for name, module_state in state_dict["hooks"].items():
            self._modules[name].load_state_dict(module_state)
        if "collector" in state_dict and hasattr(self.collector, "load_state_dict"):
            self.collector.load_state_dict(state_dict["collector"])
        if "torch_rng_state" in state_dict:
            torch.set_rng_state(state_dict["torch_rng_state"])
        if "cuda_rng_states" in state_dict and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state_dict["cuda_rng_states"])

    def save_trainer(self, force_save: bool = False) -> None:
        """Writes :meth:`state_dict` to ``save_trainer_file`` if due (or ``force_save``).

        The file is written next to its final place and renamed, so a crash mid-write leaves
        the previous checkpoint intact.
        """
        if self.save_trainer_file is None:
            return
        due = self.collected_frames - self._last_save_frame >= self.save_trainer_interval
        if not (force_save or due):
            return
        self._last_save_frame = self.collected_frames
        path = self.save_trainer_file
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        torch.save(self.state_dict(), tmp)
        os.replace(tmp, path)

    def load_from_file(self, file: str | os.PathLike) -> None:
        """Loads a file written by :meth:`save_trainer`.

        The file is unpickled (collector and buffer states may hold TensorDicts): load only
        files you wrote.

        Raises:
            FileNotFoundError: there is no such file.
        """
        path = Path(file)
        if not path.is_file():
            raise FileNotFoundError(f"Trainer.load_from_file: no trainer file at {str(path)!r}.")
        self.load_state_dict(torch.load(path, weights_only=False))

    def __repr__(self) -> str:
        hooks = {point: len(ops) for point, ops in self._ops.items() if ops}
        return (
            f"Trainer(collected_frames={self.collected_frames}, total_frames={self.total_frames}, "
            f"optim_steps_per_batch={self.optim_steps_per_batch}, hooks={hooks})"
        )
