"""Random Fourier features (RFF) of the Gaussian kernel."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from jaxcl.random_features._common import (
    check_draw,
    check_dtype,
    cos_sin,
    feature_map,
    omega_of,
    project,
)


@functools.partial(jax.tree_util.register_dataclass, data_fields=["omega"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class RFFParams:
    """Random Fourier feature directions.

    Attributes:
      omega: ``[dim, num_features]`` standard normal directions, not scaled by the temperature.
    """

    omega: jax.Array


def draw_rff(key: jax.Array, dim: int, num_features: int, *, dtype=jnp.float32) -> RFFParams:
    """Draws the Gaussian directions of random Fourier features.

    Args:
      key: PRNG key (``jax.random.key``).
      dim: input dimension ``d``.
      num_features: number of directions ``D``; the feature map has ``2 * D`` entries.
      dtype: floating dtype of ``omega``.

    Returns:
      ``RFFParams`` with ``omega: [dim, num_features]`` i.i.d. standard normal.

    Example:
      >>> import jax
      >>> from jaxcl.random_features import draw_rff
      >>> draw_rff(jax.random.key(0), 16, 256).omega.shape
      (16, 256)

    References:
      Rahimi & Recht, "Random features for large-scale kernel machines", NeurIPS 2007;
      ESCo Sec. 4.2 (``W = G / sqrt(tau)``, G standard normal).
    """
    fn = "draw_rff"
    dim, num_features = check_draw(fn, key, dim, num_features)
    dtype = check_dtype(fn, dtype)
    return RFFParams(omega=jax.random.normal(key, (dim, num_features), dtype))


def rff_features(z: jax.typing.ArrayLike, params: RFFParams, *, temperature) -> jax.Array:
    """Random Fourier features of the Gaussian kernel.

    ``Phi(z) = [cos(z W), sin(z W)] / sqrt(D)`` with ``W = omega / sqrt(temperature)``, so that
    ``E[Phi(x) . Phi(y)] = exp(-||x - y||^2 / (2 * temperature))`` and the variance of the
    estimate is at most ``1 / (2 D)``.

    Args:
      z: ``[..., dim]`` floating inputs (any leading batch shape).
      params: ``RFFParams`` from ``draw_rff`` (``omega: [dim, D]``).
      temperature: kernel bandwidth ``tau > 0``.

    Returns:
      ``[..., 2 * D]`` features in the dtype of ``z``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_rff, rff_features
      >>> params = draw_rff(jax.random.key(0), 4, 4096)
      >>> x = jnp.array([1.0, 0.0, 0.0, 0.0]); y = jnp.array([0.0, 1.0, 0.0, 0.0])
      >>> k = rff_features(x, params, temperature=1.0) @ rff_features(y, params, temperature=1.0)
      >>> bool(abs(k - jnp.exp(-1.0)) < 0.05)
      True

    References:
      Rahimi & Recht, NeurIPS 2007; ESCo Eq. 2 and Eq. 11.
    """
    fn = "rff_features"
    omega = omega_of(fn, params)
    return feature_map(
        fn,
        z,
        omega.shape[0],
        temperature,
        lambda x: cos_sin(project(x, omega, temperature), omega.shape[1]),
    )


def rff_projection(z: jax.typing.ArrayLike, params: RFFParams, *, temperature) -> jax.Array:
    """Random Fourier projection ``z W`` with ``W = omega / sqrt(temperature)``.

    The argument of the cosines and sines in :func:`rff_features`. Code that only needs sums of
    features (as ESCo's kernel sums do) can reduce ``cos`` and ``sin`` of this directly and
    never build the ``[..., 2 D]`` feature array.

    Args:
      z: ``[..., dim]`` floating inputs.
      params: ``RFFParams`` from ``draw_rff``.
      temperature: kernel bandwidth ``tau > 0``.

    Returns:
      ``[..., num_features]`` projections in the dtype of ``z``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_rff, rff_features, rff_projection
      >>> params = draw_rff(jax.random.key(0), 8, 64)
      >>> z = jax.random.normal(jax.random.key(1), (3, 8))
      >>> p = rff_projection(z, params, temperature=0.5)  # [3, 64]
      >>> cosines = rff_features(z, params, temperature=0.5)[:, :64]  # cos(p) / sqrt(64)
      >>> bool(jnp.allclose(cosines, jnp.cos(p) / 8.0, atol=1e-6))
      True

    References:
      Rahimi & Recht, NeurIPS 2007; ESCo Eq. 11.
    """
    fn = "rff_projection"
    omega = omega_of(fn, params)
    return feature_map(fn, z, omega.shape[0], temperature, lambda x: project(x, omega, temperature))
