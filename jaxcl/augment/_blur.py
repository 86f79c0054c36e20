"""Gaussian blur: a separable convolution with reflected borders, sigma drawn per image."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcl import _checks as checks
from jaxcl.augment._color import image_array, interval


def default_kernel_size(side: int) -> int:
    """SimCLR's and BYOL's kernel: ``2 * (k // 2) + 1`` for ``k = side // 10`` (23 at 224,
    9 at 96, 25 at 256), at least 3 (3 at 32 and 28)."""
    radius = (side // 10) // 2
    return max(3, 2 * radius + 1)


def gaussian_kernel(sigma, kernel_size: int) -> jax.Array:
    """The normalised 1-D kernel ``exp(-x^2 / 2 sigma^2)`` on ``x = -r..r``, ``r = size // 2``
    (``sigma > 0``, may be traced; ``kernel_size`` a positive odd int)."""
    fn = "gaussian_kernel"
    checks.positive(fn, "sigma", sigma)
    kernel_size = checks.positive_int(fn, "kernel_size", kernel_size)
    if kernel_size % 2 == 0:
        checks.fail(fn, f"`kernel_size` must be odd, got {kernel_size}")
    radius = kernel_size // 2
    x = jnp.arange(-radius, radius + 1, dtype=jnp.float32)
    weights = jnp.exp(-0.5 * jnp.square(x / jnp.asarray(sigma, jnp.float32)))
    return weights / jnp.sum(weights)


def gaussian_blur(image: jax.typing.ArrayLike, sigma, *, kernel_size: int) -> jax.Array:
    """``image`` convolved with a Gaussian of standard deviation ``sigma`` (pixels).

    Separable (rows, then columns), borders reflected without repeating the edge pixel
    (``numpy.pad(mode='reflect')``, torchvision's ``GaussianBlur``).

    Args:
      image: ``[H, W, C]`` image.
      sigma: standard deviation ``> 0``, may be traced.
      kernel_size: odd kernel width, smaller than twice each side.
    """
    fn = "gaussian_blur"
    image = image_array(fn, "image", image, ndim=3)
    checks.positive(fn, "sigma", sigma)
    kernel_size = checks.positive_int(fn, "kernel_size", kernel_size)
    radius = kernel_size // 2
    if kernel_size % 2 == 0 or radius >= min(image.shape[0], image.shape[1]):
        checks.fail(
            fn,
            f"`kernel_size` must be odd and less than twice the image's sides, got "
            f"{kernel_size} for an image of shape {tuple(image.shape)}",
        )
    kernel = gaussian_kernel(sigma, kernel_size)
    x = image.astype(jnp.float32)
    for axis in (0, 1):
        pad = [(0, 0)] * 3
        pad[axis] = (radius, radius)
        padded = jnp.pad(x, pad, mode="reflect")
        n = x.shape[axis]
        x = sum(
            kernel[i] * jax.lax.slice_in_dim(padded, i, i + n, axis=axis)
            for i in range(kernel_size)
        )
    return x.astype(image.dtype)


def random_gaussian_blur(
    key: jax.Array,
    image: jax.typing.ArrayLike,
    *,
    p=0.5,
    sigma=(0.1, 2.0),
    kernel_size: int | None = None,
) -> jax.Array:
    """With probability ``p``, :func:`gaussian_blur` with sigma uniform in ``sigma``.

    SimCLR blurs ImageNet views with ``p = 0.5`` (not CIFAR's); BYOL blurs its first view
    always and its second with ``p = 0.1``. ``kernel_size`` defaults to
    :func:`default_kernel_size` of the image's height.
    """
    fn = "random_gaussian_blur"
    checks.prng_key(fn, "key", key)
    image = image_array(fn, "image", image, ndim=3)
    checks.in_range(fn, "p", p, 0.0, 1.0)
    lo, hi = interval(fn, "sigma", sigma, 0.0, float("inf"), low_open=True)
    kernel_size = default_kernel_size(image.shape[0]) if kernel_size is None else kernel_size
    apply_key, sigma_key = jax.random.split(key)
    s = jax.random.uniform(sigma_key, minval=lo, maxval=hi)
    blurred = gaussian_blur(image, s, kernel_size=kernel_size)
    return jnp.where(jax.random.uniform(apply_key) < p, blurred, image)
