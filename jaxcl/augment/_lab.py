"""CIE Lab colour of sRGB images, and the normalised L and ab views of CMC and MetAug.

The conversion is sRGB (IEC 61966-2-1 transfer curve) -> linear RGB -> CIE XYZ (the sRGB
D65 matrix of scikit-image's ``rgb2xyz``) -> CIE 1976 L*a*b* with the D65 2-degree white
point, as ``skimage.color.rgb2lab``, which CMC's data pipeline calls. It is pointwise, so it
takes images ``[..., H, W, 3]`` with any leading batch dimensions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcl import _checks as checks

# sRGB (linear, D65) -> CIE XYZ, rows X, Y, Z: skimage.color.colorconv.xyz_from_rgb.
XYZ_FROM_RGB = (
    (0.412453, 0.357580, 0.180423),
    (0.212671, 0.715160, 0.072169),
    (0.019334, 0.119193, 0.950227),
)
# Reference white: CIE standard illuminant D65, 2-degree observer, Y normalised to 1.
D65_WHITE = (0.95047, 1.0, 1.08883)

# Normalisation of CMC (HobbitLong/CMC, train_CMC.py) and MetAug: the centre and half-width
# of the L, a and b ranges that sRGB colours reach, so each channel lands in about [-1, 1].
_LAB_MEAN = ((0.0 + 100.0) / 2, (-86.183 + 98.233) / 2, (-107.857 + 94.478) / 2)
_LAB_STD = ((100.0 - 0.0) / 2, (86.183 + 98.233) / 2, (107.857 + 94.478) / 2)

# The sRGB transfer curve switches from linear to power law at this encoded value.
_SRGB_KNEE = 0.04045
# CIE Lab: f(t) = t^(1/3) above (6/29)^3, the tangent line t / (3 (6/29)^2) + 4/29 below.
_DELTA = 6.0 / 29.0


def _rgb_image(fn: str, image) -> jax.Array:
    """``image`` as a float array ``[..., H, W, 3]`` in ``[0, 1]``, at least float32.

    Floating inputs are taken as values in ``[0, 1]``; uint8 inputs are divided by 255.
    """
    try:
        image = jnp.asarray(image)
    except TypeError:
        checks.fail(fn, f"`image` must be an array, got {type(image).__name__}")
    is_uint8 = image.dtype == jnp.uint8
    if not (jnp.issubdtype(image.dtype, jnp.floating) or is_uint8):
        checks.fail(
            fn,
            f"`image` must have a floating dtype (values in [0, 1]) or uint8, got "
            f"{image.dtype} (shape {tuple(image.shape)})",
        )
    if image.ndim < 3 or image.shape[-1] != 3:
        checks.fail(
            fn, f"`image` must be RGB images [..., H, W, 3], got shape {tuple(image.shape)}"
        )
    # float32 at least: bf16 has 8 bits of mantissa, too few for the cube root and the
    # differences of a and b.
    image = image.astype(jnp.promote_types(image.dtype, jnp.float32))
    return image / 255.0 if is_uint8 else image


def _srgb_to_linear(c: jax.Array) -> jax.Array:
    # The pow is evaluated on a safe value where the linear branch is taken, so that neither
    # its value nor its gradient can be nan for inputs below the knee (the double-where trick).
    power = c > _SRGB_KNEE
    safe = jnp.where(power, c, 1.0)
    return jnp.where(power, ((safe + 0.055) / 1.055) ** 2.4, c / 12.92)


def _lab_f(t: jax.Array) -> jax.Array:
    # The cube root has an infinite derivative at 0: below the threshold the tangent line is
    # taken, and the cube root only ever sees a safe value there.
    cube = t > _DELTA**3
    safe = jnp.where(cube, t, 1.0)
    return jnp.where(cube, jnp.cbrt(safe), t / (3.0 * _DELTA**2) + 4.0 / 29.0)


def rgb_to_lab(image: jax.typing.ArrayLike) -> jax.Array:
    """CIE Lab (D65, 2-degree observer) of sRGB images, as ``skimage.color.rgb2lab``.

    Computed in float32 (float64 for float64 inputs). The gradient is finite for every
    input in ``[0, 1]``, black included; values outside ``[0, 1]`` are extrapolated along
    the same curves (no nan) rather than clipped.

    Args:
      image: ``[..., H, W, 3]`` sRGB images, floating in ``[0, 1]`` or uint8 (divided by
        255); any leading batch dimensions.

    Returns:
      ``[..., H, W, 3]`` Lab values: ``L`` in ``[0, 100]``, ``a`` about in ``[-86, 98]``
      and ``b`` about in ``[-108, 94]`` over the sRGB gamut.

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcl.augment import rgb_to_lab
      >>> lab = rgb_to_lab(jnp.ones((2, 2, 3)))  # white
      >>> lab.shape, round(float(lab[0, 0, 0]), 3)
      ((2, 2, 3), 100.0)

    References:
      IEC 61966-2-1:1999, sRGB. CIE 15:2004, Colorimetry, section 8.2.1 (CIE 1976 L*a*b*).
    """
    return _lab(_rgb_image("rgb_to_lab", image))


def _lab(image: jax.Array) -> jax.Array:
    """:func:`rgb_to_lab` of a checked float image."""
    rgb = _srgb_to_linear(image)
    # Multiply-and-sum rather than a matmul: a matmul may run at reduced precision on
    # accelerators (bf16 passes on TPU by default), this stays in full float32.
    matrix = jnp.asarray(XYZ_FROM_RGB, rgb.dtype) / jnp.asarray(D65_WHITE, rgb.dtype)[:, None]
    xyz = jnp.sum(rgb[..., None, :] * matrix, axis=-1)  # already divided by the white point
    fx, fy, fz = (_lab_f(xyz[..., i]) for i in range(3))
    return jnp.stack([116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)], axis=-1)


def lab_views(image: jax.typing.ArrayLike) -> tuple[jax.Array, jax.Array]:
    """The two views of CMC and MetAug: the normalised L channel and ab channels of the image.

    Each channel of :func:`rgb_to_lab` is centred and scaled by the constants of CMC's
    official code (also MetAug's): ``mean = [(0 + 100) / 2, (-86.183 + 98.233) / 2,
    (-107.857 + 94.478) / 2]``, ``std = [(100 - 0) / 2, (86.183 + 98.233) / 2,
    (107.857 + 94.478) / 2]``, the centres and half-widths of the ranges that sRGB colours
    reach, so that each channel lies in about ``[-1, 1]`` (``L`` exactly).

    Args:
      image: ``[..., H, W, 3]`` sRGB images, floating in ``[0, 1]`` or uint8 (divided by
        255); any leading batch dimensions.

    Returns:
      ``(l, ab)``: ``l`` of shape ``[..., H, W, 1]`` (``(L - 50) / 50``) and ``ab`` of shape
      ``[..., H, W, 2]``, both float32 (float64 for float64 inputs).

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcl.augment import lab_views
      >>> l, ab = lab_views(jnp.zeros((8, 4, 4, 3)))  # black: L = 0, a = b = 0
      >>> l.shape, ab.shape, float(l.max())
      ((8, 4, 4, 1), (8, 4, 4, 2), -1.0)

    References:
      Tian, Krishnan and Isola, "Contrastive Multiview Coding", ECCV 2020 (the L and ab
      views of ImageNet images), https://github.com/HobbitLong/CMC. Li et al., "MetAug:
      Contrastive Learning via Meta Feature Augmentation", ICML 2022.
    """
    lab = _lab(_rgb_image("lab_views", image))
    mean = jnp.asarray(_LAB_MEAN, lab.dtype)
    std = jnp.asarray(_LAB_STD, lab.dtype)
    lab = (lab - mean) / std
    return lab[..., :1], lab[..., 1:]
