"""Train steps: what every step shares (the guarded update) and the default step.

A step is a pure function ``train_step(state, batch, key) -> (state, metrics)`` that the
trainer jits with the state donated. :class:`StepContext` holds what a step needs besides its
arguments (the model's graph definition, the optimiser, the schedule, the method and the
config) and the pieces every step is made of: the loss and its gradients
(:meth:`StepContext.loss_and_grads`) and the guarded update (:meth:`StepContext.apply_gradients`),
which applies nothing once a loss or gradient is not finite and records the step. A method
with a step of its own (:meth:`jaxcl.methods.Method.make_train_step`) builds it from these.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import optax
from flax import nnx

from jaxcl.training import _early_stopping
from jaxcl.training._state import TrainState


def all_finite(tree) -> jax.Array:
    """True when every element of every leaf of ``tree`` is finite (True for an empty tree)."""
    leaves = jax.tree.leaves(tree)
    if not leaves:
        return jnp.array(True)
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))


class LossAndGrads(NamedTuple):
    """One evaluation of a method's loss and its gradient with respect to the parameters.

    Attributes:
      loss: the scalar loss.
      grads: its gradient, shaped like ``state.params``.
      metrics: the method's scalar metrics.
      outputs: what the loss returned for :meth:`jaxcl.methods.Method.after_update`, or None.
      model_state: the model's non-parameter state after the forward pass (batch norm).
    """

    loss: jax.Array
    grads: Any
    metrics: dict
    outputs: Any
    model_state: nnx.State


def split_loss_output(method_name: str, out) -> tuple[jax.Array, dict, Any]:
    """A method's ``loss`` result as ``(loss, metrics, outputs)``."""
    if isinstance(out, tuple) and len(out) in (2, 3):
        loss, metrics = out[0], out[1]
        outputs = out[2] if len(out) == 3 else None
        if isinstance(metrics, dict):
            return loss, metrics, outputs
    raise TypeError(
        f"{method_name}.loss must return (loss, metrics) or (loss, metrics, outputs) with "
        f"metrics a dict, got {type(out).__name__}"
        + (f" of length {len(out)}" if isinstance(out, tuple) else "")
    )


