"""Argument checks shared by the public functions.

Every check runs at trace time, on static information (shapes, dtypes, Python numbers),
and raises ``ValueError`` naming the function, the argument, the value received and what
was expected. Hyperparameters passed as traced arrays cannot be checked before they are
known; they pass through unchecked. Value checks of arrays (index ranges) run only on
concrete arrays: a tracer is recognised without touching its value, so they never force a
device-to-host transfer inside ``jit``.
"""

from __future__ import annotations

import functools
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


def _describe(value) -> str:
    """What a rejected value was, for a message: its repr, or its dtype and shape."""
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return f"an array of dtype {value.dtype} and shape {tuple(value.shape)}"
    return f"{value!r} ({type(value).__name__})"


def number(fn: str, name: str, value, *, finite: bool = True):
    """A real scalar hyperparameter (Python number or 0-d int/float array, traced or not).

    Returns its value when it is known at trace time, else None (a tracer). ``None``,
    strings, booleans, complex numbers, arrays of another rank and known NaN or infinite
    values are refused, so that a wrong value fails here, naming the argument, rather than
    deep inside the arithmetic (a NaN threshold silently compares false everywhere).
    ``finite=False`` leaves NaN and infinities to the caller's own range check.
    """
    if isinstance(value, bool | np.bool_):
        fail(fn, f"`{name}` must be a real number, got {value!r}")
    if isinstance(value, numbers.Real):
        if finite and not _finite(value):
            fail(fn, f"`{name}` must be a finite number, got {value!r}")
        return value
    if value is None or isinstance(value, str | bytes):
        fail(fn, f"`{name}` must be a real number, got {_describe(value)}")
    if not (hasattr(value, "dtype") and hasattr(value, "shape")):
        try:
            value = np.asarray(value)
        except Exception:  # noqa: BLE001 - whatever it is, it is not a number
            fail(fn, f"`{name}` must be a real number, got {_describe(value)}")
    numeric = jnp.issubdtype(value.dtype, jnp.integer) or jnp.issubdtype(value.dtype, jnp.floating)
    if not numeric or tuple(value.shape) != ():
        fail(fn, f"`{name}` must be a real number (a scalar), got {_describe(value)}")
    v = _concrete(value)
    if finite and v is not None and not _finite(v):
        fail(fn, f"`{name}` must be a finite number, got {v!r}")
    return v


def _finite(v) -> bool:
    """A Python int of any size is finite (``np.isfinite`` refuses ints past 64 bits)."""
    return isinstance(v, numbers.Integral) or bool(np.isfinite(v))


def positive(fn: str, name: str, value) -> None:
    v = number(fn, name, value, finite=False)
    if v is not None and not (_finite(v) and v > 0):
        fail(fn, f"`{name}` must be a finite number > 0, got {_show(value)}")


def nonnegative(fn: str, name: str, value) -> None:
    v = number(fn, name, value, finite=False)
    if v is not None and not (_finite(v) and v >= 0):
        fail(fn, f"`{name}` must be a finite number >= 0, got {_show(value)}")


def is_real(value) -> bool:
    """Whether ``value`` is a finite real scalar (Python or NumPy), not a bool."""
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool | np.bool_)
        and _finite(value)
    )


