"""The training state: everything a step reads and writes, as one pytree."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx


@dataclasses.dataclass
class TrainState:
    """Arrays of one training run; the model's structure (graphdef) lives outside.

    Attributes:
      step: number of steps taken so far.
      params: the model's ``nnx.Param`` variables.
      model_state: every other model variable (batch-norm running statistics).
      opt_state: the optimiser's state.
      extra: the method's own pytree (:meth:`jaxcl.methods.Method.init_extra`): EMA target
        parameters, queues, memory banks; ``{}`` for most methods.
      nonfinite_step: the first step whose loss or gradient was not finite, or -1. Such a
        step changes nothing but ``step``, so the state still holds the model that produced
        it.
      last_loss: the loss of the last step taken (NaN before the first). Checkpointed with
        the rest, so that a rerun of a finished run reports the same final loss.
      best: with early stopping (``train.early_stopping_patience``), the bookkeeping of
        :mod:`jaxcl.training._early_stopping` (the lowest epoch loss, its epoch and
        parameters, the epochs since, the running epoch's loss sum); None without it.
        Checkpointed with the rest, so that a resumed run stops where an uninterrupted one
        would, and a rerun of a stopped run evaluates the same parameters.
    """

    step: jax.Array
    params: nnx.State
    model_state: nnx.State
    opt_state: optax.OptState
    extra: Any
    nonfinite_step: jax.Array
    last_loss: jax.Array
    best: Any = None

    @classmethod
    def create(
        cls,
        params: nnx.State,
        model_state: nnx.State,
        tx: optax.GradientTransformation,
        extra: Any = None,
    ) -> TrainState:
        """The state before the first step: step 0, ``tx``'s initial state, no failure."""
        return cls(
            step=jnp.zeros((), jnp.int32),
            params=params,
            model_state=model_state,
            opt_state=tx.init(params),
            extra={} if extra is None else extra,
            nonfinite_step=jnp.full((), -1, jnp.int32),
            last_loss=jnp.full((), jnp.nan, jnp.float32),
        )


jax.tree_util.register_dataclass(
    TrainState,
    data_fields=[
        "step",
        "params",
        "model_state",
        "opt_state",
        "extra",
        "nonfinite_step",
        "last_loss",
        "best",
    ],
    meta_fields=[],
)


def checkpoint_tree(state: TrainState) -> dict:
    """The fields of ``state`` as the dict a checkpoint holds: ``best`` only where early
    stopping keeps one, so that a run without it writes (and reads) the checkpoints of the
    versions before ``best`` existed."""
    tree = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    if tree["best"] is None:
        del tree["best"]
    return tree


def from_checkpoint_tree(tree: dict) -> TrainState:
    """The inverse of :func:`checkpoint_tree`."""
    return TrainState(**{"best": None, **tree})
