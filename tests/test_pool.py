"""``jaxcl.models.max_pool``: ``flax.nnx.max_pool``'s values, gradients (ties included),
forward-mode tangents and second-order gradients; NaN windows; bad arguments; the models
that use it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcl import models

_CASES = [
    ((3, 3), (2, 2), "VALID"),
    ((3, 3), (2, 2), ((1, 1), (1, 1))),  # ResNet's ImageNet stem
    ((2, 2), (2, 2), "VALID"),
    ((3, 3), (1, 1), "SAME"),
    ((2, 3), (1, 2), ((0, 1), (2, 0))),
    ((3, 3), None, "VALID"),
]


def _pair(window, strides, padding):
    ref = lambda x: nnx.max_pool(x, window, strides=strides, padding=padding)  # noqa: E731
    ours = lambda x: models.max_pool(x, window, strides, padding)  # noqa: E731
    return ref, ours


@pytest.mark.parametrize("window, strides, padding", _CASES)
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_values_gradients_and_tangents_are_those_of_nnx(window, strides, padding, dtype):
    ref, ours = _pair(window, strides, padding)
    rng = np.random.default_rng(0)
    # small integers: most windows hold their maximum more than once
    x = jnp.asarray(rng.integers(0, 4, size=(3, 11, 9, 5)), dtype)
    y = ref(x)
    assert ours(x).dtype == dtype and ours(x).shape == y.shape
    np.testing.assert_array_equal(np.asarray(ours(x)), np.asarray(y))
    ct = jnp.asarray(rng.normal(size=y.shape), dtype)
    g_ref = jax.jit(jax.grad(lambda x: jnp.sum(ref(x) * ct).astype(jnp.float32)))(x)
    g_ours = jax.jit(jax.grad(lambda x: jnp.sum(ours(x) * ct).astype(jnp.float32)))(x)
    np.testing.assert_array_equal(np.asarray(g_ours), np.asarray(g_ref))
    # each window's cotangent reaches exactly one input (the first maximum)
    assert np.count_nonzero(np.asarray(g_ours, np.float32)) <= y.size
    t = jnp.asarray(rng.normal(size=x.shape), dtype)
    _, t_ref = jax.jvp(ref, (x,), (t,))
    _, t_ours = jax.jvp(ours, (x,), (t,))
    np.testing.assert_array_equal(np.asarray(t_ours), np.asarray(t_ref))


def test_second_order_through_an_inner_step_is_that_of_nnx():
    ref, ours = _pair((3, 3), (2, 2), "VALID")
    keys = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(keys[0], (2, 9, 9, 3))
    w = jax.random.normal(keys[1], (3, 2)) * 0.5
    phi = jax.random.normal(keys[2], (2, 9, 9, 3))

    def meta(phi, pool):
        inner = lambda w: jnp.sum(jnp.tanh(pool(x * phi) @ w) ** 2)  # noqa: E731
        w2 = w - 0.1 * jax.grad(inner)(w)
        return jnp.sum(jnp.tanh(pool(x + phi) @ w2) ** 2)

    expected, got = jax.grad(meta)(phi, ref), jax.grad(meta)(phi, ours)
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6, atol=1e-6)
    assert float(jnp.max(jnp.abs(expected))) > 0


def test_a_nan_window_gives_nan_and_no_gradient():
    x = jnp.arange(16.0).reshape(1, 4, 4, 1).at[0, 0, 0, 0].set(jnp.nan)
    y = models.max_pool(x, (2, 2), (2, 2))
    assert np.isnan(np.asarray(y)[0, 0, 0, 0]) and not np.isnan(np.asarray(y)[0, 1, 1, 0])
    g = np.asarray(jax.grad(lambda x: jnp.nansum(models.max_pool(x, (2, 2), (2, 2))))(x))
    assert np.all(g[0, :2, :2, 0] == 0)  # the NaN window's inputs
    assert g[0, 3, 3, 0] == 1 and g.sum() == 3


def test_resnets_imagenet_stem_pools_as_nnx():
    x = jax.random.normal(jax.random.key(0), (2, 32, 32, 3))
    net = models.ResNet(18, stem="imagenet", base_width=8, rngs=nnx.Rngs(0))
    net.eval()
    h = jax.nn.relu(net.norm(net.conv(x)))
    h = nnx.max_pool(h, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))
    for block in net.blocks:
        h = block(h)
    np.testing.assert_array_equal(np.asarray(net(x)), np.asarray(jnp.mean(h, axis=(1, 2))))


@pytest.mark.parametrize(
    "x, kwargs, match",
    [
        (jnp.zeros((4, 4, 1)), {}, r"`x` must be \[batch, H, W, C\], got shape \(4, 4, 1\)"),
        (jnp.zeros((1, 4, 4, 1), jnp.int32), {}, "floating dtype, got int32"),
        (jnp.zeros((1, 4, 4, 1)), {"window_shape": (0, 2)}, "`window_shape` must be two"),
        (jnp.zeros((1, 4, 4, 1)), {"strides": (2,)}, r"`strides` must be two .* got \(2,\)"),
        (jnp.zeros((1, 4, 4, 1)), {"padding": ((1, -1), (0, 0))}, "`padding` must be"),
        (jnp.zeros((1, 2, 2, 1)), {"window_shape": (3, 3)}, "larger than the padded input"),
    ],
)
def test_bad_arguments(x, kwargs, match):
    kwargs = {"window_shape": (2, 2), **kwargs}
    with pytest.raises(ValueError, match=match):
        models.max_pool(x, **kwargs)
