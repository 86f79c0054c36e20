"""jaxcl.augment's Lab conversion against scikit-image's ``rgb2lab`` (the conversion CMC's
data pipeline calls): values at the corners of the gamut and at both thresholds of the
piecewise curves, batches, uint8 input, gradients, the normalised views, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import skimage.color
from jax.test_util import check_grads

from jaxcl import augment

RNG = np.random.default_rng(0)

# The encoded gray level whose linear value is (6/29)^3, where Lab's f(t) switches from the
# tangent line to the cube root (the gray's X/Xn, Y/Yn and Z/Zn all sit next to it).
_LAB_KNEE_GRAY = 1.055 * ((6 / 29) ** 3) ** (1 / 2.4) - 0.055
_SPECIAL = np.array(
    [
        [0, 0, 0],
        [1, 1, 1],
        [1, 0, 0],
        [0, 1, 0],
        [0, 0, 1],
        [1, 1, 0],
        [0, 1, 1],
        [1, 0, 1],
        [0.5, 0.5, 0.5],
        *([c, c, c] for c in (0.04045 - 1e-4, 0.04045, 0.04045 + 1e-4)),
        *([c, c, c] for c in (_LAB_KNEE_GRAY - 1e-4, _LAB_KNEE_GRAY, _LAB_KNEE_GRAY + 1e-4)),
        [0.04045, _LAB_KNEE_GRAY, 0.9],
        [1e-6, 0.0, 1.0 - 1e-6],
    ],
    np.float32,
)
# Random pixels, with the special ones as the first row of an image.
IMAGE = RNG.uniform(size=(12, 20, 3)).astype(np.float32)
IMAGE[0, : len(_SPECIAL)] = _SPECIAL
ATOL = 1e-3  # Lab units (L in [0, 100])

# CMC's normalisation (HobbitLong/CMC, train_CMC.py), written out independently.
CMC_MEAN = np.array([(0 + 100) / 2, (-86.183 + 98.233) / 2, (-107.857 + 94.478) / 2])
CMC_STD = np.array([(100 - 0) / 2, (86.183 + 98.233) / 2, (107.857 + 94.478) / 2])


def _skimage_lab(image: np.ndarray) -> np.ndarray:
    return skimage.color.rgb2lab(np.asarray(image, np.float64))


def test_rgb_to_lab_matches_skimage_under_jit():
    got = jax.jit(augment.rgb_to_lab)(IMAGE)
    assert got.dtype == jnp.float32 and got.shape == IMAGE.shape
    np.testing.assert_allclose(np.asarray(got), _skimage_lab(IMAGE), rtol=0, atol=ATOL)


def test_rgb_to_lab_corners_of_the_gamut():
    lab = np.asarray(augment.rgb_to_lab(_SPECIAL[None]))[0]
    np.testing.assert_allclose(lab[0], [0, 0, 0], atol=1e-5)  # black
    np.testing.assert_allclose(lab[1], [100, 0, 0], atol=1e-2)  # white (up to the matrix)
    assert lab[2, 1] > 70 and lab[3, 1] < -70 and lab[4, 2] < -100  # red, green, blue


def test_rgb_to_lab_batched_and_vmapped():
    images = RNG.uniform(size=(2, 3, 5, 6, 3)).astype(np.float32)
    want = _skimage_lab(images)
    direct = jax.jit(augment.rgb_to_lab)(images)
    vmapped = jax.jit(jax.vmap(jax.vmap(augment.rgb_to_lab)))(images)
    np.testing.assert_allclose(np.asarray(direct), want, rtol=0, atol=ATOL)
    np.testing.assert_allclose(np.asarray(vmapped), np.asarray(direct), rtol=0, atol=1e-5)


def test_uint8_input_is_divided_by_255():
    pixels = RNG.integers(0, 256, size=(4, 7, 3), dtype=np.uint8)
    got = augment.rgb_to_lab(pixels)
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got), skimage.color.rgb2lab(pixels), atol=ATOL)
    np.testing.assert_allclose(
        np.asarray(got), np.asarray(augment.rgb_to_lab(pixels / np.float32(255))), atol=1e-4
    )


def test_bfloat16_input_is_computed_in_float32():
    image = jnp.asarray(IMAGE, jnp.bfloat16)
    got = augment.rgb_to_lab(image)
    assert got.dtype == jnp.float32
    want = _skimage_lab(np.asarray(image.astype(jnp.float32)))
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=ATOL)


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_gradients_are_finite_at_black_and_white(value):
    image = jnp.full((3, 4, 3), value, jnp.float32)
    for fn in (augment.rgb_to_lab, lambda x: jnp.concatenate(augment.lab_views(x), axis=-1)):
        grad = jax.jit(jax.grad(lambda x, fn=fn: jnp.sum(fn(x))))(image)
        assert np.all(np.isfinite(np.asarray(grad))), grad


def test_gradients_are_finite_at_the_thresholds_and_in_the_random_image():
    grad = np.asarray(jax.grad(lambda x: jnp.sum(augment.rgb_to_lab(x)[..., 0]))(IMAGE))
    assert np.all(np.isfinite(grad))
    # L increases with every channel, on both pieces of both curves.
    assert np.all(grad > 0)


def test_values_outside_the_unit_range_extrapolate_without_nan():
    image = jnp.asarray([[[-0.2, 0.5, 1.3], [-1.0, -1.0, -1.0], [2.0, 2.0, 2.0]]], jnp.float32)
    lab, grad = jax.value_and_grad(lambda x: jnp.sum(augment.rgb_to_lab(x)))(image)
    assert np.isfinite(float(lab)) and np.all(np.isfinite(np.asarray(grad)))


@pytest.mark.parametrize("value", [0.0, 0.02, 0.3, 1.0])
def test_gradients_match_finite_differences(value):
    # Inside one piece of each curve on both sides of ``value`` (at 0, negative inputs follow
    # the same lines), so central differences are exact up to rounding. Scaled to order 1.
    image = jnp.full((1, 2, 3), value, jnp.float32) + jnp.asarray([0.0, 0.01, 0.02])
    image = image.at[0, 0].set(value)
    check_grads(
        jax.jit(lambda x: augment.rgb_to_lab(x) / 100.0), (image,), order=1, eps=1e-3, atol=2e-2
    )


def test_lab_views_are_cmc_normalised_skimage_lab():
    lightness, ab = jax.jit(augment.lab_views)(IMAGE)
    assert lightness.shape == IMAGE.shape[:-1] + (1,) and ab.shape == IMAGE.shape[:-1] + (2,)
    want = (_skimage_lab(IMAGE) - CMC_MEAN) / CMC_STD
    np.testing.assert_allclose(np.asarray(lightness), want[..., :1], rtol=0, atol=ATOL / 40)
    np.testing.assert_allclose(np.asarray(ab), want[..., 1:], rtol=0, atol=ATOL / 80)


def test_lab_views_span_about_minus_one_to_one_on_the_gamut():
    levels = np.linspace(0, 1, 18, dtype=np.float32)
    cube = np.stack(np.meshgrid(levels, levels, levels, indexing="ij"), axis=-1)  # every corner
    lightness, ab = augment.lab_views(cube)
    lightness, ab = np.asarray(lightness), np.asarray(ab)
    np.testing.assert_allclose([lightness.min(), lightness.max()], [-1, 1], atol=1e-4)
    np.testing.assert_allclose(ab.min(axis=(0, 1, 2)), [-1, -1], atol=2e-3)
    np.testing.assert_allclose(ab.max(axis=(0, 1, 2)), [1, 1], atol=2e-3)


@pytest.mark.parametrize("fn", [augment.rgb_to_lab, augment.lab_views])
@pytest.mark.parametrize(
    "image, expected",
    [
        (np.zeros((4, 4, 1), np.float32), r"\[\.\.\., H, W, 3\], got shape \(4, 4, 1\)"),
        (np.zeros((4, 3), np.float32), r"got shape \(4, 3\)"),
        (np.zeros((4, 4, 3), np.int32), r"floating dtype .* or uint8, got int32"),
    ],
)
def test_bad_input_names_the_argument(fn, image, expected):
    with pytest.raises(ValueError, match=rf"^{fn.__name__}: `image` .*{expected}"):
        fn(image)
