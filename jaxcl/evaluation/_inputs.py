"""Argument checks shared by the evaluation protocols.

Features may be host NumPy or jax arrays; they are checked on static information (rank,
dtype, shape) and once for finiteness. Labels are pulled to the host to check their range,
which costs one small transfer and gives a message naming the bad value instead of a silent
out-of-range gather on the device.
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np

from jaxcl import _checks

_INT32 = np.iinfo(np.int32)


def features(fn: str, name: str, x) -> jax.Array:
    """A non-empty, finite ``[n, dim]`` floating array, as float32 on the default device."""
    x = _checks.embeddings(fn, name, x)
    xp = np if isinstance(x, np.ndarray) else jnp  # checked in the input's own precision
    if not bool(xp.all(xp.isfinite(x))):
        _checks.fail(fn, f"`{name}` contains NaN or infinite values (shape {tuple(x.shape)})")
    with np.errstate(over="ignore"):  # overflow is reported below, by name
        x32 = jnp.asarray(x, jnp.float32)
    if not bool(jnp.all(jnp.isfinite(x32))):
        big = float(xp.max(xp.abs(x)))
        _checks.fail(
            fn,
            f"`{name}` holds values beyond float32's range (largest magnitude {big:.3g}, "
            f"float32's maximum {float(jnp.finfo(jnp.float32).max):.3g}); these "
            "evaluations compute in float32: rescale the features",
        )
    return x32


def host_features(fn: str, name: str, x) -> np.ndarray:
    """A non-empty, finite ``[n, dim]`` floating array, as a host float64 NumPy array (what
    scikit-learn and the Newton SVM compute in; also for bfloat16 or float16 input)."""
    if not hasattr(x, "dtype") or not hasattr(x, "shape"):
        try:  # nested lists stay float64 on the host (the checks below would make float32)
            x = np.asarray(x)
        except (TypeError, ValueError):
            pass  # left to the checks' message
    x = _checks.embeddings(fn, name, x)
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        _checks.fail(fn, f"`{name}` contains NaN or infinite values (shape {x.shape})")
    return x


def labels(
    fn: str, name: str, y, *, num_rows: int, rows_name: str, num_classes: int | None
) -> np.ndarray:
    """Integer ``[num_rows]`` labels in ``[0, num_classes)``, as a host int32 array."""
    if not hasattr(y, "dtype") or not hasattr(y, "shape"):
        y = np.asarray(y)
    if y.dtype == bool or not np.issubdtype(np.dtype(y.dtype), np.integer):
        _checks.fail(fn, f"`{name}` must have an integer dtype (class indices), got {y.dtype}")
    y = np.asarray(y)
    if y.ndim != 1:
        _checks.fail(fn, f"`{name}` must have rank 1 ([n] class indices), got shape {y.shape}")
    if y.shape[0] != num_rows:
        _checks.fail(
            fn,
            f"`{name}` has {y.shape[0]} labels but `{rows_name}` has {num_rows} rows; "
            "they must match",
        )
    if y.size and (int(y.min()) < _INT32.min or int(y.max()) > _INT32.max):
        bad = int(y.min()) if int(y.min()) < _INT32.min else int(y.max())
        _checks.fail(fn, f"`{name}` must hold class indices within int32, found label {bad}")
    if num_classes is not None and y.size:
        low, high = int(y.min()), int(y.max())
        if low < 0 or high >= num_classes:
            bad = low if low < 0 else high
            _checks.fail(
                fn,
                f"`{name}` must lie in [0, {num_classes}) (num_classes={num_classes}), "
                f"found label {bad}",
            )
    return y.astype(np.int32)


def count(fn: str, name: str, value) -> int:
    """A positive Python integer (epochs, steps, batch size, k, ...)."""
    return _checks.positive_int(fn, name, value)


def seed(fn: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        _checks.fail(fn, f"`seed` must be a non-negative integer, got {value!r}")
    return int(value)


def same_dim(fn: str, name_a: str, a, name_b: str, b) -> None:
    if a.shape[1] != b.shape[1]:
        _checks.fail(
            fn,
            f"`{name_a}` and `{name_b}` must have the same feature dimension, got "
            f"{a.shape[1]} and {b.shape[1]}",
        )


def real(fn: str, name: str, value, *, allow_zero: bool) -> float:
    """A finite Python float, > 0 (or >= 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        _checks.fail(fn, f"`{name}` must be a real number, got {value!r}")
    if allow_zero:
        _checks.nonnegative(fn, name, value)
    else:
        _checks.positive(fn, name, value)
    return float(value)


def num_folds(fn: str, value, y: np.ndarray) -> int:
    """A fold count in ``[2, smallest class count]``, so every fold can hold every class."""
    value = _checks.positive_int(fn, "num_folds", value)
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) < 2:
        _checks.fail(fn, f"`y` must hold at least two classes to classify, got only {classes}")
    smallest = int(counts.min())
    if not 2 <= value <= smallest:
        _checks.fail(
            fn,
            f"`num_folds` must lie in [2, {smallest}] (the smallest class has {smallest} "
            f"examples; stratified folds need one of each per fold), got {value}",
        )
    return value
