"""Tasks: a data set, how its batches reach the devices, and how a trained encoder is judged.

The loop in ``_loop.py`` is the same for every task. A task kind (``'tabular'``, ``'graph'``,
``'node'``, ...) is registered once with :func:`register_task`, naming the data sets it
reads, its config keys and its default encoder; ``config.data.name`` picks the kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Protocol

from jaxcl.training._errors import ConfigError


class Task(Protocol):
    """What the trainer asks of a task.

    Attributes:
      kind: the task kind it was registered as.
      name: the data set's name, for logs and results.
      spec: a :class:`jaxcl.methods.DataSpec` (what the model is built for).
      steps_per_epoch: optimiser steps per epoch (0 when the method does not pretrain).
      examples_per_step: examples in one global batch (for throughput).
    """

    kind: ClassVar[str]
    name: str
    spec: Any
    steps_per_epoch: int
    examples_per_step: int

    def describe(self) -> str:
        """One line on the data: sizes, classes, what a batch is."""

    def batches(self, epoch: int) -> Iterator[Any]:
        """The host-side batches of ``epoch``, a function of the seed and the epoch (so a
        restarted run sees the same): each global batch, or this host's part of it when the
        task builds per-device parts (graph sub-batches). A task may take ``start=`` (the
        first batch, for a run resumed mid-epoch) to avoid reading the batches before it."""

    def batch_sharding(self) -> Any:
        """The sharding (or a pytree prefix of shardings) of a placed batch, for ``jax.jit``."""

    def place(self, batch) -> Any:
        """A host batch from :meth:`batches` as global ``jax.Array``s on the mesh, each
        process passing only its own devices' part."""

    def evaluate_at(self, epoch: int) -> bool:
        """Whether :meth:`evaluate` runs after ``epoch`` (counting from 1)."""

    def evaluate(self, features_fn: Callable, epoch: int) -> dict:
        """Scores of the frozen encoder; ``features_fn(placed_batch)`` gives its features."""

    def final(self, features_fn: Callable, logits_fn: Callable, history: list[dict]) -> dict:
        """The run's results (``test_top1`` and others), given the per-epoch evaluations.

        The task kinds in ``_config.EARLY_STOPPING_TASKS`` also take ``epoch=``: the epoch
        whose parameters ``features_fn`` embeds (early stopping's best) when not the last."""


@dataclasses.dataclass(frozen=True)
class TaskKind:
    """A registered task kind.

    Attributes:
      factory: ``factory(config, method, mesh) -> Task``.
      datasets: the values of ``config.data.name`` it reads.
      defaults: ``defaults(data_name, method_cls, config)`` -> its config keys with their
        defaults, by section (``{'data': {...}, 'train': {...}, 'eval': {...}}``), for that
        data set and method; ``config`` is the run's config when one exists (keys that
        depend on another key's value, e.g. the graph protocol's), else None.
      default_encoder: ``config.model.encoder`` unless a config names another.
    """

    factory: Callable[..., Task]
    datasets: tuple[str, ...]
    defaults: Callable[..., dict[str, dict[str, Any]]]
    default_encoder: str


TASKS: dict[str, TaskKind] = {}


def register_task(
    kind: str,
    factory: Callable[..., Task],
    *,
    datasets: tuple[str, ...],
    defaults: Callable[..., dict[str, dict[str, Any]]],
    default_encoder: str,
) -> None:
    """Registers a task kind: ``config.data.name`` in ``datasets`` makes ``factory``'s task."""
    for name in datasets:
        for other, entry in TASKS.items():
            if other != kind and name in entry.datasets:
                raise ValueError(f"register_task: data set {name!r} is already read by {other!r}")
    TASKS[kind] = TaskKind(factory, tuple(datasets), defaults, default_encoder)


def all_datasets() -> tuple[str, ...]:
    return tuple(name for entry in TASKS.values() for name in entry.datasets)


def kind_of(data_name: str) -> str:
    """The task kind that reads ``data_name``; ConfigError listing the known data sets."""
    for kind, entry in TASKS.items():
        if data_name in entry.datasets:
            return kind
    raise ConfigError(
        f"config.data.name = {data_name!r}: unknown data set; known: {sorted(all_datasets())}"
    )


def make_task(config, method, mesh) -> Task:
    """The task ``config.data.name`` names, for ``method`` on ``mesh``. Data that is not
    where the config looks is a :class:`ConfigError` (the command line's usage error), its
    message the loader's: the folder looked in and how to prepare the data."""
    try:
        return TASKS[kind_of(config.data.name)].factory(config, method, mesh)
    except FileNotFoundError as err:
        raise ConfigError(f"config.data.name = {config.data.name!r}: {err}") from err


def check_folds(folds, labels, data_name: str) -> None:
    """ConfigError unless ``eval.folds`` stratified folds fit ``labels`` (the k-fold
    evaluations' own check, ``num_folds``), when the task is built rather than at the first
    evaluation, late in the run."""
    from jaxcl.evaluation._inputs import num_folds

    try:
        num_folds(data_name, folds, labels)
    except ValueError as err:
        raise ConfigError(f"config.eval.folds = {folds}: {err}") from None
