"""What a method supplies to the trainer: its model, how views are made, which loss, and the
seams for methods that need more than one plain gradient step.

A method is a class with a ``name`` registered by :func:`register`. The trainer
(:mod:`jaxcl.training`) builds the model from :meth:`Method.build`, takes the optimiser from
:meth:`Method.optimizer`, keeps :meth:`Method.init_extra`'s pytree in the train state
(checkpointed, placed on the mesh by :meth:`Method.extra_specs`), and runs either its default
step (:meth:`Method.loss`, one guarded optimiser update, then :meth:`Method.after_update`
inside the same jitted step) or the method's own step (:meth:`Method.make_train_step`).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import ml_collections
import optax
from flax import nnx
from jax.sharding import PartitionSpec

from jaxcl import models, optim
from jaxcl.methods import _encoders


@dataclasses.dataclass(frozen=True)
class Batch:
    """One global batch of a tabular task: features ``x`` and labels ``y`` (for supervised use)."""

    x: jax.Array
    y: jax.Array


jax.tree_util.register_dataclass(Batch, data_fields=["x", "y"], meta_fields=[])


@dataclasses.dataclass(frozen=True)
class DataSpec:
    """What a model is built for: the kind of data and its sizes.

    Attributes:
      kind: the task kind (``'tabular'``, ``'graph'``, ``'node'``, ...).
      num_features: width of a feature row (tabular), a node's features (graphs).
      num_classes: number of labels (supervised heads, evaluation).
      image_shape: ``(H, W, C)`` of the images the model sees (image tasks; else ``()``).
    """

    kind: str
    num_features: int
    num_classes: int
    image_shape: tuple = ()


REGISTRY: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: makes ``cls`` the method ``config.method.name == cls.name`` runs.

    The one place a method is registered. Registering another class under a name that is
    taken is an error; the same class defined again by the same file (a module loaded twice,
    as a config file that defines a method is) replaces the first.
    """
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"register: {cls.__qualname__} needs a non-empty string `name`")
    old = REGISTRY.get(name)
    if old is not None and _origin(old) != _origin(cls):
        raise ValueError(
            f"register: method name {name!r} is taken by {old.__module__}.{old.__qualname__}"
        )
    REGISTRY[name] = cls
    return cls


def _origin(cls) -> tuple[str, str]:
    """The file that defines ``cls`` (from its functions' code, which a module loaded from a
    path without a ``sys.modules`` entry still carries) and its qualified name."""
    source = next(
        (v.__code__.co_filename for v in vars(cls).values() if inspect.isfunction(v)), None
    )
    if source is None:
        try:
            source = inspect.getfile(cls)
        except (TypeError, OSError):
            source = cls.__module__
    return os.path.realpath(source), cls.__qualname__


def get(name: str) -> type[Method]:
    """The method class called ``name``; ValueError listing the known names otherwise."""
    if name not in REGISTRY:
        raise ValueError(f"unknown method {name!r}; known methods: {sorted(REGISTRY)}")
    return REGISTRY[name]


def build_encoder(model_config: ml_collections.ConfigDict, spec: DataSpec, rngs: nnx.Rngs):
    """The encoder ``config.model.encoder`` names, and the width of its output.

    See :data:`jaxcl.methods.ENCODERS` for the names; an unknown name is a ``ValueError``.
    """
    return _encoders.build(model_config, spec, rngs)


def check_range(
    method: str, hp, key: str, low: float, high: float = math.inf, *, low_open: bool = False
) -> None:
    """ValueError unless ``config.method.<key>`` (in ``hp``) is a finite number in ``[low,
    high]`` (``(low, high]`` with ``low_open``): NaN and infinities are refused."""
    value = hp[key]
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not (low < value if low_open else low <= value) or not value <= high:
        interval = f"{'(' if low_open else '['}{low}, {high}]".replace("inf]", "inf)")
        raise ValueError(
            f"config.method.{key} = {value!r}: expected a number in {interval} ({method})"
        )


