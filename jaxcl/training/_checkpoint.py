"""Orbax checkpoints in ``workdir/checkpoints``: periodic saves, automatic resume."""

from __future__ import annotations

import os

import jax
import orbax.checkpoint as ocp
from absl import logging
from etils import epath

from jaxcl.training._state import checkpoint_tree, from_checkpoint_tree


def _root(workdir: str) -> epath.Path:
    """``workdir`` as an absolute path; URLs (``gs://...``) as they are."""
    path = epath.Path(workdir)
    return path if "://" in workdir else epath.Path(os.path.abspath(workdir))


class Checkpointer:
    """Keeps the last ``keep`` checkpoints of the train state under ``workdir/checkpoints``.

    Saves are asynchronous; each becomes visible only once completely written (orbax writes
    to a temporary folder and renames it), so a run killed mid-save resumes from the previous
    checkpoint.
    """

    def __init__(self, workdir: str, *, every_steps: int, keep: int):
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
        (shapes, dtypes, shardings) like ``abstract_state``."""
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
        return state

    def maybe_save(self, step: int, state, *, force: bool = False) -> bool:
        """Saves the :class:`TrainState` ``state`` when ``step`` is on the interval (or
        ``force``); True if a save started."""
        return self.manager.save(
            step, args=ocp.args.StandardSave(checkpoint_tree(state)), force=force
        )

    def wait(self) -> None:
        self.manager.wait_until_finished()

    def close(self) -> None:
        self.manager.close()


def save_for_inspection(workdir: str, step: int, state) -> str:
    """Writes ``state`` to ``workdir/nonfinite_step_<step>``, apart from the rotating ones.

    Used when a step produced a non-finite loss: the regular checkpoints (the last good
    states) are left as they are, and this one holds the state whose batch failed.
    """
    path = _root(workdir) / f"nonfinite_step_{step}"
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(path, jax.device_get(state), force=True)
    checkpointer.wait_until_finished()
    return str(path)
