"""``jaxcl.models.conv_general_dilated``: the values and gradients (first and second order) of
``jax.lax.conv_general_dilated``; on CPU its backward pass routes the input through a
conditional, so that the kernel gradient's layout transpose reads one materialised array
instead of recomputing the input's producers (checked in the compiled program); ResNet uses
it unless told not to."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax import lax

from jaxcl import models

_DIMS = ("NHWC", "HWIO", "NHWC")


def _both(**conv):
    def make(fn):
        return lambda x, w: fn(x, w, dimension_numbers=_DIMS, **conv)

    return make(lax.conv_general_dilated), make(models.conv_general_dilated)


@pytest.mark.parametrize(
    "conv, kernel_shape",
    [
        (dict(window_strides=(1, 1), padding="SAME"), (3, 3, 4, 6)),
        (dict(window_strides=(2, 2), padding=((1, 1), (1, 1))), (3, 3, 4, 6)),
        (dict(window_strides=(2, 2), padding="VALID"), (1, 1, 4, 6)),
        (dict(window_strides=(1, 1), padding="SAME", rhs_dilation=(2, 2)), (3, 3, 4, 6)),
        (dict(window_strides=(1, 1), padding="SAME", feature_group_count=2), (3, 3, 2, 6)),
        (dict(window_strides=(1, 2), padding=((0, 1), (2, 0))), (2, 3, 4, 6)),
    ],
)
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_values_and_gradients_are_those_of_lax(conv, kernel_shape, dtype):
    plain, ours = _both(**conv)
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(3, 9, 8, 4)), dtype)
    w = jnp.asarray(rng.normal(size=kernel_shape) * 0.3, dtype)

    def loss(fn):
        return jax.jit(
            jax.value_and_grad(lambda x, w: jnp.sum(jnp.tanh(fn(jax.nn.relu(x), w))), (0, 1))
        )

    (v0, (gx0, gw0)), (v1, (gx1, gw1)) = loss(plain)(x, w), loss(ours)(x, w)
    assert ours(x, w).dtype == dtype
    np.testing.assert_array_equal(np.asarray(ours(x, w)), np.asarray(plain(x, w)))
    np.testing.assert_array_equal(np.asarray(v1), np.asarray(v0))
    np.testing.assert_array_equal(np.asarray(gx1), np.asarray(gx0))
    np.testing.assert_array_equal(np.asarray(gw1), np.asarray(gw0))
    assert float(jnp.max(jnp.abs(gw0.astype(jnp.float32)))) > 0


def test_second_order_reverse_mode_is_that_of_lax():
    # MetAug differentiates through an inner gradient step of the encoder.
    plain, ours = _both(window_strides=(1, 1), padding="SAME")
    keys = jax.random.split(jax.random.key(1), 3)
    x = jax.random.normal(keys[0], (2, 6, 6, 3))
    w = jax.random.normal(keys[1], (3, 3, 3, 4)) * 0.3
    phi = jax.random.normal(keys[2], (2, 6, 6, 3))

    def meta(phi, conv):
        inner = lambda w: jnp.sum(jnp.tanh(conv(x * phi, w)) ** 2)
        w2 = w - 0.1 * jax.grad(inner)(w)
        return jnp.sum(jnp.tanh(conv(x + phi, w2)) ** 2)

    expected, got = jax.grad(meta)(phi, plain), jax.grad(meta)(phi, ours)
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6, atol=1e-6)
    assert float(jnp.max(jnp.abs(expected))) > 0


def _transposes_to_batch_minor(fn, x, w):
    """For each compiled fusion that outputs the input in ``[C, H, W, B]`` order (the kernel
    gradient's layout), how many of its operands have the input's size."""
    grad = jax.jit(jax.grad(fn, (0, 1)))
    hlo = grad.lower(x, w).compile().as_text()
    b, h, wd, c = x.shape
    out = rf"f32\[{c},{h},{wd},{b}\]"
    act = rf"f32\[{b},{h},{wd},{c}\]"
    counts = []
    for line in hlo.splitlines():
        m = re.match(rf"\s*%[\w.\-]+ = {out}\{{[\d,]*\}} fusion\((.*?)\), kind", line)
        if m:
            callee = re.search(r"calls=(%[\w.\-]+)", line).group(1)
            body = re.search(rf"^{re.escape(callee)} \(.*?^}}", hlo, re.S | re.M).group(0)
            counts.append(len(re.findall(rf"{act}\{{[\d,]*\}} parameter", body)))
    return counts, hlo


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA:CPU's fusion is the subject")
def test_on_cpu_the_kernel_gradient_transposes_one_materialised_input():
    # A residual chain as in ResNet: the convolution's input is computed elementwise from
    # three activations, which XLA would otherwise recompute inside the transpose.
    plain, ours = _both(window_strides=(1, 1), padding="SAME")
    rng = np.random.default_rng(0)
    a, b, c = (jnp.asarray(rng.normal(size=(16, 8, 8, 32)), jnp.float32) for _ in range(3))
    w = jnp.asarray(rng.normal(size=(3, 3, 32, 32)) * 0.1, jnp.float32)

    def net(conv):
        def fn(x, w):
            y = jax.nn.relu(jax.nn.relu(x * 1.5 + b) * 0.5 + c)
            return jnp.sum(conv(y, w) ** 2)

        return fn

    counts, hlo = _transposes_to_batch_minor(net(ours), a, w)
    assert " conditional(" in hlo
    assert counts and all(n == 1 for n in counts), counts
    counts_plain, _ = _transposes_to_batch_minor(net(plain), a, w)
    # what the barrier prevents (if XLA stops doing this, the barrier may be dropped)
    assert counts_plain and max(counts_plain) > 1, counts_plain


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the barrier is CPU-only")
def test_resnet_uses_it_unless_told_not_to():
    x = jax.random.normal(jax.random.key(0), (2, 16, 16, 3))

    def build(barrier):
        return models.ResNet(18, stem="cifar", base_width=8, cpu_gradient_barrier=barrier,
                             rngs=nnx.Rngs(0))  # fmt: skip

    def loss_and_grads(model):
        graphdef, params, rest = nnx.split(model, nnx.Param, ...)

        def loss(params):
            m = nnx.merge(graphdef, params, rest, copy=True)
            return jnp.sum(m(x) ** 2)

        return jax.jit(jax.value_and_grad(loss))(params)

    with_barrier, without = build(True), build(False)
    convs = [m for _, m in nnx.iter_modules(with_barrier) if isinstance(m, nnx.Conv)]
    assert convs and all(m.conv_general_dilated is models.conv_general_dilated for m in convs)
    plain = [m for _, m in nnx.iter_modules(without) if isinstance(m, nnx.Conv)]
    assert all(m.conv_general_dilated is lax.conv_general_dilated for m in plain)
    (v1, g1), (v0, g0) = loss_and_grads(with_barrier), loss_and_grads(without)
    assert float(v1) == float(v0)
    for a, b in zip(jax.tree.leaves(g1), jax.tree.leaves(g0), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)

    # the documented price: no forward mode through the barriered model on CPU
    def forward(model):
        model.eval()  # running statistics: nothing to update under jvp
        return lambda x: model(x)

    def jvp(model):
        f = forward(model)
        return jax.jit(lambda x: jax.jvp(f, (x,), (x,)))(x)

    jvp(without)
    no_jvp = r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function"
    with pytest.raises(TypeError, match=no_jvp):
        jvp(with_barrier)


def test_resnet_rejects_a_non_bool_barrier():
    with pytest.raises(ValueError, match="cpu_gradient_barrier.*got 'yes'"):
        models.ResNet(18, cpu_gradient_barrier="yes", rngs=nnx.Rngs(0))


@pytest.mark.skipif(jax.device_count() < 2, reason="needs several (fake) devices")
def test_resnet_gradients_with_the_batch_sharded_equal_one_devices():
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    n = jax.device_count()
    model = models.ResNet(18, stem="cifar", base_width=8, rngs=nnx.Rngs(0))
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    x = jax.random.normal(jax.random.key(0), (2 * n, 16, 16, 3))

    def loss(params, x):
        m = nnx.merge(graphdef, params, rest, copy=True)
        return jnp.sum(jnp.tanh(m(x)))

    grad = jax.jit(jax.value_and_grad(loss))
    v1, g1 = grad(params, x)
    # an Auto mesh, as the trainer's (under Explicit axes JAX asks convolutions' gradients
    # for an out_sharding, with or without the barrier)
    mesh = jax.make_mesh((n,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    vn, gn = grad(params, jax.device_put(x, NamedSharding(mesh, P("data"))))
    np.testing.assert_allclose(float(vn), float(v1), rtol=1e-5)
    for a, b in zip(jax.tree.leaves(gn), jax.tree.leaves(g1), strict=True):
        # sums over the batch in another order: compare each tensor as a whole
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        assert np.linalg.norm(a - b) <= 1e-4 * np.linalg.norm(b) + 1e-7, a.shape
