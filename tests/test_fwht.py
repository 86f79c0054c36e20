"""Tests for jaxcl.random_features.fwht against NumPy/SciPy references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from jax.test_util import check_grads

from jaxcl.random_features import _fwht, fwht


def np_fwht(x: np.ndarray) -> np.ndarray:
    """Reference: the textbook radix-2 butterfly in float64, independent of the library."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    h = 1
    while h < d:
        y = x.reshape(*x.shape[:-1], d // (2 * h), 2, h)
        a, b = y[..., 0, :], y[..., 1, :]
        x = np.stack([a + b, a - b], axis=-2).reshape(x.shape)
        h *= 2
    return x / np.sqrt(d)


def dense_reference(x: np.ndarray) -> np.ndarray:
    d = x.shape[-1]
    return np.asarray(x, np.float64) @ scipy.linalg.hadamard(d).astype(np.float64) / np.sqrt(d)


def randn(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("d", [2, 8, 64, 256])
def test_np_reference_matches_scipy_hadamard(d):
    x = randn((3, d))
    np.testing.assert_allclose(np_fwht(x), dense_reference(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("d", [1, 2, 4, 8, 16, 32, 64, 128, 512, 1024, 2048, 8192])
def test_matches_reference(d):
    x = randn((5, d), seed=d)
    want = dense_reference(x) if d <= 1024 else np_fwht(x)
    np.testing.assert_allclose(jax.jit(fwht)(x), want, rtol=1e-5, atol=1e-5)


def test_leading_batch_shape():
    x = randn((2, 3, 4, 32))
    got = fwht(x)
    assert got.shape == x.shape
    np.testing.assert_allclose(got, np_fwht(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "rows",
    [
        2048,  # a power of two: tiles divide the rows
        1000,  # tiles of 500 rows (a divisor close to the target size)
        1031,  # prime: whole tiles plus a separately transformed tail
    ],
)
def test_tiled_path_matches_reference(rows):
    d = 1024
    assert rows * d * 4 > _fwht._TILE_BYTES, "input too small to take the tiled path"
    x = randn((rows, d), seed=rows)
    np.testing.assert_allclose(jax.jit(fwht)(x), np_fwht(x), rtol=1e-5, atol=1e-5)


def test_untiled_stages_match_tiled():
    # The untiled stages are what GPU/TPU run; on CPU they are only reached directly.
    x = jnp.asarray(randn((4099, 256), seed=3))  # prime rows, over one tile
    radices = _fwht._radices(256)
    untiled = _fwht._stages(x, radices, 1 / 16)
    tiled = _fwht._tiled(lambda t: _fwht._stages(t, radices, 1 / 16), x, tile_rows=1024)
    np.testing.assert_allclose(untiled, np_fwht(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tiled, untiled, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("d", [2, 4, 64, 128, 1024, 4096, 8192])
def test_radices_multiply_to_d_and_no_dense_block(d):
    radices = _fwht._radices(d)
    assert np.prod(radices) == d
    assert all(r <= 64 for r in radices)
    if d >= 4:
        assert max(radices) < d


def test_bfloat16_rounds_once():
    x = jnp.asarray(randn((64, 512), seed=1), jnp.bfloat16)
    got = fwht(x)
    assert got.dtype == jnp.bfloat16
    want = np_fwht(np.asarray(x.astype(jnp.float32)))
    # Float32 accumulation followed by one rounding to bfloat16 (8 significant bits) is within
    # half an ulp, at most 2**-8 relative (plus float32 error for outputs near zero);
    # rounding to bfloat16 after every stage would exceed it.
    err = np.abs(np.asarray(got.astype(jnp.float32)) - want)
    assert np.all(err <= 2.0**-8 * np.abs(want) + 1e-6)


def test_is_an_involution_and_preserves_norm():
    x = randn((7, 256), seed=2)
    y = fwht(x)
    np.testing.assert_allclose(fwht(y), x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-5)


@pytest.mark.parametrize("shape", [(3, 16), (1100, 1024)])
def test_vjp_and_jvp_apply_the_transform(shape):
    x = jnp.asarray(randn(shape, seed=4))
    g = jnp.asarray(randn(shape, seed=5))
    y, pullback = jax.vjp(fwht, x)
    (ct,) = jax.jit(pullback)(g)
    np.testing.assert_allclose(ct, np_fwht(g), rtol=1e-5, atol=1e-5)
    primal, tangent = jax.jit(lambda x, t: jax.jvp(fwht, (x,), (t,)))(x, g)
    np.testing.assert_allclose(primal, np_fwht(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tangent, np_fwht(g), rtol=1e-5, atol=1e-5)


def test_check_grads():
    x = jnp.asarray(randn((2, 32), seed=6))
    check_grads(jax.jit(lambda x: jnp.sin(fwht(x))), (x,), order=2, modes=("fwd", "rev"))


def test_vmap_over_a_non_leading_axis():
    x = randn((16, 5, 3), seed=7)  # transform along axis 0, vmapped over axis 1
    got = jax.vmap(lambda col: fwht(col.T).T, in_axes=1, out_axes=1)(x)
    np.testing.assert_allclose(got, np.moveaxis(np_fwht(np.moveaxis(x, 0, -1)), -1, 0), atol=1e-5)


def test_d_equal_one_is_identity():
    x = randn((4, 1))
    np.testing.assert_array_equal(fwht(x), x)


@pytest.mark.parametrize(
    "x, match",
    [
        (np.ones((2, 8), np.int32), r"fwht: `x` must have a floating dtype, got int32"),
        (np.ones((2, 12), np.float32), r"fwht: `x` must have a power-of-two .* got d=12"),
        (np.ones((2, 0), np.float32), r"fwht: `x` must have a power-of-two .* got d=0"),
        (np.float32(1.0), r"fwht: `x` must have rank >= 1"),
    ],
)
def test_bad_input(x, match):
    with pytest.raises(ValueError, match=match):
        fwht(x)
