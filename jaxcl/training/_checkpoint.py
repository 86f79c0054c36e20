"""Orbax checkpoints in ``workdir/checkpoints``: periodic saves, automatic resume."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import orbax.checkpoint as ocp
from absl import logging
from etils import epath

from jaxcl import methods
from jaxcl.training._errors import ConfigError
from jaxcl.training._state import checkpoint_tree, from_checkpoint_tree


def _root(workdir: str) -> epath.Path:
    """``workdir`` as an absolute path; URLs (``gs://...``) as they are."""
    path = epath.Path(workdir)
    return path if "://" in workdir else epath.Path(os.path.abspath(workdir))


# Config keys a resumed (or rerun) run may change: how it is scored, laid out, logged and
# checkpointed, and where its data lie. Every other key shapes the run's trajectory, which a
# checkpoint continues, so it must match the checkpoint's (``check_resumable``).
_FREE_TO_CHANGE = (
    "eval.",
    "mesh.",
    "repeats",
    "data.data_dir",
    "data.workers",
    "train.batch_size",  # checked apart, with its own message
    "train.checkpoint_every_steps",
    "train.keep_checkpoints",
    "train.log_every_steps",
    "train.knn_every_epochs",
    "train.eval_every_epochs",
    "train.reuse_host_memory",
    "train.eigen_cpu_convolutions",
)


def run_settings(config) -> dict:
    """The config's keys that shape a run's trajectory (all but ``_FREE_TO_CHANGE``), dotted
    and flattened, with JSON values: saved with each checkpoint. ``config``: a ConfigDict or
    a saved ``config.json``'s dict."""
    out = {}

    def walk(node, prefix):
        for key, value in node.items():
            name = f"{prefix}{key}"
            if isinstance(value, dict):
                walk(value, name + ".")
            elif not any(
                name == f or (f.endswith(".") and name.startswith(f)) for f in _FREE_TO_CHANGE
            ):
                out[name] = value

    if not isinstance(config, dict):
        config = json.loads(config.to_json_best_effort())
    walk(config, "")
    return out


def check_resumable(
    workdir: str, batch_size: int | None, settings: dict | None = None, previous=None
) -> None:
    """ConfigError if ``workdir`` holds a checkpoint that this run cannot continue: one
    written with a batch other than ``batch_size`` (a run's steps, the epoch each falls in,
    its schedule and its evaluation history are counted in batches of the written size, so
    resuming with another would shift them all), or by a run whose ``run_settings`` differ
    from ``settings`` in a key both have (a changed seed, method, model, optimiser or data set
    would have the rerun continue, or just report, another run's state). ``train.epochs`` may
    grow, to train a run longer (the schedule is then laid out again over the new length, and
    the run goes on from the step reached); it may not shrink. Reads the newest
    checkpoint's metadata only (nothing is written), before the run touches the workdir.
    Reading a finished run (``load_run``) is not affected. ``previous``: the workdir's saved
    ``config.json`` (as a dict), checked against for checkpoints that carry no settings."""
    directory = _root(workdir) / "checkpoints"
    if not directory.exists():
        return
    manager = ocp.CheckpointManager(
        directory, options=ocp.CheckpointManagerOptions(create=False, read_only=True)
    )
    try:
        step = manager.latest_step()
        written = None if step is None else manager.metadata(step).custom_metadata or {}
    finally:
        manager.close()
    written = written or {}
    batch = written.get("batch_size")  # checkpoints from before 2026-11-30: none
    if batch_size is not None and batch is not None and batch != batch_size:
        raise ConfigError(
            f"config.train.batch_size = {batch_size}: the checkpoint of step {step} in "
            f"{directory} was written with a batch of {batch}, and a run's steps, epochs and "
            f"learning-rate schedule are counted in its batches: resume with "
            f"train.batch_size = {batch}, or use a new --workdir"
        )
    saved = written.get("settings")
    if not saved:  # checkpoints from before 2026-11-30 carry none: the run's saved config
        saved = run_settings(previous) if previous else None
    if not saved or settings is None:
        return
    changed = []
    for key in sorted(set(saved) & set(settings)):
        was, now = saved[key], settings[key]
        if was == now or (key == "train.epochs" and _longer(was, now)):
            continue
        changed.append(f"{key}: {was!r} -> {now!r}")
    if changed:
        raise ConfigError(
            f"{directory}: the checkpoint of step {step} was written by a run with other "
            f"settings ({'; '.join(changed)}), and a rerun continues (or, when finished, "
            "reports) that run: rerun with its settings, or use a new --workdir. A rerun may "
            "change only train.epochs (upwards) and "
            + ", ".join(f + "*" if f.endswith(".") else f for f in _FREE_TO_CHANGE)
        )


def _longer(was, now) -> bool:
    """Whether ``train.epochs`` went from ``was`` to a larger ``now`` (both numbers)."""
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (was, now))
    return numbers and now > was


