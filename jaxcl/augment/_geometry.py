"""Random resized crop and horizontal flip, on the device.

The crop is drawn as torchvision's ``RandomResizedCrop.get_params`` draws it (an area
fraction uniform in ``scale``, a log-uniform aspect ratio in ``ratio``, up to ten tries,
then a central crop of the nearest admissible ratio), with the ten tries drawn at once so
that it compiles to straight-line code. The crop is resized with bilinear interpolation at
pixel centres, without antialiasing, reading the image around the box: at the box's border
the interpolation takes in the image's pixels just outside it, as PIL's ``resize(box=...)``
does (the host crop's path, so that both paths agree). torchvision (``antialias=False``)
crops first and clamps at the box's edge, so the two differ in the outermost output pixels
of an upscaled crop (about ``size / crop / 2`` of them per side) and agree inside.

Where the crop happens: here, on the device, from an image of fixed size (CIFAR, STL-10,
Fashion-MNIST, a decoded-and-resized ImageNet image). Data sets of images of varying size
(ImageNet) crop on the host while decoding, before batching; the device then only flips.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxcl import _checks as checks
from jaxcl.augment._color import image_array, interval

_TRIES = 10


def _size_pair(fn: str, size) -> tuple[int, int]:
    if checks.is_integer(size):
        size = (size, size)
    if not (
        isinstance(size, tuple | list)
        and len(size) == 2
        and all(checks.is_integer(s) and s > 0 for s in size)
    ):
        checks.fail(fn, f"`size` must be a positive int or (height, width), got {size!r}")
    return int(size[0]), int(size[1])


def crop_box(
    key: jax.Array, height: int, width: int, *, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)
) -> jax.Array:
    """A random crop ``[top, left, crop_height, crop_width]`` (int32) of an image.

    Args:
      key: one PRNG key.
      height, width: the image's size.
      scale: range of the crop's area as a fraction of the image's.
      ratio: range of the crop's aspect ratio (width / height), drawn log-uniformly.
    """
    fn = "crop_box"
    checks.prng_key(fn, "key", key)
    if not all(checks.is_integer(s) and s > 0 for s in (height, width)):
        checks.fail(fn, f"`height` and `width` must be positive ints, got {height!r}, {width!r}")
    height, width = int(height), int(width)
    s0, s1 = interval(fn, "scale", scale, 0.0, 1.0)
    r0, r1 = interval(fn, "ratio", ratio, 1e-6, 1e6)
    area_key, ratio_key, top_key, left_key = jax.random.split(key, 4)
    area = height * width
    target = area * jax.random.uniform(area_key, (_TRIES,), minval=s0, maxval=s1)
    aspect = jnp.exp(
        jax.random.uniform(ratio_key, (_TRIES,), minval=math.log(r0), maxval=math.log(r1))
    )
    w = jnp.round(jnp.sqrt(target * aspect)).astype(jnp.int32)
    h = jnp.round(jnp.sqrt(target / aspect)).astype(jnp.int32)
    valid = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = jnp.argmax(valid)

    # No try fits: the whole image cut to the nearest admissible ratio, centred.
    in_ratio = width / height
    if in_ratio < r0:
        fb_w, fb_h = width, int(round(width / r0))
    elif in_ratio > r1:
        fb_w, fb_h = int(round(height * r1)), height
    else:
        fb_w, fb_h = width, height
    any_valid = jnp.any(valid)
    h = jnp.where(any_valid, h[first], fb_h)
    w = jnp.where(any_valid, w[first], fb_w)
    # Uniform over the admissible corners (torchvision: randint(0, H - h + 1)).
    top = jnp.floor(jax.random.uniform(top_key) * (height - h + 1)).astype(jnp.int32)
    left = jnp.floor(jax.random.uniform(left_key) * (width - w + 1)).astype(jnp.int32)
    top = jnp.where(any_valid, jnp.minimum(top, height - h), (height - fb_h) // 2)
    left = jnp.where(any_valid, jnp.minimum(left, width - w), (width - fb_w) // 2)
    return jnp.stack([top, left, h, w]).astype(jnp.int32)


def resized_crop(image: jax.typing.ArrayLike, box: jax.typing.ArrayLike, size) -> jax.Array:
    """The crop ``box = [top, left, height, width]`` of ``image`` resized to ``size``.

    Bilinear at pixel centres (output pixel ``i`` samples the crop at ``(i + 0.5) *
    crop / size - 0.5``), sample positions outside the box read the image's pixels there
    (PIL's ``resize(box=...)``; torchvision clamps at the box instead), those outside the
    image clamped to its edge; no antialiasing. ``box`` may be traced (its values drawn
    under ``jit``).

    Args:
      image: ``[H, W, C]`` image.
      box: int ``[4]``: top, left, height, width of the crop, inside the image.
      size: ``(height, width)`` of the result (or one int for a square).
    """
    fn = "resized_crop"
    image = image_array(fn, "image", image, ndim=3)
    out_h, out_w = _size_pair(fn, size)
    box = jnp.asarray(box)
    if box.shape != (4,):
        checks.fail(fn, f"`box` must be [top, left, height, width], got shape {box.shape}")
    if not jnp.issubdtype(box.dtype, jnp.integer):
        checks.fail(fn, f"`box` must hold integer pixel positions, got dtype {box.dtype}")
    concrete = checks.concrete_array(box)
    if concrete is not None:  # a traced box (random_resized_crop's) is inside by construction
        t, l_, bh, bw = (int(v) for v in concrete)
        height, width = image.shape[:2]
        inside = 0 <= t and t + bh <= height and 0 <= l_ and l_ + bw <= width
        if not (bh >= 1 and bw >= 1 and inside):
            checks.fail(
                fn,
                f"`box` [top, left, height, width] = {[t, l_, bh, bw]} must lie inside the "
                f"{height} x {width} image with height and width >= 1",
            )
    top, left, h, w = (box[i].astype(jnp.float32) for i in range(4))
    scale = jnp.stack([out_h / h, out_w / w])
    translation = jnp.stack([-top * out_h / h, -left * out_w / w])
    out = jax.image.scale_and_translate(
        image.astype(jnp.float32),
        (out_h, out_w, image.shape[-1]),
        spatial_dims=(0, 1),
        scale=scale,
        translation=translation,
        method="linear",
        antialias=False,
    )
    return out.astype(image.dtype)


def random_resized_crop(
    key: jax.Array,
    image: jax.typing.ArrayLike,
    *,
    size,
    scale=(0.08, 1.0),
    ratio=(3 / 4, 4 / 3),
) -> jax.Array:
    """SimCLR's random resized crop: :func:`crop_box`, then :func:`resized_crop` to ``size``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.augment import random_resized_crop
      >>> image = jnp.linspace(0, 1, 32 * 32 * 3).reshape(32, 32, 3)
      >>> random_resized_crop(jax.random.key(0), image, size=32).shape
      (32, 32, 3)
    """
    image = image_array("random_resized_crop", "image", image, ndim=3)
    box = crop_box(key, image.shape[0], image.shape[1], scale=scale, ratio=ratio)
    return resized_crop(image, box, size)


def random_flip(key: jax.Array, image: jax.typing.ArrayLike, *, p=0.5) -> jax.Array:
    """With probability ``p``, the image mirrored left to right."""
    fn = "random_flip"
    checks.prng_key(fn, "key", key)
    image = image_array(fn, "image", image, ndim=3)
    checks.in_range(fn, "p", p, 0.0, 1.0)
    return jnp.where(jax.random.uniform(key) < p, image[:, ::-1, :], image)
