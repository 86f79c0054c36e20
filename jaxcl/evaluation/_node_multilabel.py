"""Multi-label node classification (PPI): one logistic regression per class, micro-F1."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.typing import ArrayLike

from jaxcl import _checks, optim
from jaxcl.evaluation import _inputs, _node
from jaxcl.evaluation import _linear_model as lm


def micro_f1_counts(logits: jax.Array, y: jax.Array) -> jax.Array:
    """int32 ``[3]``: true positives, false positives and false negatives over every (row,
    class) pair, a class predicted where its logit is > 0 (probability > 1/2)."""
    pred = logits > 0
    truth = y > 0
    return jnp.stack(
        [
            jnp.sum(pred & truth, dtype=jnp.int32),
            jnp.sum(pred & ~truth, dtype=jnp.int32),
            jnp.sum(~pred & truth, dtype=jnp.int32),
        ]
    )


def micro_f1(counts) -> jax.Array:
    """``2 tp / (2 tp + fp + fn)`` from :func:`micro_f1_counts` (0 where nothing is
    predicted and nothing is true)."""
    tp, fp, fn = counts[..., 0], counts[..., 1], counts[..., 2]
    denominator = 2 * tp + fp + fn
    return jnp.where(denominator > 0, 2 * tp / jnp.maximum(denominator, 1), 0.0)


@functools.partial(jax.jit, static_argnames=("steps", "eval_every"))
def _train_and_select(train, val, test, key, learning_rate, weight_decay, *, steps, eval_every):
    """Full-batch Adam on the mean binary cross entropy; val and test counts at the best
    validation micro-F1, and the step it was reached."""
    (x_tr, y_tr), (x_va, y_va), (x_te, y_te) = train, val, test
    params = lm.glorot_init(key, x_tr.shape[1], y_tr.shape[1])
    tx = optim.make_optimizer("adam_l2", learning_rate, weight_decay=weight_decay)

    def loss(params):
        return jnp.mean(optax.sigmoid_binary_cross_entropy(lm.logits(params, x_tr), y_tr))

    def evaluate(params, done, best):
        score, val_counts, test_counts, best_step = best
        new_val = micro_f1_counts(lm.logits(params, x_va), y_va)
        new_score = micro_f1(new_val)
        # strictly better only: among equal validation scores the earliest wins (the first
        # evaluation always counts: the running best starts at -1)
        better = new_score > score
        return (
            jnp.where(better, new_score, score),
            jnp.where(better, new_val, val_counts),
            jax.lax.cond(
                better, lambda: micro_f1_counts(lm.logits(params, x_te), y_te), lambda: test_counts
            ),
            jnp.where(better, done, best_step),
        )

    def step(carry, t):
        params, opt_state, best = carry
        updates, opt_state = tx.update(jax.grad(loss)(params), opt_state, params)
        params = optax.apply_updates(params, updates)
        done = t + 1
        is_eval = (done % eval_every == 0) | (done == steps)
        best = jax.lax.cond(is_eval, evaluate, lambda _, _t, b: b, params, done, best)
        return (params, opt_state, best), None

    zero = jnp.zeros(3, jnp.int32)
    best = (jnp.float32(-1.0), zero, zero, jnp.int32(0))
    (_, _, best), _ = jax.lax.scan(step, (params, tx.init(params), best), jnp.arange(steps))
    _, val_counts, test_counts, best_step = best
    return val_counts, test_counts, best_step


@functools.partial(jax.jit, static_argnames=("steps", "eval_every"))
def _train_and_select_many(
    train, val, test, keys, learning_rate, weight_decay, *, steps, eval_every
):
    one = functools.partial(_train_and_select.__wrapped__, steps=steps, eval_every=eval_every)
    return jax.vmap(one, in_axes=(None, None, None, 0, None, None))(
        train, val, test, keys, learning_rate, weight_decay
    )


def _multi_hot(fn: str, y, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 2 or y.shape[0] != n:
        _checks.fail(
            fn,
            f"`y` must be [n, num_classes] 0/1 labels with n = {n} (the rows of `x`), got "
            f"shape {y.shape}",
        )
    if y.shape[1] == 0:
        _checks.fail(fn, f"`y` must have at least one class column, got shape {y.shape}")
    outside = ~np.isin(y, (0, 1))
    if outside.any():
        row, col = np.argwhere(outside)[0]
        _checks.fail(
            fn, f"`y` must hold only 0 and 1, found {y[row, col].item()!r} at [{row}, {col}]"
        )
    return y.astype(np.float32)


def node_multilabel_logistic_regression_runs(
    x: ArrayLike,
    y: ArrayLike,
    train_mask: ArrayLike,
    val_mask: ArrayLike,
    test_mask: ArrayLike,
    *,
    seeds: Sequence[int],
    steps: int = 5000,
    learning_rate: float = 0.01,
    weight_decay: float = 0.0,
    eval_every: int = 20,
    normalize: str | None = "l2",
) -> dict:
    """Test micro-F1 of multi-label logistic regressions on frozen node embeddings (PPI).

    The multi-label counterpart of :func:`node_logistic_regression_runs`: one linear logit
    per class (a one-vs-rest logistic regression for every class, trained together on the
    mean binary cross entropy), ``steps`` full-batch Adam updates on the training nodes,
    scored every ``eval_every`` updates (and after the last) by micro-F1 over all (node,
    class) pairs, a class predicted where its probability exceeds 1/2; the test micro-F1
    reported is the one at the first evaluation with the best validation micro-F1. PPI's
    protocol (GraphSAGE, DGI, GRACE: micro-F1 on the two test graphs); one classifier per
    seed, all in one compiled program.

    Args:
      x: ``[n, dim]`` frozen node embeddings.
      y: ``[n, num_classes]`` labels, 1 where the node has the class, else 0.
      train_mask, val_mask, test_mask: disjoint bool ``[n]`` masks (PPI: the nodes of the
        training, validation and test graphs).
      seeds: one non-negative integer per classifier, at least one.
      steps, learning_rate, weight_decay, eval_every, normalize: as
        :func:`node_logistic_regression`.

    Returns:
      ``{'test_micro_f1', 'val_micro_f1', 'best_step'}``, NumPy arrays with one entry per
      seed (micro-F1 in [0, 1]).

    Example:
      >>> import numpy as np
      >>> from jaxcl.evaluation import node_multilabel_logistic_regression_runs
      >>> x = np.random.default_rng(0).normal(size=(600, 4)).astype(np.float32)
      >>> y = np.stack([x[:, 0] > 0, x[:, 1] > 0], axis=1).astype(np.int32)
      >>> masks = [np.arange(600) % 3 == k for k in range(3)]
      >>> out = node_multilabel_logistic_regression_runs(x, y, *masks, seeds=[0], steps=300)
      >>> bool(out["test_micro_f1"][0] > 0.9)
      True
    """
    fn = "node_multilabel_logistic_regression_runs"
    x = _inputs.features(fn, "x", x)
    n = x.shape[0]
    y = _multi_hot(fn, y, n)
    seeds = _node.check_seeds(fn, seeds)
    x, rows, steps, learning_rate, weight_decay, eval_every = _node.prepare(
        fn, x, (train_mask, val_mask, test_mask), steps=steps, learning_rate=learning_rate,
        weight_decay=weight_decay, eval_every=eval_every, normalize=normalize,
    )  # fmt: skip
    y = jnp.asarray(y)
    split = tuple((x[r], y[r]) for r in rows.values())
    keys = jnp.stack([jax.random.key(s) for s in seeds])
    out = _train_and_select_many(
        *split, keys, jnp.float32(learning_rate), jnp.float32(weight_decay),
        steps=steps, eval_every=eval_every,
    )  # fmt: skip
    val_counts, test_counts, best_step = (np.asarray(jax.device_get(o)) for o in out)
    return {
        "test_micro_f1": np.asarray(micro_f1(test_counts), np.float64),
        "val_micro_f1": np.asarray(micro_f1(val_counts), np.float64),
        "best_step": best_step.astype(np.int64),
    }
