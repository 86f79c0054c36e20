"""Positive random features of the Gaussian kernel (FAVOR+), also in the log domain."""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp

from jaxcl import _checks
from jaxcl.random_features._common import check_draw, check_dtype, feature_map, omega_of, project


@functools.partial(jax.tree_util.register_dataclass, data_fields=["omega"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class PositiveParams:
    """Positive random feature directions.

    Attributes:
      omega: ``[dim, num_features]`` directions whose columns are marginally standard normal
        (i.i.d., or block-orthogonal); not scaled by the temperature.
    """

    omega: jax.Array


def _log_features(z: jax.Array, omega: jax.Array, temperature) -> jax.Array:
    """`positive_log_features` on validated inputs in their compute dtype."""
    sq_norm = jnp.sum(z * z, axis=-1, keepdims=True)
    return (
        project(z, omega, temperature)
        - sq_norm / jnp.asarray(temperature, z.dtype)
        - 0.5 * math.log(omega.shape[1])
    )


def draw_positive(
    key: jax.Array,
    dim: int,
    num_features: int,
    *,
    orthogonal: bool = False,
    dtype=jnp.float32,
) -> PositiveParams:
    """Draws the directions of positive random features.

    With ``orthogonal=True`` the directions come in blocks of ``dim`` mutually orthogonal
    vectors: each block is the ``Q`` of a Gaussian matrix's QR decomposition (sign-corrected
    so that it is Haar distributed) with every column rescaled by an independent
    chi-distributed norm, so that each column is still marginally standard normal (the
    estimator stays unbiased) while the block's columns are exactly orthogonal, which lowers
    the variance.

    Args:
      key: PRNG key (``jax.random.key``).
      dim: input dimension ``d``.
      num_features: number of directions ``D`` (the feature map has ``D`` entries).
      orthogonal: draw block-orthogonal directions instead of i.i.d. ones.
      dtype: floating dtype of ``omega`` (bfloat16 and float16 are drawn in float32 and
        rounded once; float64, with x64 on, is drawn and orthogonalised in float64).

    Returns:
      ``PositiveParams`` with ``omega: [dim, num_features]``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_positive
      >>> omega = draw_positive(jax.random.key(0), 8, 8, orthogonal=True).omega
      >>> bool(jnp.allclose(omega.T @ omega, jnp.diag(jnp.diag(omega.T @ omega)), atol=1e-4))
      True

    References:
      Choromanski et al., "Rethinking attention with Performers" (FAVOR+, orthogonal random
      features), ICLR 2021; Yu et al., "Orthogonal Random Features", NeurIPS 2016.
    """
    fn = "draw_positive"
    dim, num_features = check_draw(fn, key, dim, num_features)
    dtype = check_dtype(fn, dtype)
    if not _checks.boolean(fn, "orthogonal", orthogonal):
        return PositiveParams(omega=jax.random.normal(key, (dim, num_features), dtype))
    num_blocks = -(-num_features // dim)
    key_q, key_norm = jax.random.split(key)
    # QR is not implemented for bfloat16/float16: draw in float32 (float64 stays float64, so
    # that float64 columns are orthogonal to float64 rounding) and cast once.
    work = jnp.promote_types(dtype, jnp.float32)
    gaussian = jax.random.normal(key_q, (num_blocks, dim, dim), work)
    q, r = jnp.linalg.qr(gaussian)
    # Without this sign correction Q is not Haar distributed (LAPACK fixes diag(R) >= 0 only
    # up to convention), and its columns would not be uniform on the sphere.
    q = q * jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1))[:, None, :]
    norms = jnp.linalg.norm(jax.random.normal(key_norm, (num_blocks, dim, dim), work), axis=-2)
    blocks = q * norms[:, None, :]
    omega = jnp.transpose(blocks, (1, 0, 2)).reshape(dim, num_blocks * dim)[:, :num_features]
    return PositiveParams(omega=omega.astype(dtype))


def positive_log_features(
    z: jax.typing.ArrayLike, params: PositiveParams, *, temperature
) -> jax.Array:
    """Logarithm of the positive random features, for log-domain (logsumexp) use.

    ``log Phi+(z) = z W - ||z||^2 / temperature - log(D) / 2`` with
    ``W = omega / sqrt(temperature)``; see ``positive_features``. Never overflows, unlike
    ``exp`` of it for large ``||z||^2 / temperature``.

    Args:
      z: ``[..., dim]`` floating inputs.
      params: ``PositiveParams`` from ``draw_positive``.
      temperature: kernel bandwidth ``tau > 0``.

    Returns:
      ``[..., D]`` log-features in the dtype of ``z``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_positive, positive_log_features
      >>> params = draw_positive(jax.random.key(0), 4, 16)
      >>> positive_log_features(jnp.ones((3, 4)), params, temperature=0.1).shape
      (3, 16)

    References:
      Choromanski et al., "Rethinking attention with Performers", ICLR 2021, Lemma 1.
    """
    fn = "positive_log_features"
    omega = omega_of(fn, params)
    return feature_map(
        fn, z, omega.shape[0], temperature, lambda x: _log_features(x, omega, temperature)
    )


def positive_features(z: jax.typing.ArrayLike, params: PositiveParams, *, temperature) -> jax.Array:
    """Strictly positive random features of the Gaussian kernel (FAVOR+).

    ``Phi+(z) = exp(z W - ||z||^2 / temperature) / sqrt(D)`` with
    ``W = omega / sqrt(temperature)``, which is unbiased for the Gaussian kernel:

    For ``w ~ N(0, I_d)`` and any ``u``, ``E[exp(w . u)] = exp(||u||^2 / 2)`` (the Gaussian
    moment generating function). One feature pair contributes, with ``u = (x + y) /
    sqrt(temperature)``,

        E[exp(w . u - (||x||^2 + ||y||^2) / temperature)]
          = exp((||x + y||^2 - 2 ||x||^2 - 2 ||y||^2) / (2 temperature))
          = exp(-(||x||^2 - 2 x . y + ||y||^2) / (2 temperature))
          = exp(-||x - y||^2 / (2 temperature)),

    and ``Phi+(x) . Phi+(y)`` is the mean of ``D`` such terms, so
    ``E[Phi+(x) . Phi+(y)] = exp(-||x - y||^2 / (2 temperature))`` exactly. Only the marginal
    law of each column of ``omega`` enters, so block-orthogonal directions keep it unbiased.
    Unlike the cosine features every term is positive, so sums of kernel values stay positive
    (safe under ``log``). The variance of one term is
    ``exp(4 x . y / temperature) - exp(-||x - y||^2 / temperature)``, large for aligned inputs
    at small temperature; use ``positive_log_features`` where ``exp`` could overflow.

    Args:
      z: ``[..., dim]`` floating inputs.
      params: ``PositiveParams`` from ``draw_positive``.
      temperature: kernel bandwidth ``tau > 0``.

    Returns:
      ``[..., D]`` strictly positive features in the dtype of ``z``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_positive, positive_features
      >>> params = draw_positive(jax.random.key(0), 4, 4096, orthogonal=True)
      >>> x = jnp.array([1.0, 0.0, 0.0, 0.0]); y = jnp.array([0.0, 1.0, 0.0, 0.0])
      >>> phi = lambda v: positive_features(v, params, temperature=1.0)
      >>> bool(abs(phi(x) @ phi(y) - jnp.exp(-1.0)) < 0.05)
      True

    References:
      Choromanski et al., "Rethinking attention with Performers", ICLR 2021, Lemma 1 (positive
      random features for the softmax kernel, here with the Gaussian factors folded in).
    """
    fn = "positive_features"
    omega = omega_of(fn, params)
    return feature_map(
        fn, z, omega.shape[0], temperature, lambda x: jnp.exp(_log_features(x, omega, temperature))
    )
