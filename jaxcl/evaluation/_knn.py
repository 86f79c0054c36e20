"""Cosine-similarity k-nearest-neighbour classification: the monitor of InstDisc and MoCo."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxcl import _checks
from jaxcl.evaluation import _inputs
from jaxcl.losses import l2_normalize


@functools.partial(jax.jit, static_argnames=("k", "num_classes", "chunk_size", "temperature"))
def _predict(train_x, train_y, query_x, *, k, num_classes, chunk_size, temperature):
    """Predicted class of every query row, ``chunk_size`` rows at a time."""
    bank = l2_normalize(train_x)
    m = query_x.shape[0]
    num_chunks = -(-m // chunk_size)
    queries = jnp.pad(query_x, ((0, num_chunks * chunk_size - m), (0, 0)))
    queries = queries.reshape(num_chunks, chunk_size, -1)
    classes = jnp.arange(num_classes)

    def predict_chunk(chunk):
        # HIGHEST: the neighbour ranking should not depend on TF32/bf16 matmul passes.
        sim = jnp.matmul(l2_normalize(chunk), bank.T, precision=jax.lax.Precision.HIGHEST)
        _, top_idx = jax.lax.top_k(sim, k)  # equal similarities: lower index first
        # The neighbours' similarities are gathered again rather than taken from top_k's value
        # output: on XLA:CPU (jax 0.10) feeding those values into exp made each chunk ~20x slower.
        top_sim = jnp.take_along_axis(sim, top_idx, axis=1)
        top_label = train_y[top_idx]
        if temperature is None:
            weight = jnp.ones_like(top_sim)
        else:
            # exp(s / t) up to a per-row factor (the row's best similarity is shifted out), which
            # leaves the vote unchanged and keeps exp finite for small temperatures.
            weight = jnp.exp((top_sim - top_sim[:, :1]) / temperature)

        def vote(j, scores):
            # Neighbours added in rank order: a fixed summation order, and only
            # [chunk, num_classes] live at a time rather than a [chunk, k, num_classes] one-hot.
            hit = top_label[:, j, None] == classes
            return scores + jnp.where(hit, weight[:, j, None], 0.0)

        scores = jax.lax.fori_loop(0, k, vote, jnp.zeros((chunk_size, num_classes)))
        return jnp.argmax(scores, axis=1).astype(jnp.int32)  # equal scores: lower class

    return jax.lax.map(predict_chunk, queries).reshape(-1)[:m]


def _check_common(fn, train_x, train_y, query_x, query_name, k, num_classes, temperature, chunk):
    train_x = _inputs.features(fn, "train_x", train_x)
    query_x = _inputs.features(fn, query_name, query_x)
    _inputs.same_dim(fn, "train_x", train_x, query_name, query_x)
    num_classes = _inputs.count(fn, "num_classes", num_classes)
    n_train = train_x.shape[0]
    train_y = _inputs.labels(
        fn, "train_y", train_y, num_rows=n_train, rows_name="train_x", num_classes=num_classes
    )
    k = _inputs.count(fn, "k", k)
    if k > n_train:
        _checks.fail(fn, f"`k` must be at most the number of training rows ({n_train}), got {k}")
    if temperature is not None:
        temperature = _inputs.real(fn, "temperature", temperature, allow_zero=False)
    chunk = _inputs.count(fn, "chunk_size", chunk)
    return train_x, jnp.asarray(train_y), query_x, num_classes, k, temperature, chunk


def knn_predict(
    train_x: ArrayLike,
    train_y: ArrayLike,
    query_x: ArrayLike,
    *,
    k: int = 20,
    num_classes: int,
    temperature: float | None = 0.07,
    chunk_size: int = 1024,
) -> jax.Array:
    """Class predicted for each query row by a similarity-weighted vote of its k nearest rows.

    Rows are l2-normalised, so the neighbours of a query are the ``k`` training rows of
    highest cosine similarity ``s_i``; among equal similarities the lower training index is
    taken first (``jax.lax.top_k``'s order). Each neighbour votes for its class with weight
    ``exp(s_i / temperature)``, the weighted kNN of Wu et al. (InstDisc), which many
    self-supervised codebases use as a training monitor; ``temperature=None`` gives a plain
    majority vote. The class with the largest total wins, the lowest class index among equal
    totals, so results are deterministic. Queries are processed ``chunk_size`` rows at a time
    inside one compiled program, so memory is ``O(chunk_size * n_train)`` plus the training
    features.

    Args:
      train_x: ``[n_train, dim]`` training (memory-bank) features.
      train_y: ``[n_train]`` integer labels in ``[0, num_classes)``.
      query_x: ``[n_query, dim]`` features to classify.
      k: number of neighbours, ``1 <= k <= n_train``.
      num_classes: number of classes.
      temperature: vote temperature ``> 0`` (InstDisc: 0.07), or None for a majority vote.
      chunk_size: query rows per chunk, > 0.

    Returns:
      ``[n_query]`` int32 predicted classes.

    Example:
      >>> import numpy as np
      >>> from jaxcl.evaluation import knn_predict
      >>> bank = np.eye(3, dtype=np.float32)
      >>> knn_predict(bank, np.array([0, 1, 2]), bank[::-1], k=1, num_classes=3).tolist()
      [2, 1, 0]

    References:
      Wu et al., "Unsupervised Feature Learning via Non-Parametric Instance Discrimination"
      (InstDisc), CVPR 2018, weighted k-nearest-neighbour classifier.
    """
    fn = "knn_predict"
    train_x, train_y, query_x, num_classes, k, temperature, chunk_size = _check_common(
        fn, train_x, train_y, query_x, "query_x", k, num_classes, temperature, chunk_size
    )
    return _predict(
        train_x,
        train_y,
        query_x,
        k=k,
        num_classes=num_classes,
        chunk_size=min(chunk_size, query_x.shape[0]),
        temperature=temperature,
    )


def knn_accuracy(
    train_x: ArrayLike,
    train_y: ArrayLike,
    test_x: ArrayLike,
    test_y: ArrayLike,
    *,
    k: int = 20,
    num_classes: int,
    temperature: float | None = 0.07,
    chunk_size: int = 1024,
) -> float:
    """Top-1 accuracy of the cosine-similarity weighted kNN classifier (see ``knn_predict``).

    Args:
      train_x: ``[n_train, dim]`` training (memory-bank) features.
      train_y: ``[n_train]`` integer labels in ``[0, num_classes)``.
      test_x: ``[n_test, dim]`` test features.
      test_y: ``[n_test]`` integer labels in ``[0, num_classes)``.
      k: number of neighbours, ``1 <= k <= n_train``.
      num_classes: number of classes.
      temperature: vote temperature ``> 0`` (InstDisc: 0.07), or None for a majority vote.
      chunk_size: test rows per chunk, > 0; memory is ``O(chunk_size * n_train)``.

    Returns:
      Accuracy in [0, 1] as a Python float.

    Example:
      >>> import numpy as np
      >>> from jaxcl.evaluation import knn_accuracy
      >>> x = np.random.default_rng(0).normal(size=(100, 4)).astype(np.float32)
      >>> y = (x[:, 0] > 0).astype(np.int32)
      >>> knn_accuracy(x[:80], y[:80], x[80:], y[80:], k=5, num_classes=2) > 0.8
      True

    References:
      Wu et al., "Unsupervised Feature Learning via Non-Parametric Instance Discrimination"
      (InstDisc), CVPR 2018, weighted k-nearest-neighbour classifier.
    """
    fn = "knn_accuracy"
    train_x, train_y, test_x, num_classes, k, temperature, chunk_size = _check_common(
        fn, train_x, train_y, test_x, "test_x", k, num_classes, temperature, chunk_size
    )
    test_y = _inputs.labels(
        fn, "test_y", test_y, num_rows=test_x.shape[0], rows_name="test_x", num_classes=num_classes
    )
    pred = _predict(
        train_x,
        train_y,
        test_x,
        k=k,
        num_classes=num_classes,
        chunk_size=min(chunk_size, test_x.shape[0]),
        temperature=temperature,
    )
    return float(np.mean(np.asarray(pred) == test_y))