def is_integer(value) -> bool:
    """Whether ``value`` is an integer scalar (Python or NumPy), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def boolean(fn: str, name: str, value) -> bool:
    """A flag: a Python ``bool`` or NumPy ``bool_``, returned as a Python bool.

    Anything else is refused rather than taken by its truth value (the string ``"False"`` is
    truthy). A flag chooses the computation at trace time, so a traced (or any array) value is
    refused too, with this message instead of JAX's concretization error.
    """
    if isinstance(value, bool | np.bool_):
        return bool(value)
    fail(fn, f"`{name}` must be a bool (True or False, static under jit), got {_describe(value)}")


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
    v = number(fn, name, value, finite=False)
    if v is None:
        return
    ok_low = v > low if low_open else v >= low
    ok_high = v < high if high_open else v <= high
    if not (_finite(v) and ok_low and ok_high):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        fail(fn, f"`{name}` must lie in {interval}, got {_show(value)}")


def one_of(fn: str, name: str, value, choices: Sequence[str]) -> None:
    if value not in choices:
        fail(fn, f"`{name}` must be one of {list(choices)}, got {value!r}")


@functools.cache
def _raw_key_shape(impl: str) -> tuple[int, ...]:
    """Shape of a legacy ``jax.random.PRNGKey`` (uint32) key of the implementation ``impl``."""
    del impl  # the cache key: PRNGKey follows the configured default implementation
    return tuple(jax.eval_shape(lambda: jax.random.PRNGKey(0)).shape)


def prng_key(fn: str, name: str, key) -> None:
    """One PRNG key: a scalar typed key (``jax.random.key``) or one legacy uint32 key.

    A batch of keys (``jax.random.split(key, n)``) is refused: the functions here take one
    key and split it themselves; ``jax.vmap`` over a batch of keys hands each call one key.
    """
    if key is None:
        fail(fn, f"`{name}` is required here, got None")
    dtype = getattr(key, "dtype", None)
    if dtype is None:
        fail(fn, f"`{name}` must be a PRNG key (jax.random.key), got {type(key).__name__}")
    shape = tuple(key.shape)
    if jnp.issubdtype(dtype, jax.dtypes.prng_key):
        if shape != ():
            fail(
                fn,
                f"`{name}` must be one PRNG key (shape ()), got a batch of keys of shape "
                f"{shape}; pass a single key, or jax.vmap over the batch",
            )
        return
    if dtype == jnp.uint32:
        raw_shape = _raw_key_shape(str(jax.config.jax_default_prng_impl))
        if shape != raw_shape:
            fail(
                fn,
                f"`{name}` must be one PRNG key: a jax.random.key, or a uint32 "
                f"jax.random.PRNGKey of shape {raw_shape}; got uint32 of shape {shape}",
            )
        return
    fail(fn, f"`{name}` must be a PRNG key (jax.random.key), got dtype {dtype}")


def concrete_array(x) -> np.ndarray | None:
    """``x`` as a NumPy array when its values are known (not traced), else None.

    A tracer is recognised by its type alone, so inside ``jit`` this costs nothing and never
    moves data from the device.
    """
    if isinstance(x, jax.core.Tracer):
        return None
    try:
        return np.asarray(x)
    except Exception:  # noqa: BLE001 - e.g. an abstract value: not concrete
        return None


def index_array(
    fn: str, name: str, x, shape: tuple[int, ...], *, size: int, what: str, where=None
) -> jax.Array:
    """An integer array of ``shape`` whose entries, when concrete, lie in ``[0, size)``.

    ``what`` says what the entries index (for the message). Only the entries where the
    optional boolean ``where`` is True are checked (when ``where`` is concrete too). Traced
    entries cannot be checked; the caller documents what happens to out-of-range ones then.
    """
    x = np.asarray(x) if not hasattr(x, "dtype") else x
    if not jnp.issubdtype(x.dtype, jnp.integer) or tuple(x.shape) != shape:
        fail(
            fn,
            f"`{name}` must be an integer array of shape {shape}, got {x.dtype} with "
            f"shape {tuple(x.shape)}",
        )
    values = concrete_array(x)
    if values is not None:
        bad = (values < 0) | (values >= size)
        if where is not None:
            where = concrete_array(where)
            if where is None:  # traced mask: which entries count is unknown
                return jnp.asarray(x)
            bad &= where
        positions = np.argwhere(bad)
        if positions.size:
            at = tuple(int(i) for i in positions[0])
            index = ", ".join(str(i) for i in at)
            fail(
                fn,
                f"`{name}` must hold {what} in [0, {size}), got {name}[{index}] = "
                f"{values[at]!s} ({len(positions)} out of range)",
            )
    return jnp.asarray(x)


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
