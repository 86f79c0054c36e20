"""The training state: everything a step reads and writes, as one pytree."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax
from flax import nnx


@dataclasses.dataclass
class TrainState:
    """Arrays of one training run; the model's structure (graphdef) lives outside.

    Attributes:
      step: number of optimiser updates done so far.
      params: the model's ``nnx.Param`` variables.
      model_state: every other model variable (batch-norm running statistics).
      opt_state: the optimiser's state.
      nonfinite_step: the first step whose loss or gradient was not finite, or -1. Such a
        step leaves ``params``/``opt_state`` untouched, so the state still holds the model
        that produced it.
    """

    step: jax.Array
    params: nnx.State
    model_state: nnx.State
    opt_state: optax.OptState
    nonfinite_step: jax.Array

    @classmethod
    def create(
        cls, params: nnx.State, model_state: nnx.State, tx: optax.GradientTransformation
    ) -> TrainState:
        """The state before the first step: step 0, ``tx``'s initial state, no failure."""
        return cls(
            step=jnp.zeros((), jnp.int32),
            params=params,
            model_state=model_state,
            opt_state=tx.init(params),
            nonfinite_step=jnp.full((), -1, jnp.int32),
        )


jax.tree_util.register_dataclass(
    TrainState,
    data_fields=["step", "params", "model_state", "opt_state", "nonfinite_step"],
    meta_fields=[],
)
