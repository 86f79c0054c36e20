"""Tests for jaxcl.mixers.

References are NumPy re-computations. Where a test needs the random draws themselves
(partner, lambda, mask, choice, box), it re-derives them from the same key by calling
jax.random the way each module documents; other tests check invariants that need no
knowledge of the draws (a linear view lies on a segment to another sample, a binary view
copies entries of one other sample, a CutMix box is a hyperrectangle).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcl import mixers

# Few distinct shapes: every new shape costs XLA compilations, and the file must stay fast.
FEATURES, IMAGES, SEQUENCES = (8, 5), (6, 4, 3, 2), (7, 9)  # [N, F], [N, H, W, C], [N, L]
SHAPES = [FEATURES, IMAGES, SEQUENCES]
LARGE = (64, 64)  # for frequencies


def _data(shape, seed=0, *, kind="normal"):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    if kind == "positive":
        x = np.abs(x) + 0.1
    elif kind == "signed_with_zeros":
        x[rng.random(size=shape) < 0.3] = 0.0
    return x.astype(np.float32)


def _per_sample(v, ndim):
    return np.asarray(v).reshape((-1,) + (1,) * (ndim - 1))


# Re-derivations of the documented key protocol.


def _partners_ref(key, n):
    shift = np.asarray(jax.random.randint(key, (n,), 1, n))
    return (np.arange(n) + shift) % n


def _lam_ref(key, n, alpha):
    return np.asarray(jax.random.uniform(key, (n,), jnp.float32, minval=alpha, maxval=1.0))


def _geometric_ref(x, xp, lam):
    x, xp, lam = (np.asarray(a, np.float64) for a in (x, xp, lam))
    return np.sign(x) * np.abs(x) ** lam * np.abs(xp) ** (1.0 - lam)


# DACL: linear mixup.


@pytest.mark.parametrize("shape", SHAPES)
def test_linear_mixup_matches_reference(shape):
    key, alpha = jax.random.key(1), 0.6
    x = _data(shape)
    out = mixers.linear_mixup(key, x, alpha=alpha)

    partner_key, lam_key = jax.random.split(key)
    partners = _partners_ref(partner_key, shape[0])
    lam = _lam_ref(lam_key, shape[0], alpha)
    assert np.all(partners != np.arange(shape[0]))
    assert np.all((lam >= alpha) & (lam <= 1.0))
    lam_b = _per_sample(lam, x.ndim)
    expected = lam_b * x + (1.0 - lam_b) * x[partners]
    assert out.shape == x.shape and out.dtype == x.dtype
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_linear_mixup_lies_on_a_segment_to_another_sample():
    # No knowledge of the draws: every view must be lam*x_i + (1-lam)*x_j for some j != i
    # and lam in [alpha, 1].
    alpha, x = 0.3, _data(FEATURES, seed=2).astype(np.float64)
    for seed in range(5):
        out = np.asarray(mixers.linear_mixup(jax.random.key(seed), x, alpha=alpha), np.float64)
        for i in range(len(x)):
            best = None
            for j in range(len(x)):
                if j == i:
                    continue
                d = x[i] - x[j]
                t = np.dot(out[i] - x[j], d) / np.dot(d, d)
                residual = np.linalg.norm(out[i] - x[j] - t * d)
                if best is None or residual < best[0]:
                    best = (residual, t)
            assert best[0] < 1e-5
            assert alpha - 1e-6 <= best[1] <= 1.0 + 1e-6


def test_dacl_partner_is_uniform_over_the_other_samples():
    # One-hot rows make the partner readable from the view: row i is lam*e_i + (1-lam)*e_j.
    n, draws = 4, 300
    x = np.eye(n, dtype=np.float32)
    keys = jax.random.split(jax.random.key(3), draws)
    views = np.asarray(jax.jit(jax.vmap(lambda k: mixers.linear_mixup(k, x, alpha=0.0)))(keys))
    off_diagonal = views * (1.0 - np.eye(n))
    assert np.all(off_diagonal.max(axis=-1) > 0), "a sample was mixed with itself"
    partners = off_diagonal.argmax(axis=-1)  # [draws, n]
    counts = np.zeros((n, n))
    np.add.at(counts, (np.broadcast_to(np.arange(n), partners.shape), partners), 1)
    assert np.all(np.diag(counts) == 0)
    expected = draws / (n - 1)
    off = counts[~np.eye(n, dtype=bool)]
    assert np.all(np.abs(off - expected) < 0.3 * expected), counts


def test_linear_mixup_gradient_matches_reference():
    key, alpha = jax.random.key(4), 0.5
    x = _data(FEATURES, seed=4)
    w = _data(FEATURES, seed=5)
    grad = jax.jit(jax.grad(lambda x: jnp.sum(w * mixers.linear_mixup(key, x, alpha=alpha))))(x)

    partner_key, lam_key = jax.random.split(key)
    partners = _partners_ref(partner_key, FEATURES[0])
    lam = _lam_ref(lam_key, FEATURES[0], alpha)[:, None]
    expected = lam * w
    np.add.at(expected, partners, (1.0 - lam) * w)
    np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-6)


# DACL: geometric mixup.


@pytest.mark.parametrize("shape", SHAPES)
def test_geometric_mixup_on_positive_data_is_eq5(shape):
    key, alpha = jax.random.key(6), 0.5
    x = _data(shape, kind="positive")
    out = mixers.geometric_mixup(key, x, alpha=alpha)

    partner_key, lam_key = jax.random.split(key)
    partners = _partners_ref(partner_key, shape[0])
    lam = _per_sample(_lam_ref(lam_key, shape[0], alpha), x.ndim).astype(np.float64)
    expected = x.astype(np.float64) ** lam * x[partners].astype(np.float64) ** (1.0 - lam)
    assert out.shape == x.shape and out.dtype == x.dtype
    np.testing.assert_allclose(out, expected, rtol=2e-6)


def test_geometric_mixup_negative_inputs_keep_anchor_sign():
    key, alpha = jax.random.key(7), 0.2
    x = _data(FEATURES, seed=7, kind="signed_with_zeros")
    out = np.asarray(mixers.geometric_mixup(key, x, alpha=alpha))

    partner_key, lam_key = jax.random.split(key)
    partners = _partners_ref(partner_key, FEATURES[0])
    lam = _lam_ref(lam_key, FEATURES[0], alpha)[:, None]
    expected = _geometric_ref(x, x[partners], lam)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, expected, rtol=2e-6, atol=1e-7)
    # Zero anchors stay zero; elsewhere the view has the anchor's sign (or is 0 where the
    # partner entry is 0).
    assert np.all(out[x == 0] == 0)
    nonzero = out != 0
    assert np.all(np.sign(out[nonzero]) == np.sign(x[nonzero]))
    assert np.any(x < 0) and np.any((x < 0) & nonzero)


def test_geometric_mixup_alpha_one_returns_x_even_against_zero_partners():
    # lam = 1 gives x**1 * partner**0 with 0**0 = 1, so the view is x exactly.
    x = _data(FEATURES, seed=8, kind="signed_with_zeros")
    out = mixers.geometric_mixup(jax.random.key(8), x, alpha=1.0)
    np.testing.assert_array_equal(out, x)


def test_geometric_mixup_gradient_matches_reference_and_is_finite_at_zeros():
    key, alpha = jax.random.key(9), 0.3
    x = _data(FEATURES, seed=9, kind="signed_with_zeros")
    w = _data(FEATURES, seed=10)
    fn = lambda x: jnp.sum(w * mixers.geometric_mixup(key, x, alpha=alpha))
    grad = np.asarray(jax.jit(jax.grad(fn))(x))
    assert np.all(np.isfinite(grad))

    # d/dx [sign(x)|x|^lam |p|^(1-lam)] = lam*out/x and d/dp = (1-lam)*out/p, defined 0 at 0.
    partner_key, lam_key = jax.random.split(key)
    partners = _partners_ref(partner_key, FEATURES[0])
    lam = _lam_ref(lam_key, FEATURES[0], alpha)[:, None].astype(np.float64)
    xd, xp = x.astype(np.float64), x[partners].astype(np.float64)
    out = _geometric_ref(xd, xp, lam)
    safe = lambda a: np.where(a == 0, 1.0, a)
    expected = np.where(xd == 0, 0.0, lam * w * out / safe(xd))
    np.add.at(expected, partners, np.where(xp == 0, 0.0, (1.0 - lam) * w * out / safe(xp)))
    np.testing.assert_allclose(grad, expected, rtol=1e-4, atol=1e-5)


# DACL: binary mixup.


@pytest.mark.parametrize("shape", SHAPES)
def test_binary_mixup_matches_reference(shape):
    key, rho = jax.random.key(11), 0.7
    x = _data(shape, seed=11)
    out = mixers.binary_mixup(key, x, rho=rho)

    partner_key, mask_key = jax.random.split(key)
    partners = _partners_ref(partner_key, shape[0])
    keep = np.asarray(jax.random.bernoulli(mask_key, rho, shape))
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, np.where(keep, x, x[partners]))


@pytest.mark.parametrize("rho", [0.1, 0.5, 0.9])
def test_binary_mixup_copies_entries_of_one_other_sample_keeping_rho(rho):
    x = _data(LARGE, seed=12)  # continuous values: no accidental equalities
    out = np.asarray(mixers.binary_mixup(jax.random.key(12), x, rho=rho))
    kept = out == x
    for i in range(len(x)):
        swapped = ~kept[i]
        if swapped.any():
            sources = [j for j in range(len(x)) if np.array_equal(out[i, swapped], x[j, swapped])]
            assert sources and i not in sources
    assert abs(kept.mean() - rho) < 0.03


# DACL+.


def _dacl_plus_ref(key, x, alpha, rho, kind_key=None):
    n = x.shape[0]
    partner_key, lam_key, mask_key, own_kind_key = jax.random.split(key, 4)
    kinds = np.asarray(
        jax.random.randint(own_kind_key if kind_key is None else kind_key, (n,), 0, 3)
    )
    partners = _partners_ref(partner_key, n)
    lam = _per_sample(_lam_ref(lam_key, n, alpha), x.ndim).astype(np.float64)
    keep = np.asarray(jax.random.bernoulli(mask_key, rho, x.shape))
    xd, xp = x.astype(np.float64), x[partners].astype(np.float64)
    candidates = [lam * xd + (1 - lam) * xp, _geometric_ref(xd, xp, lam), np.where(keep, xd, xp)]
    k = _per_sample(kinds, x.ndim)
    return np.choose(np.broadcast_to(k, x.shape), candidates), kinds


@pytest.mark.parametrize("shape", SHAPES)
def test_dacl_plus_matches_reference(shape):
    key = jax.random.key(13)
    x = _data(shape, seed=13, kind="signed_with_zeros")
    out = mixers.dacl_plus_mixup(key, x, alpha=0.5, rho=0.5)
    expected, _ = _dacl_plus_ref(key, x, 0.5, 0.5)
    np.testing.assert_allclose(out, expected, rtol=2e-6, atol=1e-6)


def test_dacl_plus_uses_each_kind_a_third_of_the_time():
    # Classify each view knowing only its partner: binary rows copy entries of x or of the
    # partner exactly, linear rows are t*x + (1-t)*p with one t per row, geometric rows are
    # neither (up to the rare lam ~ 1, where geometric and linear views coincide).
    n, alpha, rho = 600, 0.0, 0.5
    key = jax.random.key(14)
    x = _data((n, 6), seed=14, kind="positive")
    out = np.asarray(mixers.dacl_plus_mixup(key, x, alpha=alpha, rho=rho), np.float64)
    partners = _partners_ref(jax.random.split(key, 4)[0], n)
    xd = x.astype(np.float64)
    xp = xd[partners]
    binary = np.all((out == xd) | (out == xp), axis=1)
    d = xd - xp
    t = np.sum((out - xp) * d, axis=1, keepdims=True) / np.sum(d * d, axis=1, keepdims=True)
    residual = np.max(np.abs(out - xp - t * d), axis=1)
    linear = ~binary & (residual < 1e-5)
    geometric = ~binary & ~linear
    fractions = np.array([linear.mean(), geometric.mean(), binary.mean()])
    np.testing.assert_allclose(fractions, 1 / 3, atol=0.06)
    _, kinds = _dacl_plus_ref(key, x, alpha, rho)
    agreement = np.mean(np.select([linear, geometric, binary], [0, 1, 2]) == kinds)
    assert agreement > 0.99


def test_dacl_plus_kind_key_shares_the_choice_between_views():
    x = _data((600, 6), seed=15, kind="positive")
    kind_key, k1, k2 = jax.random.split(jax.random.key(15), 3)
    v1 = mixers.dacl_plus_mixup(k1, x, alpha=0.5, rho=0.5, kind_key=kind_key)
    v2 = mixers.dacl_plus_mixup(k2, x, alpha=0.5, rho=0.5, kind_key=kind_key)
    e1, kinds1 = _dacl_plus_ref(k1, x, 0.5, 0.5, kind_key)
    e2, kinds2 = _dacl_plus_ref(k2, x, 0.5, 0.5, kind_key)
    np.testing.assert_array_equal(kinds1, kinds2)
    assert len(set(kinds1.tolist())) == 3
    np.testing.assert_allclose(v1, e1, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(v2, e2, rtol=2e-6, atol=1e-6)
    # Without kind_key the two views draw their choices independently.
    _, own1 = _dacl_plus_ref(k1, x, 0.5, 0.5)
    _, own2 = _dacl_plus_ref(k2, x, 0.5, 0.5)
    assert np.any(own1 != own2)


def test_dacl_plus_gradient_is_finite_with_zeros_and_negatives():
    x = _data(FEATURES, seed=16, kind="signed_with_zeros")
    fn = lambda x: jnp.sum(
        jnp.sin(mixers.dacl_plus_mixup(jax.random.key(16), x, alpha=0.0, rho=0.5))
    )
    grad = jax.jit(jax.grad(fn))(x)
    assert np.all(np.isfinite(grad)) and np.any(grad != 0)


# Gaussian noise.


@pytest.mark.parametrize("shape", SHAPES)
def test_gaussian_noise_matches_reference(shape):
    key, scale = jax.random.key(17), 0.3
    x = _data(shape, seed=17)
    out = mixers.gaussian_noise(key, x, scale=scale)
    expected = x + scale * np.asarray(jax.random.normal(key, shape, jnp.float32))
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_gaussian_noise_statistics_and_zero_scale():
    x = _data(LARGE, seed=18)
    delta = (np.asarray(mixers.gaussian_noise(jax.random.key(18), x, scale=0.5)) - x) / 0.5
    assert abs(delta.mean()) < 0.03 and abs(delta.std() - 1.0) < 0.03
    np.testing.assert_array_equal(mixers.gaussian_noise(jax.random.key(18), x, scale=0.0), x)


# i-Mix mixup.


@pytest.mark.parametrize("shape", SHAPES)
def test_imix_mixup_matches_reference(shape):
    key, alpha = jax.random.key(19), 1.0
    x = _data(shape, seed=19)
    x_mix, lam, perm = mixers.imix_mixup(key, x, alpha=alpha)

    lam_key, perm_key = jax.random.split(key)
    lam_ref = np.asarray(jax.random.beta(lam_key, alpha, alpha, dtype=jnp.float32))
    perm_ref = np.asarray(jax.random.permutation(perm_key, shape[0]))
    assert lam.shape == () and lam.dtype == jnp.float32 and float(lam) == float(lam_ref)
    assert perm.dtype == jnp.int32 and perm.shape == (shape[0],)
    np.testing.assert_array_equal(perm, perm_ref)
    np.testing.assert_array_equal(np.sort(perm), np.arange(shape[0]))
    lam64 = float(lam)
    np.testing.assert_allclose(x_mix, lam64 * x + (1 - lam64) * x[np.asarray(perm)], atol=1e-6)


def test_imix_lambda_follows_beta():
    keys = jax.random.split(jax.random.key(20), 2000)
    x = _data(FEATURES, seed=20)
    draw = jax.jit(jax.vmap(lambda k, alpha: mixers.imix_mixup(k, x, alpha=alpha)[1], (0, None)))
    lam_1 = np.asarray(draw(keys, 1.0))
    assert np.all((lam_1 > 0) & (lam_1 < 1))
    # Beta(1, 1) is uniform: mean 1/2, variance 1/12.
    assert abs(lam_1.mean() - 0.5) < 0.02 and abs(lam_1.var() - 1 / 12) < 0.01
    # Beta(a, a) has variance 1 / (4 (2a + 1)): 5/28 for a = 0.2, mass piled near 0 and 1.
    lam_02 = np.asarray(draw(keys, 0.2))
    assert abs(lam_02.var() - 5 / 28) < 0.01


@pytest.mark.parametrize("shape", SHAPES)
def test_imix_mixup_per_sample_is_the_official_codes_folded_coefficient(shape):
    # kibok90/imix's `mixup`: lam_i ~ Beta(alpha, alpha) for each sample, max(lam_i, 1 - lam_i).
    key, alpha = jax.random.key(21), 2.0
    x = _data(shape, seed=21)
    x_mix, lam, perm = mixers.imix_mixup(key, x, alpha=alpha, per_sample=True)
    lam_key, perm_key = jax.random.split(key)
    raw = np.asarray(jax.random.beta(lam_key, alpha, alpha, (shape[0],), dtype=jnp.float32))
    np.testing.assert_array_equal(lam, np.maximum(raw, 1 - raw))
    np.testing.assert_array_equal(perm, np.asarray(jax.random.permutation(perm_key, shape[0])))
    lam64 = np.asarray(lam, np.float64).reshape((-1,) + (1,) * (len(shape) - 1))
    want = lam64 * x + (1 - lam64) * x[np.asarray(perm)]
    np.testing.assert_allclose(x_mix, want, atol=1e-6)


def test_imix_per_sample_lambda_follows_the_folded_beta():
    x = _data((4000, 3), seed=22)
    lam = np.asarray(mixers.imix_mixup(jax.random.key(22), x, alpha=1.0, per_sample=True)[1])
    assert lam.shape == (4000,) and lam.min() >= 0.5 and lam.max() <= 1.0
    # max(U, 1 - U) for U uniform is uniform on [0.5, 1]: mean 3/4, variance 1/48; the draws
    # differ from sample to sample.
    assert abs(lam.mean() - 0.75) < 0.01 and abs(lam.var() - 1 / 48) < 0.003
    with pytest.raises(ValueError, match=r"imix_mixup: `per_sample` must be a bool"):
        mixers.imix_mixup(jax.random.key(0), x, alpha=1.0, per_sample="yes")


# CutMix.


def _box_ref(key, alpha, shape, axes):
    lam_key, perm_key, centre_key = jax.random.split(key, 3)
    lam0 = float(jax.random.beta(lam_key, alpha, alpha, dtype=jnp.float32))
    sizes = [shape[a] for a in axes]
    centres = np.asarray(jax.random.randint(centre_key, (len(axes),), 0, jnp.asarray(sizes)))
    mask = np.ones(shape[1:], bool)
    for axis, size, centre in zip(axes, sizes, centres, strict=True):
        side = math.floor(size * (1.0 - lam0) ** (1.0 / len(axes)))
        low, high = np.clip([centre - side // 2, centre - side // 2 + side], 0, size)
        position = np.arange(size).reshape([-1 if a == axis else 1 for a in range(1, len(shape))])
        mask &= (position >= low) & (position < high)
    return mask, np.asarray(jax.random.permutation(perm_key, shape[0]))


@pytest.mark.parametrize(
    "shape, axes",
    [(IMAGES, (1, 2)), (SEQUENCES, (1,)), (IMAGES, (-3, -2, -1)), (IMAGES, (2,))],
)
def test_cutmix_box_comes_from_partner_and_lambda_is_kept_fraction(shape, axes):
    x = _data(shape, seed=21)
    ndim = len(shape)
    sample_axes = tuple(a % ndim for a in axes)
    saw_clipped_box = False
    for seed in range(8):
        key = jax.random.key(seed)
        x_mix, lam, perm = mixers.cutmix(key, x, alpha=1.0, axes=axes)
        x_mix, perm = np.asarray(x_mix), np.asarray(perm)
        box, perm_ref = _box_ref(key, 1.0, shape, sample_axes)
        np.testing.assert_array_equal(perm, perm_ref)
        np.testing.assert_array_equal(x_mix, np.where(box[None], x[perm], x))
        # The box is the same for every sample and is a hyperrectangle over `axes` only.
        movable = [i for i in range(shape[0]) if perm[i] != i]
        assert movable
        observed = x_mix[movable[0]] != x[movable[0]]
        np.testing.assert_array_equal(observed, box)
        assert float(lam) == pytest.approx(1.0 - box.mean(), abs=1e-6)
        lam0 = float(jax.random.beta(jax.random.split(key, 3)[0], 1.0, 1.0))
        saw_clipped_box |= float(lam) > lam0 + 0.1
    assert saw_clipped_box, "no draw exercised the clipping of the box at the border"


# DACL mixers on padded batches: `where` marks the real rows.

DACL_MIXERS = ["linear_mixup", "geometric_mixup", "binary_mixup", "dacl_plus_mixup"]
REAL = np.array([True, False, True, True, False, True, False, True])  # 5 real rows of 8


@pytest.mark.parametrize("name", DACL_MIXERS)
def test_where_all_true_draws_exactly_what_no_where_draws(name):
    fn, kwargs = MIXERS[name]
    x = _data(FEATURES, seed=40)
    np.testing.assert_array_equal(
        fn(jax.random.key(41), x, **kwargs, where=np.ones(FEATURES[0], bool)),
        fn(jax.random.key(41), x, **kwargs),
    )


@pytest.mark.parametrize("name", DACL_MIXERS)
def test_where_keeps_padding_rows_and_draws_partners_among_real_rows(name):
    fn, kwargs = MIXERS[name]
    # Padding rows hold huge values: any that leaked into a real row would show.
    x = np.where(REAL[:, None], _data(FEATURES, seed=42, kind="positive"), 1e6)
    x = x.astype(np.float32)
    views = np.asarray(
        jax.jit(jax.vmap(lambda k, w: fn(k, x, **kwargs, where=w), (0, None)))(
            jax.random.split(jax.random.key(43), 50), REAL
        )
    )
    np.testing.assert_array_equal(views[:, ~REAL], np.broadcast_to(x[~REAL], views[:, ~REAL].shape))
    assert np.all(np.abs(views[:, REAL]) < 1e3)


def test_where_partner_is_uniform_over_the_other_real_rows():
    n, draws = REAL.size, 600
    x = np.eye(n, dtype=np.float32)
    keys = jax.random.split(jax.random.key(44), draws)
    views = np.asarray(
        jax.jit(jax.vmap(lambda k: mixers.linear_mixup(k, x, alpha=0.0, where=REAL)))(keys)
    )
    off_diagonal = views * (1.0 - np.eye(n))
    real = np.flatnonzero(REAL)
    assert np.all(off_diagonal[:, real].max(axis=-1) > 0), "a real row was mixed with itself"
    partners = off_diagonal[:, real].argmax(axis=-1)  # [draws, real rows]
    counts = np.zeros((real.size, n))
    np.add.at(counts, (np.broadcast_to(np.arange(real.size), partners.shape), partners), 1)
    assert not counts[:, ~REAL].any(), "a padding row was drawn as a partner"
    expected = draws / (real.size - 1)
    for i, k in enumerate(real):
        others = [j for j in real if j != k]
        assert counts[i, k] == 0
        assert np.all(np.abs(counts[i, others] - expected) < 0.3 * expected), counts


def test_where_with_a_traced_mask_and_a_lone_real_row():
    x = _data(FEATURES, seed=45)

    @jax.jit
    def mix(key, where):
        return mixers.linear_mixup(key, x, alpha=0.5, where=where)

    lone = np.zeros(FEATURES[0], bool)
    lone[3] = True  # no other real row: nothing to mix with, returned unchanged
    np.testing.assert_array_equal(mix(jax.random.key(46), lone), x)
    two = lone.copy()
    two[6] = True  # rows 3 and 6 mix with each other only; the same compiled function
    out = np.asarray(mix(jax.random.key(46), two))
    np.testing.assert_array_equal(out[~two], x[~two])
    for k, j in ((3, 6), (6, 3)):
        lam = (out[k] - x[j]) / (x[k] - x[j])
        np.testing.assert_allclose(lam, lam[0], rtol=1e-4)
        assert 0.5 - 1e-6 <= lam[0] <= 1.0 + 1e-6


# Shared behaviour of every mixer.

IMAGE = _data(IMAGES, seed=30, kind="signed_with_zeros")
MIXERS = {
    "linear_mixup": (mixers.linear_mixup, {"alpha": 0.6}),
    "geometric_mixup": (mixers.geometric_mixup, {"alpha": 0.6}),
    "binary_mixup": (mixers.binary_mixup, {"rho": 0.4}),
    "dacl_plus_mixup": (mixers.dacl_plus_mixup, {"alpha": 0.6, "rho": 0.4}),
    "gaussian_noise": (mixers.gaussian_noise, {"scale": 0.2}),
    "imix_mixup": (mixers.imix_mixup, {"alpha": 1.0}),
    "cutmix": (mixers.cutmix, {"alpha": 1.0}),
}


def _assert_trees_close(a, b):
    jax.tree.map(lambda u, v: np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-6), a, b)


@pytest.mark.parametrize("name", MIXERS)
def test_jit_vmap_and_traced_hyperparameters_equal_eager(name):
    # One compilation covers jit, vmap over keys (several views at once) and hyperparameters
    # passed as traced arrays (they skip the trace-time range checks but still work).
    fn, kwargs = MIXERS[name]
    keys = jax.random.split(jax.random.key(32), 3)
    batched = jax.jit(jax.vmap(lambda k, kw: fn(k, IMAGE, **kw), (0, None)))(keys, kwargs)
    for i in range(3):
        view_i = jax.tree.map(lambda a, i=i: a[i], batched)
        _assert_trees_close(view_i, fn(keys[i], IMAGE, **kwargs))


@pytest.mark.parametrize("name", MIXERS)
def test_deterministic_per_key_and_different_across_keys(name):
    fn, kwargs = MIXERS[name]
    first = jax.tree.leaves(fn(jax.random.key(33), IMAGE, **kwargs))[0]
    again = jax.tree.leaves(fn(jax.random.key(33), IMAGE, **kwargs))[0]
    other = jax.tree.leaves(fn(jax.random.key(34), IMAGE, **kwargs))[0]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


@pytest.mark.parametrize("name", MIXERS)
def test_raw_uint32_keys_and_low_precision_inputs(name):
    fn, kwargs = MIXERS[name]
    x16 = jnp.asarray(IMAGE, jnp.bfloat16)
    out = jax.tree.leaves(fn(jax.random.PRNGKey(35), x16, **kwargs))[0]
    assert out.dtype == jnp.bfloat16 and out.shape == IMAGE.shape
    assert np.all(np.isfinite(np.asarray(out, np.float32)))


def test_batch_of_one_is_fine_without_a_partner():
    x = _data((1, 4, 4, 2), seed=36)
    assert mixers.gaussian_noise(jax.random.key(0), x, scale=0.1).shape == x.shape
    x_mix, _, perm = mixers.imix_mixup(jax.random.key(0), x, alpha=1.0)
    np.testing.assert_allclose(x_mix, x, rtol=1e-6)
    np.testing.assert_array_equal(perm, [0])
    np.testing.assert_array_equal(mixers.cutmix(jax.random.key(0), x, alpha=1.0)[0], x)


# Bad input: trace-time ValueErrors that name the argument, the value and the expectation.

KEY = jax.random.key(0)
X = _data((4, 3))
IMG = _data((4, 5, 5, 2))
BAD_INPUTS = [
    (
        mixers.linear_mixup,
        (KEY, np.ones((4, 3), np.int32)),
        {"alpha": 0.5},
        r"`x`.*floating.*int32",
    ),
    (mixers.gaussian_noise, (KEY, np.ones((4, 3), bool)), {"scale": 0.1}, r"`x`.*floating.*bool"),
    (mixers.imix_mixup, (KEY, np.ones((4,), np.int8)), {"alpha": 1.0}, r"`x`.*floating.*int8"),
    (mixers.binary_mixup, (KEY, np.float32(1.0)), {"rho": 0.5}, r"`x`.*batch axis.*scalar"),
    (mixers.linear_mixup, (KEY, np.zeros((0, 3), np.float32)), {"alpha": 0.5}, r"`x`.*empty"),
    (mixers.cutmix, (KEY, np.zeros((0, 5, 5, 2), np.float32)), {"alpha": 1.0}, r"`x`.*empty"),
    (mixers.gaussian_noise, (KEY, np.zeros((0,), np.float32)), {"scale": 0.1}, r"`x`.*empty"),
    (mixers.imix_mixup, (KEY, np.zeros((0, 2), np.float32)), {"alpha": 1.0}, r"`x`.*empty"),
    (mixers.linear_mixup, (KEY, X[:1]), {"alpha": 0.5}, r"`x`.*batch size 1.*at least 2"),
    (mixers.geometric_mixup, (KEY, X[:1]), {"alpha": 0.5}, r"`x`.*batch size 1.*at least 2"),
    (mixers.binary_mixup, (KEY, X[:1]), {"rho": 0.5}, r"`x`.*batch size 1.*at least 2"),
    (mixers.dacl_plus_mixup, (KEY, X[:1]), {"alpha": 0.5, "rho": 0.5}, r"batch size 1"),
    (mixers.linear_mixup, (KEY, X), {"alpha": 1.5}, r"`alpha`.*\[0.0, 1.0\].*1\.5"),
    (mixers.linear_mixup, (KEY, X), {"alpha": -0.1}, r"`alpha`.*\[0.0, 1.0\].*-0\.1"),
    (mixers.geometric_mixup, (KEY, X), {"alpha": float("nan")}, r"`alpha`.*\[0.0, 1.0\].*nan"),
    (mixers.dacl_plus_mixup, (KEY, X), {"alpha": 2.0, "rho": 0.5}, r"`alpha`.*2\.0"),
    (mixers.binary_mixup, (KEY, X), {"rho": 1.01}, r"`rho`.*\[0.0, 1.0\].*1\.01"),
    (mixers.binary_mixup, (KEY, X), {"rho": -0.5}, r"`rho`.*-0\.5"),
    (mixers.dacl_plus_mixup, (KEY, X), {"alpha": 0.5, "rho": 3.0}, r"`rho`.*3\.0"),
    (mixers.imix_mixup, (KEY, X), {"alpha": 0.0}, r"`alpha`.*> 0.*0\.0"),
    (mixers.imix_mixup, (KEY, X), {"alpha": -1.0}, r"`alpha`.*> 0.*-1\.0"),
    (mixers.cutmix, (KEY, IMG), {"alpha": 0.0}, r"`alpha`.*> 0.*0\.0"),
    (mixers.gaussian_noise, (KEY, X), {"scale": -0.1}, r"`scale`.*>= 0.*-0\.1"),
    (mixers.cutmix, (KEY, IMG), {"alpha": 1.0, "axes": (0, 1)}, r"`axes`.*axis 0.*\[1, 3\]"),
    (mixers.cutmix, (KEY, IMG), {"alpha": 1.0, "axes": (1, 4)}, r"`axes`.*axis 4"),
    (mixers.cutmix, (KEY, IMG), {"alpha": 1.0, "axes": (1, -4)}, r"`axes`.*axis -4"),
    (mixers.cutmix, (KEY, IMG), {"alpha": 1.0, "axes": ()}, r"`axes`.*non-empty"),
    (mixers.cutmix, (KEY, IMG), {"alpha": 1.0, "axes": (1, -3)}, r"`axes`.*distinct"),
    (mixers.cutmix, (KEY, IMG), {"alpha": 1.0, "axes": (1.0,)}, r"`axes`.*ints"),
    (mixers.cutmix, (KEY, X), {"alpha": 1.0}, r"`axes`.*axis 2.*\[1, 1\]"),
    (mixers.cutmix, (KEY, np.zeros((2, 0, 3), np.float32)), {"alpha": 1.0}, r"axis 1.*size 0"),
    (mixers.linear_mixup, (None, X), {"alpha": 0.5}, r"`key`"),
    (mixers.cutmix, (7, IMG), {"alpha": 1.0}, r"`key`.*PRNG key"),
    (mixers.dacl_plus_mixup, (KEY, X), {"alpha": 0.5, "rho": 0.5, "kind_key": 3}, r"`kind_key`"),
    (mixers.linear_mixup, (KEY, X), {"alpha": 0.5, "where": np.ones(4)}, r"`where`.*bool.*float"),
    (mixers.binary_mixup, (KEY, X), {"rho": 0.5, "where": np.ones(3, bool)}, r"`where`.*\(4,\)"),
]


@pytest.mark.parametrize("fn, args, kwargs, match", BAD_INPUTS)
def test_bad_input_raises_value_error_at_trace_time(fn, args, kwargs, match):
    with pytest.raises(ValueError, match=f"^{fn.__name__}: .*{match}"):
        fn(*args, **kwargs)
    if not isinstance(args[1], np.ndarray) or args[0] is None or isinstance(args[0], int):
        return
    # The same error is raised while tracing under jit, before anything runs.
    with pytest.raises(ValueError, match=match):
        jax.jit(functools.partial(fn, **kwargs))(*args)
