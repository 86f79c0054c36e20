"""Shuffled minibatches of host arrays, reproducible from (seed, epoch)."""

from __future__ import annotations

import numbers
from collections.abc import Iterator

import numpy as np

from jaxcl.data._arrays import nonnegative_int


def _batch_size(fn: str, batch_size) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
        raise ValueError(f"{fn}: `batch_size` must be a positive int, got {batch_size!r}")
    if batch_size <= 0:
        raise ValueError(f"{fn}: `batch_size` must be a positive int, got {batch_size!r}")
    return int(batch_size)


def num_batches(num_examples: int, *, batch_size: int, drop_remainder: bool = True) -> int:
    """Number of batches :func:`iterate_batches` yields per epoch.

    Args:
      num_examples: examples in the split.
      batch_size: examples per batch.
      drop_remainder: whether the last, partial batch is dropped.

    Returns:
      ``num_examples // batch_size``, plus one for a partial batch unless it is dropped.

    Example:
      >>> from jaxcl.data import num_batches
      >>> num_batches(60000, batch_size=4096), num_batches(60000, batch_size=4096,
      ...                                                  drop_remainder=False)
      (14, 15)
    """
    fn = "num_batches"
    num_examples = nonnegative_int(fn, "num_examples", num_examples)
    batch_size = _batch_size(fn, batch_size)
    full, rest = divmod(num_examples, batch_size)
    return full + (1 if rest and not drop_remainder else 0)


def iterate_batches(
    x: np.ndarray,
    y: np.ndarray,
    *,
    batch_size: int,
    seed: int,
    epoch: int,
    drop_remainder: bool = True,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yields one epoch of shuffled ``(x, y)`` minibatches.

    The order is a permutation drawn from ``np.random.default_rng([seed, epoch])``: the same
    ``(seed, epoch)`` gives the same batches on every host and after a restart (so a resumed
    run can skip to its epoch), and each epoch has its own order. Every example appears at
    most once per epoch; with ``drop_remainder`` the ``len(x) % batch_size`` examples left
    over are skipped (different ones each epoch), so all batches have the static shape
    ``jit`` and device sharding want.

    Args:
      x: ``[n, ...]`` features (any array indexable along axis 0).
      y: ``[n, ...]`` labels (or any per-example array).
      batch_size: examples per batch (the global batch; the trainer shards it).
      seed: int >= 0, the run's data seed.
      epoch: int >= 0, the epoch index.
      drop_remainder: whether to drop the last, partial batch.

    Returns:
      An iterator over ``(x_batch [batch_size, ...], y_batch [batch_size, ...])`` NumPy
      arrays; :func:`num_batches` gives its length. Arguments are checked when the
      function is called, not at the first ``next``.

    Raises:
      ValueError: ``x`` and ``y`` differ in length, a bad ``batch_size``/``seed``/``epoch``,
        or ``drop_remainder=True`` with fewer than ``batch_size`` examples (the epoch would be
        empty).

    Example:
      >>> import numpy as np
      >>> from jaxcl.data import iterate_batches
      >>> x, y = np.arange(10.0)[:, None], np.arange(10)
      >>> [yb.tolist() for _, yb in iterate_batches(x, y, batch_size=4, seed=0, epoch=0)]
      [[4, 6, 2, 7], [3, 5, 9, 0]]
    """
    fn = "iterate_batches"
    batch_size = _batch_size(fn, batch_size)
    seed = nonnegative_int(fn, "seed", seed)
    epoch = nonnegative_int(fn, "epoch", epoch)
    n = len(x)
    if len(y) != n:
        raise ValueError(f"{fn}: `x` has {n} examples but `y` has {len(y)}")
    if drop_remainder and n < batch_size:
        raise ValueError(
            f"{fn}: `batch_size`={batch_size} exceeds the {n} examples and drop_remainder=True, "
            "so the epoch would have no batch; lower batch_size or pass drop_remainder=False"
        )
    order = np.random.default_rng([seed, epoch]).permutation(n)
    stop = n - n % batch_size if drop_remainder else n
    return _batches(x, y, order, batch_size, stop)


def _batches(x, y, order, batch_size, stop):
    for start in range(0, stop, batch_size):
        idx = order[start : start + batch_size]
        yield x[idx], y[idx]
