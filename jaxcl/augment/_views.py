"""The views of SimCLR and BYOL, composed from the single-image transformations, and a
helper that draws views of a batch with one key per example and view."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxcl import _checks as checks
from jaxcl.augment._blur import random_gaussian_blur
from jaxcl.augment._color import (
    color_jitter,
    image_array,
    interval,
    random_grayscale,
    random_solarize,
)
from jaxcl.augment._geometry import _size_pair, random_flip, random_resized_crop


def _view_size(fn: str, image: jax.Array, size, crop) -> tuple[int, int]:
    """``size`` as ``(height, width)``; with ``crop=False`` the image must already be it."""
    size = _size_pair(fn, size)
    if not crop and tuple(image.shape[:2]) != size:
        checks.fail(
            fn,
            f"crop=False takes an image already cropped to `size` = {size}, got an image of "
            f"{tuple(image.shape[:2])}",
        )
    return size


def simclr_view(
    key: jax.Array,
    image: jax.typing.ArrayLike,
    *,
    size,
    strength=1.0,
    blur_p=0.0,
    crop_scale=(0.08, 1.0),
    crop=True,
) -> jax.Array:
    """One SimCLR view: random resized crop, flip, colour distortion, grayscale, blur.

    SimCLR (Chen et al., 2020, App. A): crop of area ``crop_scale`` and ratio 3/4-4/3
    resized to ``size``; horizontal flip (p 0.5); colour jitter of strength ``s``
    (brightness, contrast, saturation 0.8 s, hue 0.2 s, random order, p 0.8); grayscale
    (p 0.2); Gaussian blur with sigma in [0.1, 2] and a kernel of 10% of the side (p
    ``blur_p``: SimCLR's code 0.5 on ImageNet and 0 on CIFAR, where ``s = 0.5``; DACL's
    CIFAR configs keep 0.5, as DACL §5.2 lists the blur among SimCLR's augmentations).

    Args:
      key: one PRNG key; the same key gives the same view.
      image: ``[H, W, C]`` image in ``[0, 1]``, ``C`` in (1, 3).
      size: side (or ``(height, width)``) of the view.
      strength: colour distortion strength ``s`` in ``[0, 2.5]`` (hue's ``0.2 s`` cannot pass
        half a turn).
      blur_p: probability of the blur.
      crop_scale: range of the crop's area fraction.
      crop: False for an image the host already cropped to ``size`` (varying-size data
        sets, :class:`jaxcl.data.HostCrop`): the other steps only.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.augment import simclr_view
      >>> image = jnp.linspace(0, 1, 32 * 32 * 3).reshape(32, 32, 3)
      >>> simclr_view(jax.random.key(0), image, size=32, strength=0.5).shape
      (32, 32, 3)
    """
    fn = "simclr_view"
    checks.prng_key(fn, "key", key)
    image = image_array(fn, "image", image, ndim=3)
    size = _view_size(fn, image, size, crop)
    checks.in_range(fn, "strength", strength, 0.0, 2.5)
    checks.in_range(fn, "blur_p", blur_p, 0.0, 1.0)
    interval(fn, "crop_scale", crop_scale, 0.0, 1.0)
    crop_key, flip_key, jitter_key, gray_key, blur_key = jax.random.split(key, 5)
    x = random_resized_crop(crop_key, image, size=size, scale=crop_scale) if crop else image
    x = random_flip(flip_key, x)
    s = strength
    x = color_jitter(
        jitter_key, x, brightness=0.8 * s, contrast=0.8 * s, saturation=0.8 * s, hue=0.2 * s, p=0.8
    )
    x = random_grayscale(gray_key, x, p=0.2)
    if checks.number(fn, "blur_p", blur_p) != 0:
        x = random_gaussian_blur(blur_key, x, p=blur_p)
    return x


def byol_view(
    key: jax.Array,
    image: jax.typing.ArrayLike,
    *,
    size,
    blur_p=1.0,
    solarize_p=0.0,
    crop=True,
) -> jax.Array:
    """One BYOL view (Grill et al., 2020, Table 6): crop (area 0.08-1), flip, colour jitter
    (0.4, 0.4, 0.2, 0.1, p 0.8), grayscale (p 0.2), blur (p ``blur_p``), solarisation (p
    ``solarize_p``). BYOL's first view: ``blur_p=1, solarize_p=0``; its second: ``0.1, 0.2``.
    ``crop=False``: the image is already a host crop of ``size`` (see :func:`simclr_view`).
    """
    fn = "byol_view"
    checks.prng_key(fn, "key", key)
    image = image_array(fn, "image", image, ndim=3)
    size = _view_size(fn, image, size, crop)
    checks.in_range(fn, "blur_p", blur_p, 0.0, 1.0)
    checks.in_range(fn, "solarize_p", solarize_p, 0.0, 1.0)
    crop_key, flip_key, jitter_key, gray_key, blur_key, solar_key = jax.random.split(key, 6)
    x = random_resized_crop(crop_key, image, size=size) if crop else image
    x = random_flip(flip_key, x)
    x = color_jitter(jitter_key, x, brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1, p=0.8)
    x = random_grayscale(gray_key, x, p=0.2)
    x = random_gaussian_blur(blur_key, x, p=blur_p)
    return random_solarize(solar_key, x, p=solarize_p)


BYOL_VIEWS = ({"blur_p": 1.0, "solarize_p": 0.0}, {"blur_p": 0.1, "solarize_p": 0.2})


def batch_views(
    key: jax.Array,
    images: jax.typing.ArrayLike,
    view: Callable[..., jax.Array],
    settings=({}, {}),
) -> tuple[jax.Array, ...]:
    """Views of a batch: view ``v`` of image ``i`` is ``view(keys[v, i], images[i],
    **settings[v])`` with ``keys = jax.random.split(key, (len(settings), batch))``.

    Args:
      key: one PRNG key for the batch.
      images: ``[batch, H, W, C]`` images in ``[0, 1]``.
      view: a single-image view such as ``functools.partial(simclr_view, size=32)``.
      settings: one dict of keyword arguments per view (BYOL: :data:`BYOL_VIEWS`).

    Returns:
      One ``[batch, ...]`` array per view.

    Example:
      >>> import functools, jax, jax.numpy as jnp
      >>> from jaxcl.augment import batch_views, simclr_view
      >>> images = jnp.zeros((8, 32, 32, 3))
      >>> a, b = batch_views(jax.random.key(0), images, functools.partial(simclr_view, size=32))
      >>> a.shape, b.shape
      ((8, 32, 32, 3), (8, 32, 32, 3))
    """
    fn = "batch_views"
    checks.prng_key(fn, "key", key)
    images = image_array(fn, "images", images, ndim=4)
    if not settings:
        checks.fail(fn, "`settings` must hold one dict per view, got none")
    keys = jax.random.split(key, (len(settings), images.shape[0]))
    return tuple(
        jax.vmap(functools.partial(view, **kw))(keys[v], images) for v, kw in enumerate(settings)
    )


def to_unit_range(images: jax.typing.ArrayLike) -> jax.Array:
    """uint8 images to float32 in ``[0, 1]`` (floating images are returned as float32, taken
    to be in ``[0, 1]`` already). Other integer and boolean dtypes are refused: their range
    is not known (an int32 image of 0-255 would pass through as 0-255)."""
    images = jnp.asarray(images)
    if images.dtype == jnp.uint8:
        return images.astype(jnp.float32) / 255.0
    if not jnp.issubdtype(images.dtype, jnp.floating):
        checks.fail(
            "to_unit_range",
            f"`images` must be uint8 (0-255) or floating (0-1), got dtype {images.dtype}",
        )
    return images.astype(jnp.float32)