def check_choice(method: str, key: str, value, allowed) -> None:
    """ValueError unless ``config.method.<key>`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(
            f"config.method.{key} = {value!r}: expected one of {list(allowed)} ({method})"
        )


# The keys under config.model that a method with a projection head reads.
HEAD_DEFAULTS = {"head_depth": 3, "head_width": 1024, "embed_dim": 128}


class Method:
    """A pretraining method.

    Subclasses set ``name`` (and register with :func:`register`), ``defaults`` (their
    hyperparameters under ``config.method``), ``model_defaults`` (the keys under
    ``config.model`` their own modules read, e.g. head sizes; the encoder's keys come from the
    encoder) and ``data_kinds`` (the task kinds they train on), and implement :meth:`loss`.

    The seams, each optional:

    * :meth:`build`: the model (default: encoder + SimCLR projection head);
    * :meth:`features`: what evaluation sees (default: the encoder's output);
    * :meth:`optimizer`: the optimiser, e.g. per parameter group with
      :func:`jaxcl.optim.partition` (default: ``config.optim`` over every parameter);
    * :meth:`init_extra` / :meth:`extra_specs`: a pytree the train state carries besides the
      model (EMA targets, queues, memory banks), checkpointed with it, and how it is laid out
      on the mesh;
    * :meth:`after_update`: runs inside the jitted step after the optimiser update (EMA with
      a step-dependent momentum, enqueueing), only when the update was applied;
    * :meth:`make_train_step`: a whole step of the method's own (e.g. a second-order update),
      built from the trainer's :class:`jaxcl.training.StepContext` so that it reuses the
      guarded update.
    """

    name: ClassVar[str]
    defaults: ClassVar[dict[str, Any]] = {}
    model_defaults: ClassVar[dict[str, Any]] = HEAD_DEFAULTS
    data_kinds: ClassVar[tuple[str, ...]] = ("tabular",)
    # False: no training at all (the No-Pretraining row); the encoder stays at its init.
    pretrains: ClassVar[bool] = True
    # True: evaluated by its own classifier's test accuracy, not by a linear probe.
    supervised: ClassVar[bool] = False
    # Image data of varying size (ImageNet): random resized crops the host takes per image
    # (0: one centre crop, for the methods that use no image augmentation).
    image_views: ClassVar[int] = 0
    # The run's number of optimiser steps, set by the trainer when it builds the run (None
    # before): schedules of the method's own that span the run (BYOL's EMA momentum).
    total_steps: int | None = None

    def __init__(self, config: ml_collections.ConfigDict):
        self.config = config
        self.hp = config.method

    # -- model ---------------------------------------------------------------------------

    def build(self, spec: DataSpec, rngs: nnx.Rngs) -> nnx.Module:
        """Encoder (``config.model.encoder``) + projection head, sized by ``config.model``."""
        m = self.config.model
        encoder, width = build_encoder(m, spec, rngs)
        head = models.projection_head(
            width,
            depth=m.head_depth,
            width=m.head_width,
            out_dim=m.embed_dim,
            output_norm=m.get("head_output_norm", True),
            rngs=rngs,
        )
        return models.ContrastiveModel(encoder, head)

    def loss(self, model: nnx.Module, batch: Any, key: jax.Array, extra: Any):
        """The training loss of one global batch; ``model`` is in training mode.

        Args:
          model: the model with the parameters being differentiated.
          batch: the task's global batch (on the devices).
          key: this step's PRNG key.
          extra: the train state's extra pytree (:meth:`init_extra`), read-only here.

        Returns:
          ``(loss, metrics)``, or ``(loss, metrics, outputs)`` where ``outputs`` is any
          pytree handed to :meth:`after_update` (e.g. the keys to enqueue). ``metrics`` are
          scalars, logged.
        """
        raise NotImplementedError

    def features(self, model: nnx.Module, batch: Any) -> jax.Array:
        """Representations for evaluation: the encoder output, projection head discarded."""
        return model.encoder(batch)

    def node_inputs(self, dataset, graph):
        """What node classification passes as the batch to :meth:`loss` and :meth:`features`.

        Called once on the host with the ``jaxcl.data.NodeDataset`` and its
        ``jraph.GraphsTuple``; the result (any pytree of arrays) is placed on the devices once
        and reused every step. Default: the graph. MVGRL adds its diffusion matrix.
        """
        del dataset
        return graph

    def graph_dataset(self, dataset):
        """What graph classification batches: ``(graphs, edge_weights)``.

        Called once on the host with the task's ``jaxcl.data.GraphDataset``; returns the data
        set to batch (the same graphs, labels and node features, in the same order; edges
        may differ) and optional per-graph edge weights, ``[num_edges]`` or
        ``[num_edges, k]``, which batches carry in ``edges``. Default: :meth:`graph_views`
        (the data set as read, no weights). Graph-level MVGRL adds each graph's PPR
        diffusion, and records the largest graph's size.
        """
        return self.graph_views(dataset)

    def graph_views(self, dataset):
        """:meth:`graph_dataset`'s transformation alone, for graphs that are only embedded
        (the graph-edit triplets of ``eval.edit_nodes``): it must not change the method's
        state. Default: the data set as read, no weights."""
        return dataset, None

    # -- optimiser and state -------------------------------------------------------------

    def optimizer(self, schedule: optax.Schedule) -> optax.GradientTransformation:
        """The optimiser of the model's parameters: ``config.optim`` (LARS, Adam, ...)."""
        o = self.config.optim
        kw = {k: o[k] for k in optim.OPTIMIZER_HYPERPARAMETERS[o.name]}
        return optim.make_optimizer(o.name, schedule, weight_decay=o.weight_decay, **kw)

    def init_extra(self, model: nnx.Module, key: jax.Array) -> Any:
        """The extra pytree of the train state, from the freshly built model (default: none).

        Traced once under ``jax.make_jaxpr`` (the jitted init replays that trace); ``key`` is
        the method's own.
        """
        del model, key
        return {}

    def extra_specs(self, extra: Any) -> Any:
        """A ``PartitionSpec`` per leaf of ``extra`` (or a prefix tree) over the mesh axis
        ``'data'``. Default: every leaf replicated. A large queue may be split by rows,
        ``PartitionSpec('data')``."""
        return jax.tree.map(lambda _: PartitionSpec(), extra)

    def after_update(self, *, params, model_state, extra, outputs, step: jax.Array) -> Any:
        """The new ``extra`` after an applied update (inside the jitted step).

        Args:
          params: the parameters after the update.
          model_state: the model's non-parameter state after the step.
          extra: the extra pytree before this step.
          outputs: what :meth:`loss` returned as its third element (else None).
          step: the number of the step just taken (0 for the first).
        """
        del params, model_state, outputs, step
        return extra

    def make_train_step(self, ctx) -> Callable | None:
        """A replacement for the default step, or None to use it.

        Args:
          ctx: a :class:`jaxcl.training.StepContext` (graph definition, optimiser, schedule,
            config, and the guarded update every step should end with).

        Returns:
          ``train_step(state, batch, key) -> (state, metrics)``, jitted by the trainer.
        """
        del ctx
        return None
