"""What a run keeps in its workdir besides checkpoints: its config and evaluation history.

Paths go through ``etils.epath`` (as orbax's do), so a workdir may be local or on Cloud
Storage (``gs://bucket/run``, what a multi-host TPU slice needs).
"""

from __future__ import annotations

import json

import jax
import ml_collections
from absl import logging
from etils import epath


def check_workdir(workdir: str) -> None:
    """ValueError when ``workdir`` exists and is not a folder (checked before any work)."""
    path = epath.Path(workdir)
    if path.exists() and not path.is_dir():
        raise ValueError(f"--workdir={workdir}: exists and is not a folder; name a folder")


def make_workdir(workdir: str) -> None:
    epath.Path(workdir).mkdir(parents=True, exist_ok=True)


def save_config(config: ml_collections.ConfigDict, workdir: str) -> None:
    """Writes ``workdir/config.json`` (process 0), so that a run's results carry its setup.

    A resumed run whose config differs from the saved one logs the keys that changed and
    keeps the saved file as ``config.<n>.json``.
    """
    if jax.process_index() != 0:
        return
    path = epath.Path(workdir) / "config.json"
    text = config.to_json_best_effort(indent=2, sort_keys=True)
    if path.exists():
        if path.read_text() == text:
            return
        n = 1
        while (epath.Path(workdir) / f"config.{n}.json").exists():
            n += 1
        try:
            changed = _changed_keys(json.loads(path.read_text()), json.loads(text))
        except json.JSONDecodeError:
            changed = ["the saved file is not JSON"]
        path.rename(epath.Path(workdir) / f"config.{n}.json")
        logging.warning(
            "%s held a different config (changed: %s); it is kept as config.%d.json and this "
            "run's config is written in its place",
            path,
            ", ".join(changed) or "formatting only",
            n,
        )
    path.write_text(text)


def _changed_keys(old: dict, new: dict, prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two configs' JSON, with both values."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, "<absent>"), new.get(key, "<absent>")
        if isinstance(a, dict) and isinstance(b, dict):
            out += _changed_keys(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} -> {b!r}")
    return out


class EvalHistory:
    """The per-epoch evaluations of a run, in ``workdir/eval_history.json`` (process 0 writes).

    On resume, the entries of epochs up to the restored one are kept (and the file rewritten
    without the later ones), so the final results (e.g. the mean over the last epochs'
    evaluations) are those of an uninterrupted run; the trainer makes up the restored
    epoch's own evaluation if a kill left it unrecorded.
    """

    def __init__(self, workdir: str, upto_epoch: int):
        self.path = epath.Path(workdir) / "eval_history.json"
        self.entries: list[dict] = []
        if self.path.exists():
            saved = json.loads(self.path.read_text())
            self.entries = [h for h in saved if h["epoch"] <= upto_epoch]
            if len(self.entries) < len(saved):  # a killed run's later epochs: not this run's
                self._write()

    def _write(self) -> None:
        # Atomically (a new file renamed over the old): other processes may be reading it.
        if jax.process_index() == 0:
            partial = self.path.parent / (self.path.name + ".partial")
            partial.write_text(json.dumps(self.entries, indent=2))
            partial.replace(self.path)

    def append(self, epoch: int, scores: dict) -> None:
        self.entries.append({"epoch": epoch, **scores})
        self._write()


def write_json(path, value) -> None:
    """Writes ``value`` as JSON to ``path`` (process 0 only)."""
    if jax.process_index() == 0:
        epath.Path(path).write_text(json.dumps(value, indent=2))


def write_results(workdir: str, results: dict) -> None:
    write_json(epath.Path(workdir) / "results.json", results)
