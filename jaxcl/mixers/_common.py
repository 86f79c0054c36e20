"""Pieces shared by the mixers: batch validation, the compute dtype, per-sample broadcasting."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcl import _checks as checks


def sample_batch(fn: str, x, *, min_batch: int) -> jax.Array:
    """Checks that ``x`` is a floating ``[batch, ...]`` array with ``batch >= min_batch``."""
    x = jnp.asarray(checks.floating_array(fn, "x", x))
    if x.ndim == 0:
        checks.fail(fn, f"`x` must have a leading batch axis, got a scalar (shape {x.shape})")
    batch = x.shape[0]
    if batch == 0:
        checks.fail(fn, f"`x` is an empty batch (shape {x.shape}); need at least one sample")
    if batch < min_batch:
        checks.fail(
            fn,
            f"`x` has batch size {batch} (shape {x.shape}); each sample is mixed with a "
            f"different sample of the batch, so the batch needs at least {min_batch} samples",
        )
    return x


def unit_rows(z: jax.Array) -> jax.Array:
    """Rows scaled to unit l2 norm, in at least float32; all-zero rows stay zero, and rows of
    norm below 1e-6 are divided by 1e-6 (as ``jaxcl.losses.l2_normalize``, which this layer
    cannot import)."""
    z = z.astype(compute_dtype(z.dtype))
    sq = jnp.sum(z * z, axis=-1, keepdims=True)
    return z * jax.lax.rsqrt(jnp.maximum(sq, 1e-12))


def compute_dtype(dtype) -> jnp.dtype:
    """At least float32: bf16/f16 inputs are mixed in float32 and cast back."""
    return jnp.promote_types(dtype, jnp.float32)


def per_sample(values: jax.Array, ndim: int) -> jax.Array:
    """Reshapes ``[batch]`` values to ``[batch, 1, ..., 1]`` so they broadcast over a sample."""
    return values.reshape(values.shape + (1,) * (ndim - 1))


def row_mask(fn: str, where, batch: int) -> jax.Array | None:
    """Checks an optional ``[batch]`` boolean mask of the rows that take part."""
    return checks.bool_mask(fn, "where", where, batch)
