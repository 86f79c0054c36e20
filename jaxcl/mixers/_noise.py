"""Additive Gaussian noise: the domain-agnostic baseline DACL compares Mixup-noise against."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcl import _checks as checks
from jaxcl.mixers._common import compute_dtype, sample_batch


def gaussian_noise(key: jax.Array, x: jax.typing.ArrayLike, *, scale) -> jax.Array:
    """Positive view by additive isotropic Gaussian noise, ``x + scale * delta``.

    ``delta ~ N(0, I)`` is drawn independently for every element of every sample. The
    paper's §5 phrase "the mean of Gaussian-noise from {0.05, 0.1, 0.3, 0.5} and the
    standard deviation set to 1.0" is read as the §4 form ``x + alpha * delta``,
    ``delta ~ N(0, I)``, with ``scale`` in the role of ``alpha``.

    Args:
      key: PRNG key.
      x: ``[batch, ...]`` floating samples (features, images, hidden vectors).
      scale: noise standard deviation, ``>= 0`` (``0`` returns ``x``).

    Returns:
      ``[batch, ...]`` noisy samples, dtype of ``x``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.mixers import gaussian_noise
      >>> x = jnp.ones((4, 3))
      >>> gaussian_noise(jax.random.key(0), x, scale=0.1).shape
      (4, 3)

    References:
      Verma et al., "Towards Domain-Agnostic Contrastive Learning", ICML 2021, §2 and §4
      (``x+ = x + alpha * delta``, ``delta ~ N(0, I)``).
    """
    fn = "gaussian_noise"
    checks.prng_key(fn, "key", key)
    x = sample_batch(fn, x, min_batch=1)
    checks.nonnegative(fn, "scale", scale)
    dtype = compute_dtype(x.dtype)
    delta = jax.random.normal(key, x.shape, dtype)
    return (x.astype(dtype) + jnp.asarray(scale, dtype) * delta).astype(x.dtype)
