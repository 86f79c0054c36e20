"""jaxcl.augment against independent references: PIL's ImageEnhance and grayscale, colorsys
for hue, scipy.ndimage for the blur, a NumPy loop for the bilinear crop and for
torchvision's crop-box procedure; parameter distributions; keys; shapes; errors."""

import colorsys
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.ndimage
import scipy.stats
from PIL import Image, ImageEnhance

from jaxcl import augment

RNG = np.random.default_rng(0)
UINT8 = RNG.integers(0, 256, size=(16, 20, 3), dtype=np.uint8)
IMAGE = UINT8.astype(np.float32) / 255.0


def _pil(x: np.ndarray) -> Image.Image:
    return Image.fromarray(np.asarray(np.round(x * 255), np.uint8))


def _from_pil(img: Image.Image) -> np.ndarray:
    return np.asarray(img, np.float32) / 255.0


# --------------------------------------------------------------------------------------------
# Colour, against PIL (uint8 rounding: within 2/255)


@pytest.mark.parametrize("factor", [0.0, 0.4, 1.0, 1.7])
@pytest.mark.parametrize(
    "ours, pil",
    [
        (augment.adjust_brightness, ImageEnhance.Brightness),
        (augment.adjust_contrast, ImageEnhance.Contrast),
        (augment.adjust_saturation, ImageEnhance.Color),
    ],
)
def test_enhancements_match_pil(ours, pil, factor):
    want = _from_pil(pil(_pil(IMAGE)).enhance(factor))
    got = np.asarray(jax.jit(ours)(IMAGE, factor))
    np.testing.assert_allclose(got, want, atol=2.5 / 255)


def test_grayscale_matches_pil_and_repeats_channels():
    want = _from_pil(_pil(IMAGE).convert("L"))
    got = np.asarray(augment.rgb_to_grayscale(IMAGE, channels=1))[..., 0]
    np.testing.assert_allclose(got, want, atol=1 / 255)
    three = np.asarray(augment.rgb_to_grayscale(IMAGE, channels=3))
    np.testing.assert_array_equal(three[..., 0], three[..., 2])


@pytest.mark.parametrize("delta", [-0.5, -0.2, 0.0, 0.13, 0.5])
def test_hue_matches_colorsys(delta):
    want = np.empty_like(IMAGE)
    for idx in np.ndindex(IMAGE.shape[:2]):
        h, s, v = colorsys.rgb_to_hsv(*map(float, IMAGE[idx]))
        want[idx] = colorsys.hsv_to_rgb((h + delta) % 1.0, s, v)
    got = np.asarray(jax.jit(augment.adjust_hue)(IMAGE, delta))
    np.testing.assert_allclose(got, want, atol=2e-6)


def test_gray_images_pass_saturation_hue_and_grayscale_unchanged():
    gray = IMAGE[..., :1]
    for fn in (
        lambda x: augment.adjust_saturation(x, 1.7),
        lambda x: augment.adjust_hue(x, 0.3),
        augment.rgb_to_grayscale,
    ):
        np.testing.assert_array_equal(np.asarray(fn(gray)), gray)


def test_solarize_inverts_pixels_at_or_above_the_threshold():
    got = np.asarray(augment.solarize(IMAGE, 0.5))
    np.testing.assert_array_equal(got, np.where(IMAGE >= 0.5, 1 - IMAGE, IMAGE))


def _np_jitter(x, params):
    """The four adjustments in NumPy, in the given order (torchvision's formulas)."""
    luma = np.asarray(augment.LUMA, np.float32)

    def gray(y):
        return (y * luma).sum(-1, keepdims=True)

    ops = {
        0: lambda y, f: np.clip(f * y, 0, 1),
        1: lambda y, f: np.clip(f * y + (1 - f) * gray(y).mean(), 0, 1),
        2: lambda y, f: np.clip(f * y + (1 - f) * gray(y), 0, 1),
        3: lambda y, d: np.asarray(
            [
                [colorsys.hsv_to_rgb((h + d) % 1, s, v) for h, s, v in row]
                for row in [[colorsys.rgb_to_hsv(*map(float, p)) for p in r] for r in y]
            ],
            np.float32,
        ),
    }
    names = ("brightness", "contrast", "saturation", "hue")
    for i in np.asarray(params["order"]):
        x = ops[int(i)](x, float(params[names[int(i)]]))
    return x


