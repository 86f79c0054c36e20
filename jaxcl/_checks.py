"""Argument checks shared by the public functions.

Every check runs at trace time, on static information (shapes, dtypes, Python numbers),
and raises ``ValueError`` naming the function, the argument, the value received and what
was expected. Hyperparameters passed as traced arrays cannot be checked before they are
known; they pass through unchecked.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def _concrete(value):
    """Returns ``value`` as a Python/NumPy scalar when it is known at trace time, else None."""
    if isinstance(value, numbers.Number):
        return value
    if isinstance(value, jax.core.Tracer):
        return None
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - anything that is not array-like is not concrete
        return None
    if arr.ndim == 0:
        return arr.item()
    return None


def _show(value) -> str:
    """The value as a reader wants it in a message: ``0.5``, not ``Array(0.5, ...)``."""
    v = _concrete(value)
    return repr(v) if v is not None else repr(value)


def fail(fn: str, message: str) -> None:
    raise ValueError(f"{fn}: {message}")


def floating_array(fn: str, name: str, x, *, ndim: int | Sequence[int] | None = None):
    """Checks that ``x`` is a floating array of the given rank; returns it as a jax array."""
    if not hasattr(x, "dtype") or not hasattr(x, "shape"):
        try:
            x = jnp.asarray(x)
        except TypeError:
            fail(fn, f"`{name}` must be an array, got {type(x).__name__}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        fail(fn, f"`{name}` must have a floating dtype, got {x.dtype} (shape {tuple(x.shape)})")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            fail(fn, f"`{name}` must have rank {want}, got shape {tuple(x.shape)}")
    return x


def embeddings(fn: str, name: str, z):
    """A non-empty ``[batch, dim]`` floating array."""
    z = floating_array(fn, name, z, ndim=2)
    if z.shape[0] == 0:
        fail(fn, f"`{name}` is an empty batch (shape {tuple(z.shape)}); need at least one row")
    if z.shape[1] == 0:
        fail(fn, f"`{name}` has zero features (shape {tuple(z.shape)}); need dim >= 1")
    return z


def same_shape(fn: str, name_a: str, a, name_b: str, b) -> None:
    if tuple(a.shape) != tuple(b.shape):
        fail(
            fn,
            f"`{name_a}` and `{name_b}` must have the same shape, got "
            f"{tuple(a.shape)} and {tuple(b.shape)}",
        )


def positive(fn: str, name: str, value) -> None:
    v = _concrete(value)
    if v is not None and not (np.isfinite(v) and v > 0):
        fail(fn, f"`{name}` must be a finite number > 0, got {_show(value)}")


def nonnegative(fn: str, name: str, value) -> None:
    v = _concrete(value)
    if v is not None and not (np.isfinite(v) and v >= 0):
        fail(fn, f"`{name}` must be a finite number >= 0, got {_show(value)}")


def positive_int(fn: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        fail(fn, f"`{name}` must be a positive integer, got {value!r}")
    return int(value)


def in_range(
    fn: str,
    name: str,
    value,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    """Checks ``low <(=) value <(=) high`` when ``value`` is known at trace time."""
    v = _concrete(value)
    if v is None:
        return
    ok_low = v > low if low_open else v >= low
    ok_high = v < high if high_open else v <= high
    if not (np.isfinite(v) and ok_low and ok_high):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        fail(fn, f"`{name}` must lie in {interval}, got {_show(value)}")


def one_of(fn: str, name: str, value, choices: Sequence[str]) -> None:
    if value not in choices:
        fail(fn, f"`{name}` must be one of {list(choices)}, got {value!r}")


def prng_key(fn: str, name: str, key) -> None:
    if key is None:
        fail(fn, f"`{name}` is required here, got None")
    dtype = getattr(key, "dtype", None)
    if dtype is None:
        fail(fn, f"`{name}` must be a PRNG key (jax.random.key), got {type(key).__name__}")
    if jnp.issubdtype(dtype, jax.dtypes.prng_key):
        return
    if dtype == jnp.uint32 and key.shape[-1:] == (2,):
        return
    fail(fn, f"`{name}` must be a PRNG key (jax.random.key), got dtype {dtype}")


def bool_mask(fn: str, name: str, mask, size: int):
    """An optional boolean ``[size]`` mask (rows that take part); None passes through."""
    if mask is None:
        return None
    mask = jnp.asarray(mask)
    if mask.dtype != jnp.bool_ or mask.shape != (size,):
        fail(
            fn,
            f"`{name}` must be a boolean array of shape ({size},), got {mask.dtype} with "
            f"shape {tuple(mask.shape)}",
        )
    return mask
