"""Trainer parts: optimiser masks, schedules, config checks, variants, models, the step."""

import dataclasses

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest
from flax import nnx

from jaxcl import methods, models, training


def _model():
    return models.ContrastiveModel(
        models.mlp_encoder(6, depth=2, width=8, rngs=nnx.Rngs(0)),
        models.projection_head(8, depth=2, width=8, out_dim=4, rngs=nnx.Rngs(1)),
    )


def test_decay_mask_excludes_batch_norm_and_biases():
    params = nnx.to_pure_dict(nnx.state(_model(), nnx.Param))
    mask = training.decay_mask(params)
    flat = {jax.tree_util.keystr(k): v for k, v in jax.tree_util.tree_leaves_with_path(mask)}
    assert flat and all(("kernel" in k) == v for k, v in flat.items()), flat
    assert any("scale" in k for k in flat) and any("bias" in k for k in flat)


def test_lars_adapts_kernels_only():
    """Kernels get weight decay + trust ratio; BN scale/bias get plain momentum SGD."""
    params = {"kernel": jnp.full((3, 3), 2.0), "scale": jnp.full((3,), 2.0)}
    grads = {"kernel": jnp.full((3, 3), 0.5), "scale": jnp.full((3,), 0.5)}
    lr, wd, eta = 0.1, 0.01, 0.001
    tx = training.make_optimizer("lars", lambda _: lr, weight_decay=wd, trust_coefficient=eta)
    updates, _ = tx.update(grads, tx.init(params), params)
    g = 0.5 + wd * 2.0  # decayed kernel gradient
    trust = eta * np.linalg.norm(np.full(9, 2.0)) / np.linalg.norm(np.full(9, g))
    np.testing.assert_allclose(updates["kernel"], -lr * trust * g, rtol=1e-5)
    np.testing.assert_allclose(updates["scale"], -lr * 0.5, rtol=1e-6)


def test_adamw_decays_kernels_only():
    params = {"kernel": jnp.ones((2, 2)), "bias": jnp.ones((2,))}
    zero = jax.tree.map(jnp.zeros_like, params)
    tx = training.make_optimizer("adam", lambda _: 0.1, weight_decay=0.5)
    updates, _ = tx.update(zero, tx.init(params), params)
    np.testing.assert_allclose(updates["kernel"], -0.1 * 0.5, rtol=1e-6)
    np.testing.assert_allclose(updates["bias"], 0.0)


def test_warmup_then_cosine_without_restarts():
    sched = training.warmup_cosine(peak=2.0, total_steps=100, warmup_steps=10)
    values = np.array([float(sched(s)) for s in range(101)])
    assert values[0] == 0.0
    np.testing.assert_allclose(values[10], 2.0, rtol=1e-6)
    assert np.all(np.diff(values[:11]) > 0)  # linear warm-up
    np.testing.assert_allclose(np.diff(values[:11]), 0.2, rtol=1e-5)
    assert np.all(np.diff(values[10:]) <= 1e-7)  # then monotone decay, no restart
    np.testing.assert_allclose(values[55], 1.0, rtol=1e-5)  # halfway down the cosine
    assert values[100] == pytest.approx(0.0, abs=1e-7)
    no_warmup = training.warmup_cosine(peak=1.0, total_steps=10, warmup_steps=0)
    assert float(no_warmup(0)) == pytest.approx(1.0)


def _config(**method):
    c = training.base_config()
    c.method = ml_collections.ConfigDict({"name": "dacl", **methods.DACL.defaults, **method})
    return c


def test_valid_config_passes():
    training.validate(_config(), methods.DACL.defaults)


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda c: c.optim.__setattr__("lrr", 0.1), "config.optim.lrr is not a known key"),
        (lambda c: c.__setattr__("optimizer", {}), "config.optimizer is not a known key"),
        (lambda c: c.method.__setattr__("beta", 1.0), "config.method.beta is not a known key"),
        (
            lambda c: c.optim.__setattr__("lr", -0.1),
            "config.optim.lr = -0.1: expected a number > 0",
        ),
        (lambda c: c.optim.__setattr__("name", "rmsprop"), "config.optim.name = 'rmsprop'"),
        (lambda c: c.train.__setattr__("batch_size", 0), "config.train.batch_size = 0"),
        (
            lambda c: c.train.__setattr__("epochs", -1),
            "config.train.epochs = -1: expected an integer >= 0",
        ),
        (lambda c: c.data.__setattr__("name", "mnist"), "config.data.name = 'mnist'"),
        (
            lambda c: c.__setattr__(
                "method",
                ml_collections.ConfigDict({"name": "dacl", "alpha": "high", "temperature": 0.5}),
            ),
            "config.method.alpha = 'high': expected a number",
        ),
        (lambda c: c.mesh.__setattr__("data", 0), "config.mesh.data = 0"),
        (
            lambda c: c.data.__setattr__("padding_anchors", ()),
            "config.data.padding_anchors = (): expected a non-empty tuple of finite numbers",
        ),
        (
            lambda c: c.data.__setattr__("padding_anchors", (1.0, float("nan"))),
            "config.data.padding_anchors = (1.0, nan)",
        ),
    ],
)
def test_bad_config_names_the_key(mutate, message):
    c = _config()
    with c.unlocked():
        mutate(c)
    with pytest.raises(training.ConfigError) as err:
        training.validate(c, methods.DACL.defaults)
    assert message in str(err.value), str(err.value)


