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


# ``config.eval`` keys that do not change what one epoch's evaluation gives (which epochs are
# evaluated or averaged, batching, threads, scores computed afresh at the end): left out of
# the settings each recorded evaluation carries.
_NOT_SCORING = frozenset(
    {"eval_batch_size", "last_epochs", "curve_every_epochs", "edit_nodes", "edit_graphs",
     "node_every_epochs", "node_clustering", "svm_jobs"}
)  # fmt: skip


def scoring_settings(config) -> dict:
    """The ``config.eval`` keys a recorded evaluation depends on, with JSON values; ``config``
    a ConfigDict or a saved ``config.json``'s dict."""
    if isinstance(config, ml_collections.ConfigDict):
        config = json.loads(config.to_json_best_effort())
    return {k: v for k, v in (config.get("eval") or {}).items() if k not in _NOT_SCORING}


def _saved_json(workdir: str, name: str) -> dict | None:
    """``workdir/name`` as written by the run before this one (None if absent or not JSON)."""
    path = epath.Path(workdir) / name
    try:
        return json.loads(path.read_text()) if path.exists() else None
    except json.JSONDecodeError:
        return None


def saved_config(workdir: str) -> dict | None:
    """``workdir/config.json`` as saved by the run before this one (None if absent)."""
    return _saved_json(workdir, "config.json")


class EvalHistory:
    """The per-epoch evaluations of a run, in ``workdir/eval_history.json`` (process 0 writes).

    On resume, the entries of epochs up to the restored one are kept (and the file rewritten
    without the later ones), so the final results (e.g. the mean over the last epochs'
    evaluations) are those of an uninterrupted run; the trainer makes up the restored
    epoch's own evaluation if a kill left it unrecorded. Each entry carries the evaluation
    settings it was made with (``scoring_settings``; entries from before that are taken as
    made with ``legacy``, the settings of the workdir's saved config); ``entries`` are those
    whose settings agree with this run's in every key both have, so a run scored with other
    settings does not report the old settings' scores.
    """

    def __init__(self, workdir, upto_epoch, settings=None, legacy=None):
        self.path = epath.Path(workdir) / "eval_history.json"
        self.settings, self.legacy = settings, legacy
        self.all: list[dict] = []
        if self.path.exists():
            saved = json.loads(self.path.read_text())
            self.all = [h for h in saved if h["epoch"] <= upto_epoch]
            if len(self.all) < len(saved):  # a killed run's later epochs: not this run's
                self._write()

    def _matches(self, entry: dict) -> bool:
        made = entry.get("eval", self.legacy)
        if made is None or self.settings is None:
            return True
        return all(made[k] == self.settings[k] for k in set(made) & set(self.settings))

    @property
    def entries(self) -> list[dict]:
        """The entries made with this run's evaluation settings."""
        return [h for h in self.all if self._matches(h)]

    def recorded(self, epoch: int) -> bool:
        """Whether ``epoch`` was evaluated, under any settings."""
        return any(h["epoch"] == epoch for h in self.all)

    def _write(self) -> None:
        # Atomically (a new file renamed over the old): other processes may be reading it.
        if jax.process_index() == 0:
            partial = self.path.parent / (self.path.name + ".partial")
            partial.write_text(json.dumps(self.all, indent=2))
            partial.replace(self.path)

    def append(self, epoch: int, scores: dict) -> None:
        tag = {} if self.settings is None else {"eval": self.settings}
        self.all.append({"epoch": epoch, **scores, **tag})
        self._write()


def write_json(path, value) -> None:
    """Writes ``value`` as JSON to ``path`` (process 0 only)."""
    if jax.process_index() == 0:
        epath.Path(path).write_text(json.dumps(value, indent=2))


def write_results(workdir: str, results: dict) -> None:
    write_json(epath.Path(workdir) / "results.json", results)


def saved_results(workdir: str) -> dict | None:
    """``workdir/results.json`` as written by the run before this one (None if absent)."""
    return _saved_json(workdir, "results.json")