def test_color_jitter_applies_its_parameters_in_their_order():
    kw = dict(brightness=0.8, contrast=0.8, saturation=0.8, hue=0.2)
    for seed in range(4):
        params = augment.color_jitter_params(jax.random.key(seed), **kw)
        got = np.asarray(augment.apply_color_jitter(jnp.asarray(IMAGE), params))
        np.testing.assert_allclose(got, _np_jitter(IMAGE, params), atol=1e-5)
    # The order matters: reversed, another image.
    params = dict(augment.color_jitter_params(jax.random.key(0), **kw))
    flipped = dict(params, order=params["order"][::-1])
    a = augment.apply_color_jitter(jnp.asarray(IMAGE), params)
    b = augment.apply_color_jitter(jnp.asarray(IMAGE), flipped)
    assert float(jnp.abs(a - b).max()) > 1e-3


def test_color_jitter_parameter_distribution():
    keys = jax.random.split(jax.random.key(1), 4800)
    p = jax.vmap(
        lambda k: augment.color_jitter_params(
            k, brightness=0.8, contrast=0.4, saturation=1.5, hue=0.2
        )
    )(keys)
    for name, lo, hi in [
        ("brightness", 0.2, 1.8),
        ("contrast", 0.6, 1.4),
        ("saturation", 0.0, 2.5),
        ("hue", -0.2, 0.2),
    ]:
        x = np.asarray(p[name])
        assert lo <= x.min() and x.max() <= hi, name
        # Uniform on [lo, hi] (saturation: max(0, 1 - 1.5) = 0).
        assert scipy.stats.kstest(x, "uniform", args=(lo, hi - lo)).pvalue > 1e-3, name
    orders = [tuple(o) for o in np.asarray(p["order"])]
    counts = np.array([orders.count(o) for o in set(orders)])
    assert len(counts) == 24 and counts.min() > 140 and counts.max() < 260, counts


@pytest.mark.parametrize(
    "fn, p",
    [
        (lambda k, x: augment.random_grayscale(k, x, p=0.2), 0.2),
        (lambda k, x: augment.color_jitter(k, x, brightness=0.8, p=0.8), 0.8),
        (lambda k, x: augment.random_flip(k, x), 0.5),
        (lambda k, x: augment.random_solarize(k, x, p=0.2), 0.2),
        (lambda k, x: augment.random_gaussian_blur(k, x, p=0.1), 0.1),
    ],
)
def test_random_transformations_apply_with_their_probability(fn, p):
    n = 2000
    out = jax.jit(jax.vmap(fn, in_axes=(0, None)))(jax.random.split(jax.random.key(2), n), IMAGE)
    changed = np.asarray(jnp.any(out != IMAGE, axis=(1, 2, 3)))
    assert abs(changed.mean() - p) < 4 * math.sqrt(p * (1 - p) / n), changed.mean()


# --------------------------------------------------------------------------------------------
# Blur, against scipy.ndimage


@pytest.mark.parametrize("sigma, size", [(0.1, 3), (0.7, 3), (1.3, 5), (2.0, 7)])
def test_gaussian_blur_matches_scipy(sigma, size):
    radius = size // 2
    want = scipy.ndimage.gaussian_filter(
        IMAGE.astype(np.float64), sigma=(sigma, sigma, 0), mode="mirror", truncate=radius / sigma
    )
    got = np.asarray(jax.jit(augment.gaussian_blur, static_argnames="kernel_size")(
        IMAGE, sigma, kernel_size=size
    ))  # fmt: skip
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_default_kernel_is_a_tenth_of_the_side_and_odd():
    # SimCLR's data_util: kernel = side // 10, radius = kernel // 2, size = 2 radius + 1
    sides = (224, 256, 96, 64, 32, 28)
    assert [augment.default_kernel_size(s) for s in sides] == [23, 25, 9, 7, 3, 3]


