"""Early stopping on the training loss, as MVGRL's code trains (patience 20; m-Mix's paper
names 30, and its node script keeps the lowest-loss parameters without stopping).

After each epoch the epoch's mean training loss is compared with the lowest so far: a lower
one (strictly) becomes the best, and a copy of the parameters and model state is kept; else
one more epoch without improvement is counted. After ``train.early_stopping_patience`` such
epochs in a row training stops, and the run is evaluated with the best epoch's parameters,
as MVGRL's ``train.py`` reloads its ``model.pkl``. The bookkeeping lives in
``TrainState.best`` (checkpointed with the rest): the step adds each step's loss to the
epoch's sum (:func:`add_step_loss`), :func:`end_epoch` (jitted by the trainer, the state
donated) closes the epoch on the device. The trainer reads back one counter per epoch to
decide whether to stop.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from absl import logging


def init(params, model_state) -> dict:
    """The bookkeeping before the first step: the initial parameters as the best (epoch 0,
    loss +inf, so that the first finite epoch loss replaces them)."""
    copy = lambda tree: jax.tree.map(jnp.copy, tree)  # noqa: E731
    return {
        "params": copy(params),
        "model_state": copy(model_state),
        "loss": jnp.full((), jnp.inf, jnp.float32),
        "epoch": jnp.zeros((), jnp.int32),
        "bad_epochs": jnp.zeros((), jnp.int32),
        "loss_sum": jnp.zeros((), jnp.float32),
        "steps": jnp.zeros((), jnp.int32),
    }


def add_step_loss(best: dict | None, loss: jax.Array) -> dict | None:
    """``best`` with one more step's ``loss`` in the running epoch's sum (None stays None)."""
    if best is None:
        return None
    return {
        **best,
        "loss_sum": best["loss_sum"] + jnp.asarray(loss, jnp.float32),
        "steps": best["steps"] + 1,
    }


def end_epoch(state, epoch: jax.Array):
    """``state`` after epoch ``epoch`` (counting from 1): the epoch's mean loss against the
    best; the best's parameters and counters updated, the running sum reset."""
    b = state.best
    loss = b["loss_sum"] / jnp.maximum(b["steps"], 1).astype(jnp.float32)
    better = loss < b["loss"]  # NaN never improves
    params, model_state = jax.lax.cond(
        better,
        lambda: (state.params, state.model_state),
        lambda: (b["params"], b["model_state"]),
    )
    best = {
        "params": params,
        "model_state": model_state,
        "loss": jnp.where(better, loss, b["loss"]),
        "epoch": jnp.where(better, jnp.asarray(epoch, jnp.int32), b["epoch"]),
        "bad_epochs": jnp.where(better, 0, b["bad_epochs"] + 1),
        "loss_sum": jnp.zeros_like(b["loss_sum"]),
        "steps": jnp.zeros_like(b["steps"]),
    }
    return dataclasses.replace(state, best=best)


def stopped(state, patience: int) -> bool:
    """Whether ``patience`` epochs in a row have passed without a lower loss (reads one
    counter from the device)."""
    return int(jax.device_get(state.best["bad_epochs"])) >= patience


def stop_now(state, patience: int, epoch: int) -> bool:
    """Whether early stopping (``patience`` > 0) ends training after ``epoch`` (logged)."""
    if not patience or not stopped(state, patience):
        return False
    s = summary(state)
    logging.info(
        "early stopping after epoch %d: no lower training loss for %d epochs; the best, "
        "epoch %d (loss %.6g), is evaluated",
        *(epoch, patience, s["best_epoch"], s["best_loss"]),
    )
    return True


def results(state, steps_per_epoch: int, total_steps: int) -> dict:
    """What a run's results add: the best epoch and loss, the epochs trained, whether it
    stopped before ``total_steps``."""
    s, steps = summary(state), int(jax.device_get(state.step))
    return {
        "early_stopping_best_epoch": s["best_epoch"],
        "early_stopping_best_loss": s["best_loss"],
        "epochs_trained": steps // max(1, steps_per_epoch),
        "early_stopped": steps < total_steps,
    }


def summary(state) -> dict:
    """The best epoch and its loss, from the device."""
    b = jax.device_get({"epoch": state.best["epoch"], "loss": state.best["loss"]})
    return {"best_epoch": int(b["epoch"]), "best_loss": float(b["loss"])}


def best_state(state):
    """``state`` with the best epoch's parameters and model state (for evaluation)."""
    return dataclasses.replace(
        state, params=state.best["params"], model_state=state.best["model_state"]
    )
