"""jaxcl.optim: optimisers by name, schedules, and parameter groups (against hand-computed
updates)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from jaxcl import models, optim


def _model():
    return models.ContrastiveModel(
        models.mlp_encoder(6, depth=2, width=8, rngs=nnx.Rngs(0)),
        models.projection_head(8, depth=2, width=8, out_dim=4, rngs=nnx.Rngs(1)),
    )


def test_decay_mask_excludes_batch_norm_and_biases():
    params = nnx.to_pure_dict(nnx.state(_model(), nnx.Param))
    mask = optim.decay_mask(params)
    flat = {jax.tree_util.keystr(k): v for k, v in jax.tree_util.tree_leaves_with_path(mask)}
    assert flat and all(("kernel" in k) == v for k, v in flat.items()), flat
    assert any("scale" in k for k in flat) and any("bias" in k for k in flat)


def test_lars_adapts_kernels_only():
    """Kernels get weight decay + trust ratio; BN scale/bias get plain momentum SGD."""
    params = {"kernel": jnp.full((3, 3), 2.0), "scale": jnp.full((3,), 2.0)}
    grads = {"kernel": jnp.full((3, 3), 0.5), "scale": jnp.full((3,), 0.5)}
    lr, wd, eta = 0.1, 0.01, 0.001
    tx = optim.make_optimizer("lars", lambda _: lr, weight_decay=wd, trust_coefficient=eta)
    updates, _ = tx.update(grads, tx.init(params), params)
    g = 0.5 + wd * 2.0  # decayed kernel gradient
    trust = eta * np.linalg.norm(np.full(9, 2.0)) / np.linalg.norm(np.full(9, g))
    np.testing.assert_allclose(updates["kernel"], -lr * trust * g, rtol=1e-5)
    np.testing.assert_allclose(updates["scale"], -lr * 0.5, rtol=1e-6)


def test_lars_without_the_trust_ratio_is_momentum_sgd_with_lr_inside_the_momentum():
    # SimCLR's LARS on a layer exempt from adaptation: v = m v + lr g; w -= v.
    params = {"kernel": jnp.full((3, 3), 2.0)}
    g1, g2 = jnp.full((3, 3), 0.5), jnp.full((3, 3), -0.2)
    lrs = {0: 0.1, 1: 0.05}
    tx = optim.make_optimizer("lars", lambda s: jnp.where(s == 0, 0.1, 0.05), trust_ratio=False)
    state = tx.init(params)
    u1, state = tx.update({"kernel": g1}, state, params)
    u2, state = tx.update({"kernel": g2}, state, params)
    np.testing.assert_allclose(u1["kernel"], -lrs[0] * 0.5, rtol=1e-6)
    np.testing.assert_allclose(u2["kernel"], -(0.9 * lrs[0] * 0.5 + lrs[1] * -0.2), rtol=1e-6)


def test_adamw_decays_kernels_only():
    params = {"kernel": jnp.ones((2, 2)), "bias": jnp.ones((2,))}
    zero = jax.tree.map(jnp.zeros_like, params)
    tx = optim.make_optimizer("adam", lambda _: 0.1, weight_decay=0.5)
    updates, _ = tx.update(zero, tx.init(params), params)
    np.testing.assert_allclose(updates["kernel"], -0.1 * 0.5, rtol=1e-6)
    np.testing.assert_allclose(updates["bias"], 0.0)


def test_sgd_decays_kernels_only_unless_told_to_decay_everything():
    # decay_all: torch.optim.SGD(model.parameters(), weight_decay=wd), as MoCo's and i-Mix's
    # code: d = g + wd * w on every parameter, then v = m v + d, w -= lr v.
    params = {"kernel": jnp.full((2, 2), 2.0), "bias": jnp.full((2,), 3.0)}
    grads = {"kernel": jnp.full((2, 2), 0.5), "bias": jnp.full((2,), 0.25)}
    lr, wd = 0.1, 0.01
    masked = optim.make_optimizer("sgd", lambda _: lr, weight_decay=wd)
    every = optim.make_optimizer("sgd", lambda _: lr, weight_decay=wd, decay_all=True)
    u_masked, _ = masked.update(grads, masked.init(params), params)
    u_every, _ = every.update(grads, every.init(params), params)
    np.testing.assert_allclose(u_masked["kernel"], -lr * (0.5 + wd * 2.0), rtol=1e-6)
    np.testing.assert_allclose(u_masked["bias"], -lr * 0.25, rtol=1e-6)
    np.testing.assert_allclose(u_every["kernel"], -lr * (0.5 + wd * 2.0), rtol=1e-6)
    np.testing.assert_allclose(u_every["bias"], -lr * (0.25 + wd * 3.0), rtol=1e-6)


def test_warmup_then_cosine_without_restarts():
    sched = optim.warmup_cosine(peak=2.0, total_steps=100, warmup_steps=10)
    values = np.array([float(sched(s)) for s in range(101)])
    assert values[0] == 0.0
    np.testing.assert_allclose(values[10], 2.0, rtol=1e-6)
    assert np.all(np.diff(values[:11]) > 0)  # linear warm-up
    np.testing.assert_allclose(np.diff(values[:11]), 0.2, rtol=1e-5)
    assert np.all(np.diff(values[10:]) <= 1e-7)  # then monotone decay, no restart
    np.testing.assert_allclose(values[55], 1.0, rtol=1e-5)  # halfway down the cosine
    assert values[100] == pytest.approx(0.0, abs=1e-7)
    no_warmup = optim.warmup_cosine(peak=1.0, total_steps=10, warmup_steps=0)
    assert float(no_warmup(0)) == pytest.approx(1.0)


def test_label_by_path_labels_nnx_state_by_module_path():
    params = nnx.state(_model(), nnx.Param)
    labels = optim.label_by_path([(r"^head/", "head"), (r"/norms/", "bn")], default="encoder")(
        params
    )
    flat = {
        optim.param_path(path): label for path, label in jax.tree_util.tree_leaves_with_path(labels)
    }
    assert flat["head/linears/0/kernel"] == "head"
    assert flat["head/norms/0/scale"] == "head"  # the first matching rule wins
    assert flat["encoder/norms/1/bias"] == "bn"
    assert flat["encoder/linears/0/kernel"] == "encoder"
    with pytest.raises(ValueError, match="rule regex '\\(' does not compile"):
        optim.label_by_path([("(", "x")], default="y")
    # A plain dict's key named "value" is a name like any other (only a Variable's own value
    # attribute is dropped from the path).
    x = jnp.zeros(2)
    plain = optim.label_by_path([("^attn/value$", "v")], default="d")({"attn": {"value": x}})
    assert plain == {"attn": {"value": "v"}}


def test_partition_gives_each_group_its_own_optimiser_and_freezes_a_group():
    params = {"encoder": {"w": jnp.full((3,), 2.0)}, "head": {"w": jnp.full((3,), 2.0)},
              "frozen": {"w": jnp.full((3,), 2.0)}}  # fmt: skip
    grads = jax.tree.map(lambda p: jnp.full_like(p, 0.5), params)
    tx = optim.partition(
        {"encoder": optax.sgd(0.1), "head": optax.sgd(1.0), "frozen": optim.frozen()},
        optim.label_by_path([("^head/", "head"), ("^frozen/", "frozen")], default="encoder"),
    )
    state = tx.init(params)
    p = params
    for _ in range(3):
        updates, state = tx.update(grads, state, p)
        p = optax.apply_updates(p, updates)
    np.testing.assert_allclose(p["encoder"]["w"], 2.0 - 3 * 0.1 * 0.5, rtol=1e-6)
    np.testing.assert_allclose(p["head"]["w"], 2.0 - 3 * 1.0 * 0.5, rtol=1e-6)
    np.testing.assert_array_equal(p["frozen"]["w"], params["frozen"]["w"])


def test_partition_names_a_label_without_a_transformation():
    tx = optim.partition(
        {"encoder": optax.sgd(0.1)},
        optim.label_by_path([("^head/", "head")], default="encoder"),
    )
    with pytest.raises(ValueError, match="parameter 'head/w' has label 'head', which has no"):
        tx.init({"encoder": {"w": jnp.ones(2)}, "head": {"w": jnp.ones(2)}})


def test_a_second_adam_keeps_its_own_moments():
    """Two Adam groups with different rates: each group's moments see only its gradients."""
    params = {"a": jnp.ones(2), "b": jnp.ones(2)}
    tx = optim.partition(
        {"a": optax.adam(0.1), "b": optax.adam(0.01)},
        optim.label_by_path([("^b", "b")], default="a"),
    )
    grads = {"a": jnp.array([1.0, -1.0]), "b": jnp.array([3.0, 3.0])}
    updates, _ = tx.update(grads, tx.init(params), params)
    # Adam's first step is -lr * sign(g) (bias-corrected moments, eps negligible).
    np.testing.assert_allclose(updates["a"], [-0.1, 0.1], rtol=1e-5)
    np.testing.assert_allclose(updates["b"], [-0.01, -0.01], rtol=1e-5)
