"""DACL §5.3's graph protocol: full-batch Adam linear classifiers, 10-fold cross-validation."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.typing import ArrayLike

from jaxcl import optim
from jaxcl.evaluation import _inputs
from jaxcl.evaluation import _linear_model as lm


def _fit_full_batch(x, y, weight, key, learning_rate, *, num_classes, steps):
    """``steps`` full-batch Adam updates on the rows with weight 1, from a Glorot init."""
    params = lm.glorot_init(key, x.shape[1], num_classes)
    tx = optim.make_optimizer("adam", learning_rate)

    def step(carry, _):
        params, opt_state = carry
        grads = jax.grad(lm.weighted_cross_entropy)(params, x, y, weight)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), None

    (params, _), _ = jax.lax.scan(step, (params, tx.init(params)), None, length=steps)
    return params


@functools.partial(jax.jit, static_argnames=("num_classes", "steps"))
def _fold_hits(x, y, train_masks, test_masks, keys, learning_rate, *, num_classes, steps):
    """Trains one classifier per fold (vmapped: one program); correct test rows per fold."""
    fit = functools.partial(_fit_full_batch, num_classes=num_classes, steps=steps)
    params = jax.vmap(fit, in_axes=(None, None, 0, 0, None))(
        x, y, train_masks.astype(jnp.float32), keys, learning_rate
    )
    hits = jax.vmap(lm.correct, in_axes=(0, None, None))(params, x, y) > 0
    return jnp.sum(hits & test_masks, axis=1)


def fold_masks(y: np.ndarray, *, num_folds: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(train_masks, test_masks)``, bool ``[num_folds, n]``, from ``stratified_kfold``."""
    # Imported on first use: `jaxcl.data` loads scikit-learn's model selection (~0.7 s).
    from jaxcl.data import stratified_kfold

    folds = stratified_kfold(y, num_folds=num_folds, seed=seed)
    test_masks = np.zeros((num_folds, y.shape[0]), dtype=bool)
    for f, (_, test) in enumerate(folds):
        test_masks[f, test] = True
    return ~test_masks, test_masks


def kfold_linear_accuracy(
    x: ArrayLike,
    y: ArrayLike,
    *,
    num_classes: int,
    num_folds: int = 10,
    steps: int = 100,
    learning_rate: float = 1e-2,
    seed: int = 0,
) -> dict:
    """Stratified k-fold accuracy of full-batch Adam linear classifiers (DACL's graph protocol).

    For each of ``num_folds`` shuffled stratified folds (``jaxcl.data.stratified_kfold``) a
    linear softmax classifier (Glorot-uniform kernel, zero bias) takes ``steps`` full-batch
    Adam updates at a constant ``learning_rate`` on the other folds and is scored on the
    held-out fold, with no feature scaling and no model selection, as in DACL's released
    evaluation code (``logistic_classify``: 100 updates, Adam, learning rate 0.01). DACL picks
    the learning rate from {1e-2, 1e-3, 1e-4}; call once per value, and note that choosing
    among them by this score selects on the test folds (jaxcl's configs fix the rate).

    All folds are trained by one compiled program: the fold's training rows enter as a
    ``[num_folds, n]`` weight mask and the training function is ``vmap``-ed over folds, so
    ten folds cost about one fold's wall time on an accelerator.

    Args:
      x: ``[n, dim]`` frozen features (e.g. graph embeddings; trained in float32).
      y: ``[n]`` integer labels in ``[0, num_classes)``.
      num_classes: number of classes.
      num_folds: number of folds, between 2 and the size of the smallest class.
      steps: full-batch Adam updates per fold, > 0.
      learning_rate: Adam's learning rate, > 0.
      seed: seeds the fold shuffle and the initialisations; fold ``f`` starts from
        ``glorot_uniform(jax.random.fold_in(jax.random.key(seed), f))``.

    Returns:
      ``{'mean', 'std', 'per_fold'}``: mean and (population) standard deviation of the
      held-out accuracies in [0, 1], and the list of the ``num_folds`` accuracies.

    Example:
      >>> import numpy as np
      >>> from jaxcl.evaluation import kfold_linear_accuracy
      >>> x = np.random.default_rng(0).normal(size=(100, 4)).astype(np.float32)
      >>> y = (x[:, 0] > 0).astype(np.int32)
      >>> kfold_linear_accuracy(x, y, num_classes=2, steps=200)["mean"] > 0.9
      True

    References:
      DACL (Verma et al., ICML 2021), §5.3, and its code (github.com/vikasverma1077/graph_cnt,
      ``unsupervised/evaluate_embedding.py``); Sun et al., "InfoGraph", ICLR 2020.
    """
    fn = "kfold_linear_accuracy"
    x = _inputs.features(fn, "x", x)
    num_classes = _inputs.count(fn, "num_classes", num_classes)
    y = _inputs.labels(fn, "y", y, num_rows=x.shape[0], rows_name="x", num_classes=num_classes)
    num_folds = _inputs.num_folds(fn, num_folds, y)
    steps = _inputs.count(fn, "steps", steps)
    learning_rate = _inputs.real(fn, "learning_rate", learning_rate, allow_zero=False)
    seed = _inputs.seed(fn, seed)

    train_masks, test_masks = fold_masks(y, num_folds=num_folds, seed=seed)
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(
        jax.random.key(seed), jnp.arange(num_folds)
    )
    hits = _fold_hits(
        x,
        jnp.asarray(y),
        jnp.asarray(train_masks),
        jnp.asarray(test_masks),
        keys,
        jnp.float32(learning_rate),
        num_classes=num_classes,
        steps=steps,
    )
    per_fold = np.asarray(hits, dtype=np.float64) / test_masks.sum(axis=1)
    return {
        "mean": float(per_fold.mean()),
        "std": float(per_fold.std()),
        "per_fold": per_fold.tolist(),
    }
