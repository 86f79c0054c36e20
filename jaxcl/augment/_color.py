"""Colour transformations of images in ``[0, 1]``: the deterministic adjustments and their
random versions as SimCLR and BYOL draw them.

Images are float arrays ``[..., H, W, C]`` with values in ``[0, 1]``; ``C`` is 3 (RGB) or 1
(grayscale). The adjustments follow torchvision's definitions (which follow PIL's
``ImageEnhance``), in float arithmetic: brightness scales, contrast blends with the mean of
the grayscale image, saturation blends with the grayscale image, hue rotates the HSV hue.
Every result is clipped to ``[0, 1]``. On one channel, saturation, hue and grayscale leave
the image as it is (a gray image has no colour to change).
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp

from jaxcl import _checks as checks

# ITU-R 601-2 luma, as PIL's convert("L") and torchvision's rgb_to_grayscale.
LUMA = (0.299, 0.587, 0.114)


def image_array(fn: str, name: str, image, *, ndim: int | None = None) -> jax.Array:
    """A floating ``[..., H, W, C]`` array with ``C`` in (1, 3); ``ndim`` fixes the rank."""
    image = checks.floating_array(fn, name, image)
    if image.ndim < 3 or (ndim is not None and image.ndim != ndim):
        want = f"rank {ndim}" if ndim is not None else "rank >= 3"
        checks.fail(fn, f"`{name}` must be images [..., H, W, C] ({want}), got {image.shape}")
    if image.shape[-1] not in (1, 3):
        checks.fail(
            fn,
            f"`{name}` must have 1 (grayscale) or 3 (RGB) channels last, got shape "
            f"{tuple(image.shape)}",
        )
    return image


def interval(
    fn: str, name: str, value, low: float, high: float, *, low_open: bool = False
) -> tuple[float, float]:
    """A concrete ``(min, max)`` pair with ``low <= min <= max <= high`` (``low < min`` when
    ``low_open``): the range a transformation draws its parameter from."""
    if not (isinstance(value, tuple | list) and len(value) == 2):
        checks.fail(fn, f"`{name}` must be a (min, max) pair, got {value!r}")
    bounds = [checks.number(fn, name, v) for v in value]
    if any(b is None for b in bounds):
        checks.fail(fn, f"`{name}` must be a pair of concrete numbers (not traced), got {value!r}")
    a, b = (float(v) for v in bounds)
    if not ((low < a if low_open else low <= a) and a <= b <= high):
        lower = f"{low} {'<' if low_open else '<='} min"
        checks.fail(fn, f"`{name}` must satisfy {lower} <= max <= {high}, got {value!r}")
    return a, b


def _gray(image: jax.Array) -> jax.Array:
    """``[..., H, W, 1]`` luma of an RGB image (the image itself if it has one channel)."""
    if image.shape[-1] == 1:
        return image
    weights = jnp.asarray(LUMA, image.dtype)
    return jnp.sum(image * weights, axis=-1, keepdims=True)


def _blend(image, other, factor):
    factor = jnp.asarray(factor, image.dtype)
    return jnp.clip(factor * image + (1 - factor) * other, 0.0, 1.0)


def rgb_to_grayscale(image: jax.typing.ArrayLike, *, channels: int | None = None) -> jax.Array:
    """Luma ``0.299 R + 0.587 G + 0.114 B``, repeated to ``channels`` (default: as input).

    Args:
      image: ``[..., H, W, C]`` images, ``C`` in (1, 3).
      channels: channels of the result (1 or 3); default the input's.
    """
    image = image_array("rgb_to_grayscale", "image", image)
    channels = image.shape[-1] if channels is None else channels
    if not checks.is_integer(channels):
        checks.fail("rgb_to_grayscale", f"`channels` must be the int 1 or 3, got {channels!r}")
    checks.one_of("rgb_to_grayscale", "channels", channels, (1, 3))
    return jnp.repeat(_gray(image), channels, axis=-1)


def adjust_brightness(image: jax.typing.ArrayLike, factor) -> jax.Array:
    """``clip(factor * image)``: 0 gives black, 1 the image."""
    image = image_array("adjust_brightness", "image", image)
    checks.nonnegative("adjust_brightness", "factor", factor)
    return _blend(image, jnp.zeros_like(image), factor)


def adjust_contrast(image: jax.typing.ArrayLike, factor) -> jax.Array:
    """Blend with the mean gray level of each image: 0 gives a flat gray image, 1 the image."""
    image = image_array("adjust_contrast", "image", image)
    checks.nonnegative("adjust_contrast", "factor", factor)
    mean = jnp.mean(_gray(image), axis=(-3, -2, -1), keepdims=True)
    return _blend(image, mean, factor)


def adjust_saturation(image: jax.typing.ArrayLike, factor) -> jax.Array:
    """Blend with the grayscale image: 0 gives gray, 1 the image, 2 doubles the saturation."""
    image = image_array("adjust_saturation", "image", image)
    checks.nonnegative("adjust_saturation", "factor", factor)
    if image.shape[-1] == 1:
        return image
    return _blend(image, _gray(image), factor)


def _rgb_to_hsv(rgb):
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    value = jnp.max(rgb, axis=-1)
    minimum = jnp.min(rgb, axis=-1)
    chroma = value - minimum
    safe_value = jnp.where(value > 0, value, 1.0)
    saturation = jnp.where(value > 0, chroma / safe_value, 0.0)
    safe_chroma = jnp.where(chroma > 0, chroma, 1.0)
    # Hue in sixths of a turn, from whichever channel is the maximum (red first, as colorsys).
    hue = jnp.where(
        value == r,
        (g - b) / safe_chroma,
        jnp.where(value == g, 2.0 + (b - r) / safe_chroma, 4.0 + (r - g) / safe_chroma),
    )
    hue = jnp.where(chroma > 0, (hue / 6.0) % 1.0, 0.0)
    return hue, saturation, value


def _hsv_to_rgb(hue, saturation, value):
    # The closed form of the six-sector HSV cone: channel n is v - v s max(0, min(k, 4 - k, 1))
    # with k = (n + 6 h) mod 6, n = 5, 3, 1 for R, G, B.
    def channel(n):
        k = (n + hue * 6.0) % 6.0
        return value - value * saturation * jnp.clip(jnp.minimum(k, 4.0 - k), 0.0, 1.0)

    return jnp.stack([channel(5.0), channel(3.0), channel(1.0)], axis=-1)


def adjust_hue(image: jax.typing.ArrayLike, delta) -> jax.Array:
    """Rotate the hue by ``delta`` turns (``delta`` in ``[-0.5, 0.5]``) in HSV space."""
    image = image_array("adjust_hue", "image", image)
    checks.in_range("adjust_hue", "delta", delta, -0.5, 0.5)
    if image.shape[-1] == 1:
        return image
    hue, saturation, value = _rgb_to_hsv(image)
    hue = (hue + jnp.asarray(delta, image.dtype)) % 1.0
    return jnp.clip(_hsv_to_rgb(hue, saturation, value), 0.0, 1.0)


def solarize(image: jax.typing.ArrayLike, threshold=0.5) -> jax.Array:
    """Invert the pixels at or above ``threshold``: ``1 - x`` where ``x >= threshold``."""
    image = image_array("solarize", "image", image)
    checks.in_range("solarize", "threshold", threshold, 0.0, 1.0)
    return jnp.where(image >= threshold, 1.0 - image, image)


def _bernoulli(key, p):
    return jax.random.uniform(key) < p


def color_jitter_params(
    key: jax.Array, *, brightness=0.0, contrast=0.0, saturation=0.0, hue=0.0
) -> dict[str, jax.Array]:
    """The random parameters of :func:`color_jitter` (torchvision's ``ColorJitter``).

    Returns:
      ``{'brightness', 'contrast', 'saturation'}``: factors uniform in
      ``[max(0, 1 - s), 1 + s]`` for strength ``s``; ``'hue'``: uniform in ``[-h, h]``;
      ``'order'``: a uniformly random permutation of ``arange(4)``, the order in which
      brightness (0), contrast (1), saturation (2) and hue (3) are applied.
    """
    fn = "color_jitter_params"
    checks.prng_key(fn, "key", key)
    for name, value in (
        ("brightness", brightness),
        ("contrast", contrast),
        ("saturation", saturation),
    ):
        checks.nonnegative(fn, name, value)
    checks.in_range(fn, "hue", hue, 0.0, 0.5)
    keys = jax.random.split(key, 5)

    def factor(k, s):
        return jax.random.uniform(k, minval=jnp.maximum(0.0, 1.0 - s), maxval=1.0 + s)

    return {
        "brightness": factor(keys[0], brightness),
        "contrast": factor(keys[1], contrast),
        "saturation": factor(keys[2], saturation),
        "hue": jax.random.uniform(keys[3], minval=-hue, maxval=hue),
        "order": jax.random.permutation(keys[4], 4),
    }


def apply_color_jitter(image: jax.Array, params: dict[str, jax.Array]) -> jax.Array:
    """The four adjustments with ``params`` (:func:`color_jitter_params`), in its order.

    One image's parameters: to jitter a batch, ``vmap`` this function together with
    :func:`color_jitter_params`."""
    fn = "apply_color_jitter"
    image = image_array(fn, "image", image)
    names = ("brightness", "contrast", "saturation", "hue", "order")
    if not (isinstance(params, Mapping) and set(params) == set(names)):
        got = sorted(params) if isinstance(params, Mapping) else type(params).__name__
        checks.fail(fn, f"`params` must be the dict color_jitter_params returns {names}, got {got}")
    shapes = {k: tuple(jnp.shape(params[k])) for k in names}
    if any(shapes[k] != () for k in names[:4]) or shapes["order"] != (4,):
        checks.fail(
            fn,
            f"`params` must be one image's: scalar factors and an `order` of shape (4,), got "
            f"shapes {shapes} (for a batch, vmap apply_color_jitter with color_jitter_params)",
        )
    ops = (
        lambda x: adjust_brightness(x, params["brightness"]),
        lambda x: adjust_contrast(x, params["contrast"]),
        lambda x: adjust_saturation(x, params["saturation"]),
        lambda x: adjust_hue(x, params["hue"]),
    )
    for i in range(4):
        image = jax.lax.switch(params["order"][i], ops, image)
    return image


def color_jitter(
    key: jax.Array,
    image: jax.typing.ArrayLike,
    *,
    brightness=0.0,
    contrast=0.0,
    saturation=0.0,
    hue=0.0,
    p=1.0,
) -> jax.Array:
    """With probability ``p``, brightness, contrast, saturation and hue jitter in random order.

    SimCLR's colour distortion of strength ``s`` is ``brightness = contrast = saturation =
    0.8 s``, ``hue = 0.2 s``, ``p = 0.8``; BYOL's is 0.4, 0.4, 0.2, 0.1, ``p = 0.8``.

    Args:
      key: one PRNG key (``jax.vmap`` over a batch of keys for a batch of images).
      image: ``[H, W, C]`` image in ``[0, 1]``.
      brightness, contrast, saturation: strengths ``s >= 0`` (factor in ``[1 - s, 1 + s]``).
      hue: strength in ``[0, 0.5]`` (rotation in ``[-hue, hue]`` turns).
      p: probability of applying the jitter.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.augment import color_jitter
      >>> image = jnp.full((4, 4, 3), 0.5)
      >>> color_jitter(jax.random.key(0), image, brightness=0.8, contrast=0.8).shape
      (4, 4, 3)
    """
    fn = "color_jitter"
    checks.prng_key(fn, "key", key)
    image = image_array(fn, "image", image, ndim=3)
    checks.in_range(fn, "p", p, 0.0, 1.0)
    apply_key, params_key = jax.random.split(key)
    params = color_jitter_params(
        params_key, brightness=brightness, contrast=contrast, saturation=saturation, hue=hue
    )
    return jnp.where(_bernoulli(apply_key, p), apply_color_jitter(image, params), image)


def random_grayscale(key: jax.Array, image: jax.typing.ArrayLike, *, p=0.2) -> jax.Array:
    """With probability ``p``, the luma repeated on every channel (SimCLR: ``p = 0.2``)."""
    fn = "random_grayscale"
    checks.prng_key(fn, "key", key)
    image = image_array(fn, "image", image, ndim=3)
    checks.in_range(fn, "p", p, 0.0, 1.0)
    gray = jnp.broadcast_to(_gray(image), image.shape)
    return jnp.where(_bernoulli(key, p), gray, image)


def random_solarize(
    key: jax.Array, image: jax.typing.ArrayLike, *, p=0.2, threshold=0.5
) -> jax.Array:
    """With probability ``p``, :func:`solarize` (BYOL's second view: ``p = 0.2``)."""
    fn = "random_solarize"
    checks.prng_key(fn, "key", key)
    image = image_array(fn, "image", image, ndim=3)
    checks.in_range(fn, "p", p, 0.0, 1.0)
    return jnp.where(_bernoulli(key, p), solarize(image, threshold), image)