def test_config_dict_itself_refuses_a_value_of_the_wrong_type():
    c = _config()
    with pytest.raises(TypeError, match="epochs"):
        c.train.epochs = 1.5


def test_missing_key_is_reported():
    c = _config()
    del c.train["log_every_steps"]
    with pytest.raises(training.ConfigError, match="config.train.log_every_steps is missing"):
        training.validate(c, methods.DACL.defaults)


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown method 'simclr'; known methods: "):
        methods.get("simclr")


def test_variants_replace_method_and_update_sections():
    c = _config()
    c.variants = ml_collections.ConfigDict(
        {
            "a": {"method": {"name": "none"}},
            "b": {"method": {"name": "gaussian", "scale": 0.3}, "train": {"epochs": 7}},
        }
    )
    out = training.variant_configs(c)
    assert list(out) == ["a", "b"]
    assert dict(out["a"].method) == {"name": "none"}
    assert out["b"].method.scale == 0.3 and out["b"].train.epochs == 7
    assert out["b"].train.batch_size == c.train.batch_size  # untouched keys survive
    assert all("variants" not in cfg for cfg in out.values())
    table = training.format_table(
        {
            "a": dict(method="none", test_top1=0.5, final_loss=float("nan"), pretrain_seconds=0),
            "b": dict(
                method="gaussian", test_top1=0.8, knn_top1=0.7, final_loss=1.0, pretrain_seconds=2
            ),
        }
    )
    assert "| b | gaussian | 80.0 | 70.0 | 1.0000 | 2.0 |" in table
    assert "| a | none | 50.0 | - | - | 0.0 |" in table  # no training: no loss, not "nan"


def test_mlp_shapes_batch_norm_and_no_bias_before_bn():
    model = models.MLP(5, (7, 3), rngs=nnx.Rngs(0), final_activation=False)
    x = jax.random.normal(jax.random.key(0), (11, 5))
    y = model(x)
    assert y.shape == (11, 3)
    # Training-mode batch norm: each output unit has zero mean over the batch (scale 1, bias 0).
    np.testing.assert_allclose(np.asarray(y).mean(0), 0.0, atol=1e-5)
    assert all(lin.bias is None for lin in model.linears)
    assert np.any(np.asarray(y) < 0)  # no ReLU on the last layer
    hidden = models.MLP(5, (7,), rngs=nnx.Rngs(0))(x)
    assert np.all(np.asarray(hidden) >= 0)


def test_methods_losses_are_finite_and_differentiable():
    x = jax.random.normal(jax.random.key(0), (16, 6))
    y = jnp.arange(16) % 3
    for name, cls in methods.REGISTRY.items():
        # Graph and node methods take jraph batches: tests/test_{graph,node}_methods.py.
        if not cls.pretrains or cls.__module__ in ("jaxcl.methods._graph", "jaxcl.methods._node"):
            continue
        c = training.base_config()
        c.model.encoder_depth, c.model.encoder_width = 2, 8
        c.model.head_depth, c.model.head_width, c.model.embed_dim = 2, 8, 4
        c.method = ml_collections.ConfigDict({"name": name, **cls.defaults})
        method = cls(c)
        model = method.build(6, 3, nnx.Rngs(0))
        graphdef, params, rest = nnx.split(model, nnx.Param, ...)

        def loss(p, rest, method=method, graphdef=graphdef):
            m = nnx.merge(graphdef, p, rest, copy=True)
            return method.loss(m, methods.Batch(x=x, y=y), jax.random.key(1))[0]

        value, grads = jax.jit(jax.value_and_grad(loss))(params, rest)
        assert np.isfinite(value), name
        assert optax.tree.norm(grads) > 0, name


class _ScaledLoss:
    """A stand-in method whose loss is ``batch * sum(encoder output)``: NaN for a NaN batch."""

    def loss(self, model, batch, key):
        del key
        loss = batch * jnp.sum(model.encoder(jnp.ones((2, 6))))
        return loss, {"loss": loss}


def test_default_step_applies_no_update_from_a_non_finite_step_on():
    """Adam's moments and the parameters stay as they were on a NaN step and every step
    after it (the conditional update), and the first bad step is recorded."""
    model = _model()
    graphdef, params, model_state = nnx.split(model, nnx.Param, ...)
    tx = optax.adam(0.1)
    step = jax.jit(
        training.make_default_train_step(_ScaledLoss(), graphdef, tx, lambda s: 0.1),
        donate_argnums=0,
    )
    state = training.TrainState.create(params, model_state, tx)
    key = jax.random.key(0)
    state, _ = step(state, jnp.float32(1.0), key)
    before = jax.tree.map(np.asarray, (state.params, state.opt_state, state.model_state))
    assert int(state.nonfinite_step) == -1
    for batch in (jnp.float32(np.nan), jnp.float32(1.0)):
        state, metrics = step(state, batch, key)
        after = jax.tree.map(np.asarray, (state.params, state.opt_state, state.model_state))
        jax.tree.map(np.testing.assert_array_equal, after, before)
        assert int(state.nonfinite_step) == 1
    assert int(state.step) == 3 and np.isfinite(metrics["loss"])
    # Finite steps do update (the moments too).
    fresh = dataclasses.replace(state, nonfinite_step=jnp.full((), -1, jnp.int32))
    fresh, _ = step(fresh, jnp.float32(1.0), key)
    moved = jax.tree.map(lambda a, b: not np.array_equal(a, b), fresh.opt_state, before[1])
    assert any(jax.tree.leaves(moved))