class Checkpointer:
    """Keeps the last ``keep`` checkpoints of the train state under ``workdir/checkpoints``.

    Saves are asynchronous; each becomes visible only once completely written (orbax writes
    to a temporary folder and renames it), so a run killed mid-save resumes from the previous
    checkpoint.
    """

    def __init__(self, workdir: str, *, every_steps: int, keep: int, layout: dict | None = None):
        """``layout``: ``{'data_devices': n, 'batch_size': b, 'settings': run_settings(..)}``
        of this run, saved with each checkpoint (``check_resumable`` reads it); a checkpoint
        saved with other data devices has its memory queues laid out again for this run's on
        restore (``jaxcl.methods.relayout_queues``)."""
        self.layout = dict(layout or {})
        self.directory = _root(workdir) / "checkpoints"
        self.manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(
                max_to_keep=keep, save_interval_steps=every_steps, create=True
            ),
        )

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def all_steps(self) -> list[int]:
        return sorted(self.manager.all_steps())

    def restore(self, abstract_state, step: int | None = None):
        """The :class:`TrainState` of checkpoint ``step`` (default the newest), laid out
        (shapes, dtypes, shardings) like ``abstract_state``; memory queues written on
        another number of data devices laid out again for this run's
        (``jaxcl.methods.relayout_queues``)."""
        step = self.manager.latest_step() if step is None else step
        target = checkpoint_tree(abstract_state)
        try:
            restored = self.manager.restore(step, args=ocp.args.StandardRestore(target))
        except ValueError as err:
            raise ValueError(
                f"{self.directory}: the checkpoint of step {step} does not fit this run's "
                "train state. A run cannot be resumed with train.early_stopping_patience "
                "switched on or off since it was written (the state then has another "
                f"structure), nor with another model or method: use a new --workdir. Orbax: {err}"
            ) from err
        state = from_checkpoint_tree(restored)
        logging.info("restored checkpoint of step %d from %s", step, self.directory)
        # Memory queues are laid out per device and step by the batch: laid out again for
        # another number of devices, refused with another batch. (Checkpoints from before
        # 2026-11-30 carry no layout: taken as written with this run's.)
        saved = self.manager.metadata(step).custom_metadata or {}
        was, now = saved.get("data_devices"), self.layout.get("data_devices")
        batch, batch_now = saved.get("batch_size"), self.layout.get("batch_size")
        if None not in (was, now) and (was != now or batch != batch_now):
            extra = methods.relayout_queues(
                state.extra, devices=(was, now), batch=batch, batch_now=batch_now
            )
            if was != now:
                logging.info("checkpoint of %d data devices read for %d", was, now)
            state = dataclasses.replace(state, extra=extra)
        return state

    def maybe_save(self, step: int, state, *, force: bool = False) -> bool:
        """Saves the :class:`TrainState` ``state`` when ``step`` is on the interval (or
        ``force``); True if a save started."""
        return self.manager.save(
            step,
            args=ocp.args.StandardSave(checkpoint_tree(state)),
            force=force,
            custom_metadata=self.layout,
        )

    def wait(self) -> None:
        self.manager.wait_until_finished()

    def close(self) -> None:
        self.manager.close()


def save_for_inspection(workdir: str, step: int, state) -> str:
    """Writes ``state`` to ``workdir/nonfinite_step_<step>``, apart from the rotating ones.

    Used when step ``step`` produced a non-finite loss: the regular checkpoints (the last good
    states) are left as they are, and this one holds the state whose batch failed. No update
    is applied after a failure, so its parameters, optimiser and model state and ``extra``
    are those the failing step started from; the step count, which went on counting, is set
    back to ``step`` and the failure mark cleared, so that running the train step on this
    state with step ``step``'s batch replays the failing step (its loss and gradients) with
    its own random key. (``last_loss`` and early stopping's bookkeeping are as at the stop.)
    The arrays are saved as they lie (orbax writes arrays sharded over several processes'
    devices).
    """
    path = _root(workdir) / f"nonfinite_step_{step}"
    replay = dataclasses.replace(
        state, step=np.asarray(step, np.int32), nonfinite_step=np.asarray(-1, np.int32)
    )
    checkpointer = ocp.StandardCheckpointer()
    try:
        checkpointer.save(path, replay, force=True)
        checkpointer.wait_until_finished()
    finally:
        checkpointer.close()
    return str(path)
