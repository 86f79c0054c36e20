"""jaxcl.models.BatchNorm: flax's batch norm with one group, per-slice statistics (as
per-GPU batch norm) with several, and set_batch_norm_groups on built models."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcl import models


def _x(shape, seed=0):
    return jnp.asarray(np.random.default_rng(seed).normal(2.0, 3.0, shape), jnp.float32)


def _pair(features, groups, **kw):
    """jaxcl's BatchNorm with ``groups`` and flax's, the same initial state."""
    ours = models.BatchNorm(features, groups=groups, rngs=nnx.Rngs(0), **kw)
    flax = nnx.BatchNorm(features, rngs=nnx.Rngs(0), **kw)
    return ours, flax


@pytest.mark.parametrize("dtype", [None, jnp.bfloat16])
def test_one_group_is_flax_batch_norm(dtype):
    ours, flax = _pair(5, 1, momentum=0.8, dtype=dtype)
    x = _x((6, 3, 5))
    y, want = ours(x), flax(x)
    assert y.dtype == want.dtype
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(ours.mean[...], flax.mean[...])
    np.testing.assert_array_equal(ours.var[...], flax.var[...])


@pytest.mark.parametrize("fast, dtype", [(True, None), (False, None), (True, jnp.bfloat16)])
def test_groups_normalise_each_slice_with_its_own_statistics(fast, dtype):
    groups, n = 3, 4
    kw = {"momentum": 0.8, "use_fast_variance": fast, "dtype": dtype}
    ours, _ = _pair(5, groups, **kw)
    x = _x((groups * n, 2, 5), seed=1)
    x = x.at[n : 2 * n].multiply(10.0)  # slices with very different statistics
    y = ours(x)
    slices = []
    for g in range(groups):
        flax = nnx.BatchNorm(5, rngs=nnx.Rngs(0), **kw)
        want = flax(x[g * n : (g + 1) * n])
        assert y.dtype == want.dtype
        tol = 2e-5 if dtype is None else 1e-2  # bfloat16: one unit in the last place
        np.testing.assert_allclose(
            np.asarray(y[g * n : (g + 1) * n], np.float32), np.asarray(want, np.float32),
            atol=tol, rtol=tol,
        )  # fmt: skip
        slices.append(flax)
    # the running averages fold in the slices' mean statistics: the mean of the updates
    for name in ("mean", "var"):
        want = np.mean([getattr(f, name)[...] for f in slices], axis=0)
        np.testing.assert_allclose(getattr(ours, name)[...], want, rtol=1e-5)


def test_groups_with_a_mask_count_only_the_masked_samples():
    ours, _ = _pair(2, 2, epsilon=0.0, use_bias=False, use_scale=False)
    x = jnp.asarray([[0.0, 1.0], [2.0, 3.0], [99.0, 99.0], [10.0, 0.0], [30.0, 4.0], [5.0, 5.0]])
    mask = jnp.asarray([[True], [True], [False], [True], [True], [True]])
    y = np.asarray(ours(x, mask=mask))
    first, second = np.asarray(x[:2]), np.asarray(x[3:])
    np.testing.assert_allclose(y[:2], (first - first.mean(0)) / first.std(0), atol=1e-5)
    np.testing.assert_allclose(y[3:], (second - second.mean(0)) / second.std(0), atol=1e-5)


def test_evaluation_uses_the_running_averages_whatever_the_groups():
    ours, flax = _pair(3, 2)
    x = _x((4, 3))
    ours(x), flax(x)  # different statistics folded in: set them equal
    ours.mean[...], ours.var[...] = flax.mean[...], flax.var[...]
    ours.eval(), flax.eval()
    np.testing.assert_array_equal(ours(_x((6, 3), 2)), flax(_x((6, 3), 2)))  # 6: any size


def test_gradients_flow_within_each_slice_only():
    graphdef, state = nnx.split(models.BatchNorm(3, groups=2, rngs=nnx.Rngs(0)))

    def first_feature(x):
        return nnx.merge(graphdef, state, copy=True)(x)[:, 0]

    jac = np.asarray(jax.jit(jax.jacobian(first_feature))(_x((6, 3)))[:, :, 0])  # slices of 3
    assert np.all(np.isfinite(jac))
    # each slice's output depends on its own inputs (through its statistics) and no other's
    np.testing.assert_array_equal(jac[:3, 3:], 0.0)
    np.testing.assert_array_equal(jac[3:, :3], 0.0)
    assert np.all(jac[:3, :3] != 0) and np.all(jac[3:, 3:] != 0)


def test_resnet_with_groups_is_the_resnet_on_each_slice():
    # what per-device batch norm means for a whole network: each slice as its own batch
    net = models.ResNet(18, stem="cifar", base_width=4, rngs=nnx.Rngs(0))
    x = _x((6, 8, 8, 3), 3)
    forward = nnx.jit(lambda m, v: m(v))  # (op by op, the test took 16 s)
    separate = [forward(net, x[:3]), forward(net, x[3:])]  # global statistics, one slice per call
    models.set_batch_norm_groups(net, 2)
    np.testing.assert_allclose(forward(net, x), jnp.concatenate(separate), rtol=1e-4, atol=1e-5)
    assert all(m.groups == 2 for _, m in nnx.iter_modules(net) if isinstance(m, models.BatchNorm))


@pytest.mark.parametrize("groups", [0, -1, 1.5, True, "2"])
def test_bad_groups_are_refused(groups):
    with pytest.raises(ValueError, match="`groups` must be an int >= 1"):
        models.BatchNorm(3, groups=groups, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="`groups` must be an int >= 1"):
        models.set_batch_norm_groups(models.BatchNorm(3, rngs=nnx.Rngs(0)), groups)


def test_an_unset_mode_is_flaxs_error_with_groups_too():
    bn = models.BatchNorm(3, groups=2, use_running_average=None, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="No `use_running_average` argument"):
        bn(_x((4, 3)))
    assert bn(_x((4, 3)), use_running_average=False).shape == (4, 3)


def test_a_batch_that_does_not_split_is_refused():
    bn = models.BatchNorm(3, groups=4, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="a batch of 6 does not split into groups=4"):
        bn(_x((6, 3)))


def test_flax_batch_norm_in_a_model_is_named_not_left_ungrouped():
    class Mixed(nnx.Module):
        def __init__(self):
            self.ours = models.BatchNorm(3, rngs=nnx.Rngs(0))
            self.theirs = nnx.BatchNorm(3, rngs=nnx.Rngs(0))

    mixed = Mixed()
    with pytest.raises(ValueError, match=r"flax's and cannot group.*'theirs'"):
        models.set_batch_norm_groups(mixed, 2)
    assert mixed.ours.groups == 1  # refused before any layer changed, not left half grouped
    models.set_batch_norm_groups(Mixed(), 1)  # nothing to group: fine