@dataclasses.dataclass(frozen=True)
class StepContext:
    """What a train step needs besides its arguments; built once by the trainer.

    Attributes:
      method: the :class:`jaxcl.methods.Method`.
      graphdef: the model's graph definition in training mode (``nnx.split`` with
        ``nnx.Param`` first: ``state.params`` are the parameters, ``state.model_state`` the
        rest).
      tx: the optimiser of ``state.params`` (the method's :meth:`optimizer`).
      schedule: the learning rate as a function of the step (logged as ``lr``).
      config: the run's config.
    """

    method: Any
    graphdef: nnx.GraphDef
    tx: optax.GradientTransformation
    schedule: optax.Schedule
    config: ml_collections.ConfigDict

    def merge(self, params, model_state) -> nnx.Module:
        """The model with these parameters and state, ready to be called inside a transform."""
        # copy: fresh Variables at this trace level, so batch norm may update its statistics
        # inside value_and_grad.
        return nnx.merge(self.graphdef, params, model_state, copy=True)

    def loss_and_grads(
        self, state: TrainState, batch, key: jax.Array, *, params=None, extra=None
    ) -> LossAndGrads:
        """``method.loss`` and its gradient with respect to the parameters.

        Args:
          state: the train state (its ``model_state`` and, unless given, ``params`` and
            ``extra`` are used).
          batch: the global batch.
          key: the PRNG key of this loss evaluation.
          params: parameters to differentiate at instead of ``state.params`` (e.g. fast
            weights of an inner step).
          extra: the extra pytree to pass instead of ``state.extra``.
        """
        params = state.params if params is None else params
        extra = state.extra if extra is None else extra

        def loss_fn(p):
            model = self.merge(p, state.model_state)
            loss, metrics, outputs = split_loss_output(
                self.method.name, self.method.loss(model, batch, key, extra)
            )
            return loss, (metrics, outputs, nnx.state(model, nnx.Not(nnx.Param)))

        (loss, (metrics, outputs, model_state)), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params
        )
        return LossAndGrads(loss, grads, metrics, outputs, model_state)

    def apply_gradients(
        self,
        state: TrainState,
        grads,
        *,
        loss: jax.Array,
        model_state: nnx.State,
        outputs: Any = None,
        finite: jax.Array | None = None,
    ) -> TrainState:
        """The guarded update every step ends with: the next state.

        When ``loss`` and ``grads`` (and ``finite``, if given) are finite and no earlier step
        failed, applies ``tx`` to ``grads``, takes ``model_state`` and runs the method's
        :meth:`after_update` (EMA targets, queues) on the new parameters. Otherwise the state
        keeps its parameters, optimiser state, model state and extra, and records this step
        as the first non-finite one (the trainer then stops, naming it). Either way ``step``
        advances, ``last_loss`` is ``loss`` and, with early stopping, ``loss`` joins the
        epoch's loss sum in ``best``.

        Everything that changes lives in one ``lax.cond``: a select between the old and the
        new state would keep both alive (a copy of every moment buffer and queue each step);
        in the conditional's branch XLA updates the donated buffers in place.

        Args:
          state: the state before this step.
          grads: the gradient of the loss with respect to ``state.params``.
          loss: this step's loss.
          model_state: the model's non-parameter state after the forward pass.
          outputs: handed to :meth:`after_update` (what the loss returned for it).
          finite: an extra finiteness condition (e.g. of a second gradient a method's own
            step computed and folded into ``grads``' update); default True.
        """
        ok_values = jnp.isfinite(loss) & all_finite(grads)
        if finite is not None:
            ok_values = ok_values & finite
        ok = ok_values & (state.nonfinite_step < 0)

        def update(operands):
            params, opt_state, _, extra = operands
            updates, opt_state = self.tx.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            new_extra = self.method.after_update(
                params=params,
                model_state=model_state,
                extra=extra,
                outputs=outputs,
                step=state.step,
            )
            _check_same_structure(self.method.name, extra, new_extra)
            return params, opt_state, model_state, new_extra

        params, opt_state, new_model_state, extra = jax.lax.cond(
            ok,
            update,
            lambda operands: operands,
            (state.params, state.opt_state, state.model_state, state.extra),
        )
        return dataclasses.replace(
            state,
            step=state.step + 1,
            params=params,
            model_state=new_model_state,
            opt_state=opt_state,
            extra=extra,
            nonfinite_step=jnp.where(
                ok_values | (state.nonfinite_step >= 0), state.nonfinite_step, state.step
            ),
            last_loss=jnp.asarray(loss, jnp.float32),
            best=_early_stopping.add_step_loss(state.best, loss),
        )

    def step_metrics(self, state: TrainState, metrics: dict, grads) -> dict:
        """The method's metrics plus the gradient norm and this step's learning rate."""
        metrics = dict(metrics)
        metrics["grad_norm"] = optax.tree.norm(grads)
        metrics["lr"] = self.schedule(state.step)
        return metrics


def _check_same_structure(name: str, old, new) -> None:
    old_t, new_t = jax.tree.structure(old), jax.tree.structure(new)
    if old_t != new_t:
        raise TypeError(
            f"{name}.after_update must return `extra` with the structure it was given: "
            f"{old_t} -> {new_t}"
        )
    for a, b in zip(jax.tree.leaves(old), jax.tree.leaves(new), strict=True):
        if jnp.shape(a) != jnp.shape(b) or jnp.result_type(a) != jnp.result_type(b):
            raise TypeError(
                f"{name}.after_update changed a leaf of `extra` from {jnp.shape(a)} "
                f"{jnp.result_type(a)} to {jnp.shape(b)} {jnp.result_type(b)}"
            )


def make_default_train_step(ctx: StepContext):
    """The step every method uses unless it supplies its own: one gradient step on
    ``method.loss``, then the guarded update (and the method's ``after_update``)."""

    def train_step(state: TrainState, batch, key: jax.Array):
        step_key = jax.random.fold_in(key, state.step)
        r = ctx.loss_and_grads(state, batch, step_key)
        new_state = ctx.apply_gradients(
            state, r.grads, loss=r.loss, model_state=r.model_state, outputs=r.outputs
        )
        return new_state, ctx.step_metrics(state, r.metrics, r.grads)

    return train_step