# --------------------------------------------------------------------------------------------
# Crop and flip


def _np_resized_crop(x, box, out_h, out_w):
    """Bilinear at pixel centres, clamped at the image's edges (PyTorch's interpolate with
    align_corners=False and no antialiasing), by a loop over output pixels."""
    top, left, h, w = box
    out = np.zeros((out_h, out_w, x.shape[2]))
    for i in range(out_h):
        for j in range(out_w):
            y = np.clip(top + (i + 0.5) * h / out_h - 0.5, 0, x.shape[0] - 1)
            z = np.clip(left + (j + 0.5) * w / out_w - 0.5, 0, x.shape[1] - 1)
            y0, z0 = int(np.floor(y)), int(np.floor(z))
            y1, z1 = min(y0 + 1, x.shape[0] - 1), min(z0 + 1, x.shape[1] - 1)
            fy, fz = y - y0, z - z0
            out[i, j] = (
                (1 - fy) * (1 - fz) * x[y0, z0]
                + (1 - fy) * fz * x[y0, z1]
                + fy * (1 - fz) * x[y1, z0]
                + fy * fz * x[y1, z1]
            )
    return out


@pytest.mark.parametrize(
    "box, size",
    [
        ((0, 0, 16, 20), (16, 20)),  # the whole image, same size: the image itself
        ((3, 5, 7, 9), (16, 16)),  # upsampling
        ((0, 0, 16, 20), (8, 10)),  # downsampling by 2
        ((2, 1, 13, 17), (5, 7)),  # downsampling by odd factors
        ((9, 0, 7, 20), (12, 12)),  # at the bottom edge
    ],
)
def test_resized_crop_matches_a_numpy_bilinear_reference(box, size):
    got = np.asarray(jax.jit(augment.resized_crop, static_argnames="size")(IMAGE, box, size))
    np.testing.assert_allclose(got, _np_resized_crop(IMAGE, box, *size), atol=1e-5)


