"""Pieces shared by the random features: argument checks and the shared feature algebra.

All three feature maps approximate ``k(x, y) = exp(-||x - y||^2 / (2 * temperature))`` by an
inner product of explicit feature maps, ``k(x, y) ~ Phi(x) . Phi(y)``, which turns a sum of
``N^2`` pairwise kernel values into ``N`` feature maps and one sum (ESCo, "Towards Provably
Effective and Scalable Contrastive Representation Learning", Sec. 4.2, Eq. 11).

The random parameters are drawn once (``draw_*``) and are independent of the temperature, so
one draw can serve several temperatures and can be stored in a training state. Projections
take float32 (or wider) inputs and accumulate in float32 whatever the input dtype, and are
cast back to the dtype of ``z`` at the end. Their matmuls run at JAX's default precision:
full float32 on CPU; on GPU/TPU XLA may round the operands (TF32, bfloat16 passes) unless
``jax.default_matmul_precision('highest')`` is in effect.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxcl import _checks


def check_draw(fn: str, key, dim, num_features) -> tuple[int, int]:
    """The key and sizes of a ``draw_*`` call; returns ``(dim, num_features)`` as ints."""
    _checks.prng_key(fn, "key", key)
    return _checks.positive_int(fn, "dim", dim), _checks.positive_int(
        fn, "num_features", num_features
    )


def check_dtype(fn: str, dtype) -> jnp.dtype:
    try:
        dtype = jnp.dtype(dtype)
    except TypeError:
        _checks.fail(fn, f"`dtype` must be a floating dtype, got {dtype!r}")
    if not jnp.issubdtype(dtype, jnp.floating):
        _checks.fail(fn, f"`dtype` must be a floating dtype, got {dtype}")
    return dtype


def omega_of(fn: str, params) -> jax.Array:
    """The ``[dim, num_features]`` directions of RFF or positive-feature parameters."""
    omega = getattr(params, "omega", None)
    if omega is None or jnp.ndim(omega) != 2:
        _checks.fail(
            fn,
            "`params` must hold a [dim, num_features] `omega` (RFFParams or PositiveParams), "
            f"got {type(params).__name__}",
        )
    return omega


def feature_map(
    fn: str,
    z,
    dim: int,
    temperature,
    compute: Callable[[jax.Array], jax.Array],
    promote: bool = True,
) -> jax.Array:
    """Validates ``z`` and ``temperature``, then ``compute(z)`` in the compute dtype of ``z``.

    ``z`` is promoted to float32 (or wider) for ``compute`` (unless ``promote`` is False:
    ``compute`` then takes ``z`` as it came and computes in float32 itself), and the result is
    cast back to the dtype ``z`` came in.
    """
    z = jnp.asarray(_checks.floating_array(fn, "z", z))
    if z.ndim == 0:
        _checks.fail(fn, "`z` must have shape [..., dim], got a scalar")
    if z.shape[-1] != dim:
        _checks.fail(
            fn,
            f"`z` must have last dimension dim={dim} to match `params`, got shape {tuple(z.shape)}",
        )
    _checks.positive(fn, "temperature", temperature)
    out = compute(z.astype(jnp.promote_types(z.dtype, jnp.float32)) if promote else z)
    return out.astype(z.dtype)


def project(z: jax.Array, omega: jax.Array, temperature) -> jax.Array:
    """``z @ (omega / sqrt(temperature))`` with float32 (or wider) accumulation."""
    omega = omega.astype(z.dtype)
    return jnp.matmul(z, omega, preferred_element_type=z.dtype) * jax.lax.rsqrt(
        jnp.asarray(temperature, z.dtype)
    )


def cos_sin(projection: jax.Array, num_features: int) -> jax.Array:
    """``[cos p, sin p] / sqrt(D)``: the trigonometric features of a projection ``p``."""
    scale = 1.0 / math.sqrt(num_features)
    return jnp.concatenate([jnp.cos(projection), jnp.sin(projection)], axis=-1) * scale
