"""``block_size`` on ``infonce`` and ``nt_xent``: the exact loss and gradients of the dense
path, computed in tiles recomputed in the backward pass, with memory linear in the batch
(read from the compiled program); sharded runs are in test_losses_sharded.py."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcl import losses

N, D = 37, 6  # not a multiple of the blocks below: anchors and candidates are padded


def _views(seed=0, n=N, d=D):
    ka, kb = jax.random.split(jax.random.key(seed))
    za = jax.random.normal(ka, (n, d))
    return za, za + 0.6 * jax.random.normal(kb, (n, d))


WHERE = jnp.asarray(np.random.default_rng(1).random(N) > 0.25)

CASES = {
    "infonce": dict(fn=losses.infonce, temperature=0.3),
    "infonce_symmetric": dict(fn=losses.infonce, temperature=0.3, symmetric=True),
    "infonce_raw": dict(fn=losses.infonce, temperature=2.0, normalize=False),
    "nt_xent": dict(fn=losses.nt_xent, temperature=0.5),
    "nt_xent_raw": dict(fn=losses.nt_xent, temperature=1.5, normalize=False),
    "nt_xent_low_t": dict(fn=losses.nt_xent, temperature=0.01),
}


@pytest.mark.parametrize("block", [5, 64])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_blockwise_equals_dense_in_value_and_gradient(name, masked, block):
    case = dict(CASES[name])
    fn = case.pop("fn")
    za, zb = _views()
    where = WHERE if masked else None
    dense = jax.jit(jax.value_and_grad(lambda a, b: fn(a, b, where=where, **case), argnums=(0, 1)))
    tiled = jax.jit(
        jax.value_and_grad(
            lambda a, b: fn(a, b, where=where, block_size=block, **case), argnums=(0, 1)
        )
    )
    (v_d, (ga_d, gb_d)), (v_t, (ga_t, gb_t)) = dense(za, zb), tiled(za, zb)
    assert float(v_t) == pytest.approx(float(v_d), rel=1e-5, abs=1e-5)
    scale = float(jnp.maximum(jnp.abs(ga_d).max(), jnp.abs(gb_d).max()))
    np.testing.assert_allclose(ga_t, ga_d, atol=2e-5 * scale, rtol=1e-4)
    np.testing.assert_allclose(gb_t, gb_d, atol=2e-5 * scale, rtol=1e-4)
    if masked:  # masked rows get exactly zero gradient
        assert not np.any(np.asarray(ga_t)[~np.asarray(WHERE)])


def test_masked_rows_may_hold_nan():
    za, zb = _views()
    bad = jnp.where(WHERE[:, None], za, jnp.nan)
    loss = jax.jit(lambda a: losses.nt_xent(a, zb, temperature=0.5, where=WHERE, block_size=8))
    assert float(loss(bad)) == pytest.approx(float(loss(za)), rel=1e-6)
    assert np.all(np.isfinite(np.asarray(jax.jit(jax.grad(loss))(bad))))


@pytest.mark.parametrize("fn", [losses.infonce, losses.nt_xent])
def test_gradient_in_the_temperature(fn):
    za, zb = _views()

    def loss(t, block):
        return fn(za, zb, temperature=t, block_size=block)

    dense = jax.jit(jax.grad(functools.partial(loss, block=None)))(0.4)
    tiled = jax.jit(jax.grad(functools.partial(loss, block=8)))(0.4)
    assert float(tiled) == pytest.approx(float(dense), rel=1e-4)


@pytest.mark.parametrize("fn", [losses.infonce, losses.nt_xent])
def test_float64_switched_on_changes_nothing_and_float64_inputs_work(fn):
    # With x64 on, float32 views stay float32 (the scans' carries take the views' dtype), and
    # float64 views are computed in float64 (the value returned in float32, as every loss):
    # both give the dense path's value and gradients (before, the scans' carries mixed
    # float32 and float64 and failed).
    za, zb = _views()

    @functools.partial(jax.jit, static_argnums=2)
    def value_and_grads(a, b, block):
        return jax.value_and_grad(
            lambda a, b, t: fn(a, b, temperature=t, block_size=block), argnums=(0, 1, 2)
        )(a, b, 0.4)

    want, want_grads = value_and_grads(za, zb, None)
    with jax.enable_x64(True):
        got, grads = value_and_grads(za, zb, 8)
        assert got.dtype == jnp.float32 and grads[0].dtype == jnp.float32
        assert float(got) == pytest.approx(float(want), rel=1e-5)
        for g, w in zip(grads, want_grads, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
        a64, b64 = (jnp.asarray(x, jnp.float64) for x in (za, zb))
        got64, grads64 = value_and_grads(a64, b64, 8)
        assert got64.dtype == jnp.float32 and grads64[0].dtype == jnp.float64
        assert float(got64) == pytest.approx(float(want), rel=1e-5)
        for g, w in zip(grads64, want_grads, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def _temp_bytes(fn, n, block):
    za, zb = _views(n=n, d=16)
    grad = jax.jit(jax.grad(lambda a, b: fn(a, b, temperature=0.5, block_size=block)))
    return grad.lower(za, zb).compile().memory_analysis().temp_size_in_bytes


@pytest.mark.parametrize("fn", [losses.infonce, losses.nt_xent])
def test_memory_grows_linearly_with_the_batch(fn):
    """XLA's temporaries for loss + gradient: quadrupling the batch multiplies the dense
    path's by about 16 (its logits) and the blockwise path's by about 4 (its inputs)."""
    small, large = 2048, 8192
    dense = _temp_bytes(fn, large, None) / _temp_bytes(fn, small, None)
    tiled = _temp_bytes(fn, large, 256) / _temp_bytes(fn, small, 256)
    assert dense > 10, dense
    assert tiled < 5, tiled
    assert _temp_bytes(fn, large, 256) < _temp_bytes(fn, large, None) / 20


@pytest.mark.parametrize("bad", [0, -4, 2.5, True])
def test_bad_block_size_is_named(bad):
    za, zb = _views()
    with pytest.raises(ValueError, match=r"block_size.*positive integer"):
        losses.infonce(za, zb, temperature=0.5, block_size=bad)
    with pytest.raises(ValueError, match=r"block_size.*positive integer"):
        losses.nt_xent(za, zb, temperature=0.5, block_size=bad)


@pytest.mark.parametrize("fn", [losses.infonce, losses.nt_xent])
def test_a_block_larger_than_the_batch_plans_batch_sized_tiles(fn):
    """block_size 4096 at batch 8: the tiles are [8, 8] ([8, 16] for NT-Xent's candidates),
    not [4096, 4096] of padding (134 MB of temporaries before), with the dense path's value
    and gradients."""
    za, zb = _views(n=8, d=16)

    def value_and_grads(block):
        loss = functools.partial(fn, temperature=0.5, block_size=block)
        return jax.jit(jax.value_and_grad(loss, argnums=(0, 1))).lower(za, zb).compile()

    tiled = value_and_grads(4096)
    assert tiled.memory_analysis().temp_size_in_bytes < 64 * 1024
    (v_d, g_d), (v_t, g_t) = value_and_grads(None)(za, zb), tiled(za, zb)
    assert float(v_t) == pytest.approx(float(v_d), rel=1e-5)
    for g, w in zip(g_t, g_d, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def test_tiles_are_as_even_as_the_block_allows():
    from jaxcl.losses._blockwise import tile_size

    assert tile_size(8, 4096) == 8
    assert tile_size(1025, 1024) == 513  # two tiles, 1 row of padding (not 1023)
    assert tile_size(37, 5) == 5
    assert tile_size(2048, 1024) == 1024