def _torchvision_boxes(rng, n, height, width, scale, ratio):
    """torchvision's RandomResizedCrop.get_params, written out in NumPy."""
    boxes = []
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(n):
        for _ in range(10):
            target = area * rng.uniform(*scale)
            aspect = math.exp(rng.uniform(*log_ratio))
            w = int(round(math.sqrt(target * aspect)))
            h = int(round(math.sqrt(target / aspect)))
            if 0 < w <= width and 0 < h <= height:
                boxes.append(
                    (rng.integers(0, height - h + 1), rng.integers(0, width - w + 1), h, w)
                )
                break
        else:
            in_ratio = width / height
            if in_ratio < min(ratio):
                w, h = width, int(round(width / min(ratio)))
            elif in_ratio > max(ratio):
                h, w = height, int(round(height * max(ratio)))
            else:
                w, h = width, height
            boxes.append(((height - h) // 2, (width - w) // 2, h, w))
    return np.array(boxes)


@pytest.mark.parametrize("height, width", [(32, 32), (24, 40)])
def test_crop_box_follows_torchvisions_distribution(height, width):
    n, scale, ratio = 4000, (0.08, 1.0), (3 / 4, 4 / 3)
    ours = np.asarray(
        jax.vmap(lambda k: augment.crop_box(k, height, width, scale=scale, ratio=ratio))(
            jax.random.split(jax.random.key(3), n)
        )
    )
    ref = _torchvision_boxes(np.random.default_rng(3), n, height, width, scale, ratio)
    top, left, h, w = ours.T
    assert (top >= 0).all() and (left >= 0).all() and (h >= 1).all() and (w >= 1).all()
    assert (top + h <= height).all() and (left + w <= width).all()
    for name, a, b in [
        ("area", h * w, ref[:, 2] * ref[:, 3]),
        ("log ratio", np.log(w / h), np.log(ref[:, 3] / ref[:, 2])),
        ("top", top / (height - h + 1), ref[:, 0] / (height - ref[:, 2] + 1)),
        ("left", left / (width - w + 1), ref[:, 1] / (width - ref[:, 3] + 1)),
    ]:
        assert scipy.stats.ks_2samp(a, b).pvalue > 1e-3, name


def test_crop_box_falls_back_to_a_central_crop_of_admissible_ratio():
    # A 4 x 64 strip: no crop of ratio <= 4/3 and area >= 90% fits in 10 tries.
    boxes = np.asarray(
        jax.vmap(lambda k: augment.crop_box(k, 4, 64, scale=(0.9, 1.0)))(
            jax.random.split(jax.random.key(4), 50)
        )
    )
    # width round(4 * 4/3) = 5, centred: left (64 - 5) // 2 = 29.
    np.testing.assert_array_equal(boxes, np.tile([0, 29, 4, 5], (50, 1)))


def test_random_flip_mirrors_left_to_right():
    keys = jax.random.split(jax.random.key(5), 64)
    out = np.asarray(jax.vmap(augment.random_flip, in_axes=(0, None))(keys, IMAGE))
    assert not np.array_equal(IMAGE, IMAGE[:, ::-1])
    mirrored = [np.array_equal(o, IMAGE[:, ::-1]) for o in out]
    for o, m in zip(out, mirrored, strict=True):
        assert m or np.array_equal(o, IMAGE)
    assert 0 < sum(mirrored) < len(out)  # both outcomes occur (p = 0.5 over 64 keys)


# --------------------------------------------------------------------------------------------
# Views: keys, batches, shapes


@pytest.mark.parametrize("shape", [(32, 32, 3), (28, 28, 1), (24, 40, 3)])
def test_views_run_under_jit_on_any_image_shape(shape):
    image = jnp.asarray(RNG.uniform(size=shape), jnp.float32)
    simclr = jax.jit(functools.partial(augment.simclr_view, size=16, blur_p=0.5))
    byol = jax.jit(functools.partial(augment.byol_view, size=(12, 20), solarize_p=0.5))
    a = simclr(jax.random.key(0), image)
    b = byol(jax.random.key(0), image)
    assert a.shape == (16, 16, shape[2]) and b.shape == (12, 20, shape[2])
    for v in (a, b):
        assert v.dtype == jnp.float32 and float(v.min()) >= 0 and float(v.max()) <= 1


def test_same_key_same_view_and_one_key_per_example_and_view():
    images = jnp.asarray(RNG.uniform(size=(6, 32, 32, 3)), jnp.float32)
    view = functools.partial(augment.simclr_view, size=32, strength=0.5)
    key = jax.random.key(7)
    a1, b1 = jax.jit(lambda k, x: augment.batch_views(k, x, view))(key, images)
    a2, b2 = augment.batch_views(key, images, view)
    np.testing.assert_allclose(np.asarray(a1), np.asarray(a2), atol=1e-5)  # jit fuses
    np.testing.assert_allclose(np.asarray(b1), np.asarray(b2), atol=1e-5)
    keys = jax.random.split(key, (2, 6))
    # View v of image i depends on keys[v, i] and images[i] alone.
    np.testing.assert_allclose(np.asarray(view(keys[1, 4], images[4])), b1[4], atol=1e-5)
    assert float(jnp.abs(a1 - b1).max()) > 0.1  # the two views differ
    assert float(jnp.abs(a1[0] - a1[1]).max()) > 0.1


def test_byol_views_settings():
    assert augment.BYOL_VIEWS == (
        {"blur_p": 1.0, "solarize_p": 0.0},
        {"blur_p": 0.1, "solarize_p": 0.2},
    )
    images = jnp.asarray(RNG.uniform(size=(4, 32, 32, 3)), jnp.float32)
    view = functools.partial(augment.byol_view, size=32)
    views = jax.jit(lambda k, x: augment.batch_views(k, x, view, augment.BYOL_VIEWS))
    a, b = views(jax.random.key(0), images)
    assert a.shape == b.shape == images.shape


def test_to_unit_range():
    np.testing.assert_allclose(np.asarray(augment.to_unit_range(UINT8)), IMAGE)


# --------------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: augment.adjust_brightness(np.zeros((4, 4, 2), np.float32), 1.0), "1 .* or 3"),
        (lambda: augment.adjust_hue(IMAGE, 0.7), r"`delta` must lie in \[-0.5, 0.5\]"),
        (lambda: augment.adjust_contrast(IMAGE, -1.0), "`factor` must be a finite number >= 0"),
        (lambda: augment.color_jitter(jax.random.split(jax.random.key(0), 2), IMAGE), "batch"),
        (lambda: augment.random_flip(jax.random.key(0), IMAGE[None]), "rank 3"),
        (lambda: augment.random_resized_crop(jax.random.key(0), IMAGE, size=0), "`size`"),
        (lambda: augment.crop_box(jax.random.key(0), 8, 8, scale=(0.5, 0.1)), "`scale`"),
        (lambda: augment.gaussian_blur(IMAGE, 1.0, kernel_size=4), "odd"),
        (
            lambda: augment.random_gaussian_blur(jax.random.key(0), IMAGE, sigma=(0.0, 1.0)),
            r"`sigma` must satisfy 0.0 < min <= max",
        ),
        (
            lambda: jax.jit(lambda s: augment.crop_box(jax.random.key(0), 8, 8, scale=(s, 1.0)))(
                0.5
            ),
            "`scale` must be a pair of concrete numbers",
        ),
        (lambda: augment.gaussian_blur(IMAGE, 0.0, kernel_size=3), "`sigma`"),
        (lambda: augment.random_grayscale(jax.random.key(0), IMAGE, p=1.5), "`p`"),
        (lambda: augment.adjust_saturation(UINT8, 1.0), "floating dtype"),
        # A box outside the image (or empty) used to crop silently into black.
        (lambda: augment.resized_crop(IMAGE, [6, 6, 40, 40], 4), r"`box` .* must lie inside"),
        (lambda: augment.resized_crop(IMAGE, [0, 0, 0, 4], 4), r"height and width >= 1"),
        (lambda: augment.resized_crop(IMAGE, [-1, 0, 4, 4], 4), r"must lie inside"),
        # hue = 0.2 s: the error names strength, not the hue the user never gave.
        (
            lambda: augment.simclr_view(jax.random.key(0), IMAGE, size=8, strength=3.0),
            r"simclr_view: `strength` must lie in \[0.0, 2.5\], got 3.0",
        ),
        # The views' own arguments are named as the caller gave them, not as the inner
        # transformation (crop_box's `scale`, random_gaussian_blur's `p`) calls them.
        (
            lambda: augment.simclr_view(jax.random.key(0), IMAGE, size=8, crop_scale=(0.5, 0.2)),
            r"simclr_view: `crop_scale` must satisfy",
        ),
        (
            lambda: augment.simclr_view(jax.random.key(0), IMAGE, size=8, blur_p=1.5),
            r"simclr_view: `blur_p` must lie in \[0.0, 1.0\], got 1.5",
        ),
        (
            lambda: augment.byol_view(jax.random.key(0), IMAGE, size=8, solarize_p=2.0),
            r"byol_view: `solarize_p` must lie in \[0.0, 1.0\], got 2.0",
        ),
        (
            lambda: augment.byol_view(jax.random.key(0), IMAGE, size=8, blur_p=-0.1),
            r"byol_view: `blur_p` must lie in",
        ),
        (lambda: augment.simclr_view(jax.random.key(0), IMAGE, size=0), r"simclr_view: `size`"),
        # crop=False: the image must already be `size` (it was returned at its own size).
        (
            lambda: augment.simclr_view(jax.random.key(0), IMAGE, size=4, crop=False),
            r"simclr_view: crop=False takes an image already cropped to `size` = \(4, 4\)",
        ),
        (
            lambda: augment.byol_view(jax.random.key(0), IMAGE, size=(8, 4), crop=False),
            r"byol_view: crop=False .* `size` = \(8, 4\)",
        ),
    ],
)
def test_bad_arguments_name_the_function_and_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
