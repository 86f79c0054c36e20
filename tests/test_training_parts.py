"""Trainer parts: config checks, variants, models, the default step and its guard."""

import dataclasses
import re

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


def _config(**method):
    c = training.base_config()
    c.method.update(method)
    return c


def test_valid_config_passes():
    training.validate(_config())


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda c: c.optim.__setattr__("lrr", 0.1), "config.optim.lrr is not a known key"),
        (lambda c: c.__setattr__("optimizer", {}), "config.optimizer is not a known key"),
        (
            lambda c: c.method.__setattr__("beta", 1.0),
            "config.method.beta is not a key of method 'dacl'; its keys: ['alpha', 'name', "
            "'temperature']",
        ),
        # Keys of other components: named as not applying to this run.
        (
            lambda c: c.data.__setattr__("padding_anchors", (1.0,)),
            "config.data.padding_anchors does not apply to this run (data 'digits' (tabular), "
            "method 'dacl', encoder 'mlp', optimizer 'lars')",
        ),
        (
            lambda c: c.optim.__setattr__("name", "adam"),
            "config.optim.momentum does not apply to this run",
        ),
        (
            lambda c: c.model.__setattr__("encoder", "gin"),
            "config.model.encoder = 'gin': encodes ['graph'] data, but config.data.name = "
            "'digits' is 'tabular' data",
        ),
        (
            lambda c: c.model.__setattr__("encoder", "vit"),
            "config.model.encoder = 'vit': unknown encoder; known encoders: ['alexnet_half', "
            "'gcn', 'gin', 'mlp', 'mlp_plain', 'resnet']",
        ),
        (
            lambda c: c.model.__setattr__("encoder", "resnet"),
            "config.model.encoder = 'resnet': encodes ['image'] data, but config.data.name = "
            "'digits' is 'tabular' data",
        ),
        (
            lambda c: c.model.__setattr__("compute_dtype", "float16"),
            "config.model.compute_dtype = 'float16': expected one of ['float32', 'bfloat16']",
        ),
        (
            lambda c: c.optim.__setattr__("lr", -0.1),
            "config.optim.lr = -0.1: expected a number > 0",
        ),
        (lambda c: c.optim.__setattr__("name", "rmsprop"), "config.optim.name = 'rmsprop'"),
        (
            lambda c: c.optim.__setattr__("lr", float("inf")),
            "config.optim.lr = inf: expected a finite",
        ),
        (lambda c: c.train.__setattr__("batch_size", 0), "config.train.batch_size = 0"),
        (
            lambda c: c.train.__setattr__("epochs", -1),
            "config.train.epochs = -1: expected an integer >= 0",
        ),
        (lambda c: c.data.__setattr__("name", "mnist"), "config.data.name = 'mnist': unknown data"),
        (
            lambda c: c.data.__setattr__("name", "cora"),
            "config.method.name = 'dacl': trains on ['tabular', 'image'] data, but "
            "config.data.name = 'cora' is 'node' data",
        ),
        (
            lambda c: c.__setattr__(
                "method",
                ml_collections.ConfigDict({"name": "dacl", "alpha": "high", "temperature": 0.5}),
            ),
            "config.method.alpha = 'high': expected a number",
        ),
        (lambda c: c.mesh.__setattr__("data", 0), "config.mesh.data = 0"),
        # A momentum of 1 or more lets SGD/LARS's velocity grow without bound.
        (
            lambda c: c.optim.__setattr__("momentum", 9.0),
            "config.optim.momentum = 9.0: expected a number in [0, 1)",
        ),
        (
            lambda c: c.optim.__setattr__("momentum", 1.0),
            "config.optim.momentum = 1.0: expected a number in [0, 1)",
        ),
    ],
)
def test_bad_config_names_the_key(mutate, message):
    c = _config()
    with c.unlocked():
        mutate(c)
    with pytest.raises(training.ConfigError) as err:
        training.validate(c)
    assert message in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        # Used only once pretraining is over (the first evaluation): refused before it.
        ("eval.eval_batch_size", 0, "config.eval.eval_batch_size = 0: expected an integer >= 1"),
        ("eval.eval_batch_size", -4, "expected an integer >= 1"),
        ("data.workers", -1, "config.data.workers = -1: expected an integer >= 0"),
        ("data.image_size", -3, "config.data.image_size = -3: expected an integer >= 0"),
    ],
)
def test_bad_image_task_keys_are_refused_before_the_run(key, value, message):
    c = training.base_config("fashion_mnist_images", "simclr")
    section, name = key.split(".")
    with c.unlocked():
        c[section][name] = value
    with pytest.raises(training.ConfigError, match=re.escape(message)):
        training.validate(c)


def test_more_data_devices_than_exist_is_a_config_error_before_the_workdir(tmp_path):
    c = _config()
    with c.unlocked():
        c.mesh.data = jax.device_count() + 1
    match = rf"config.mesh.data = {jax.device_count() + 1}: expected -1 \(all\)"
    with pytest.raises(training.ConfigError, match=match):
        training.train_and_evaluate(c, str(tmp_path / "run"))
    assert not (tmp_path / "run").exists()  # nothing written for a run that cannot start


def test_a_warm_up_as_long_as_the_run_is_reported(monkeypatch):
    """The schedule cuts a warm-up longer than the run to its last step (no decay at all):
    said in the log when the run is built, not left to be found in the learning-rate curve."""
    from jaxcl.training import _mesh, _run

    warnings = []
    monkeypatch.setattr(_run.logging, "warning", lambda msg, *a: warnings.append(msg % a))
    for epochs, warmup in ((2, 10.0), (2, 2.0), (10, 2.0)):
        c = _config()
        with c.unlocked():
            c.train.epochs, c.optim.warmup_epochs, c.train.batch_size = epochs, warmup, 256
        method = methods.get(c.method.name)(c)
        _run.Run.build(c, method, _mesh.make_mesh(1))
    cut = [w for w in warnings if "is as long as the run" in w]
    assert len(cut) == 2, warnings  # 10 and 2 warm-up epochs of 2: cut; 2 of 10: not
    assert "warmup_epochs = 10.0 is as long as the run (train.epochs = 2)" in cut[0]


@pytest.mark.parametrize(
    "anchors, message",
    [
        ((), "config.data.padding_anchors = (): expected a non-empty tuple of finite numbers"),
        ((1.0, float("nan")), "config.data.padding_anchors = (1.0, nan)"),
    ],
)
def test_bad_graph_config_names_the_key(anchors, message):
    c = training.base_config("mutag", "dacl_graph", optimizer="adam")
    c.data.padding_anchors = anchors
    with pytest.raises(training.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        training.validate(c)


def test_a_config_holds_exactly_the_keys_that_apply():
    """No key that the run does not read: no optimiser or schedule without pretraining, no
    batch size for full-graph steps, no head sizes for a method without a head, the
    linear-protocol keys only with the linear protocol."""
    none = training.base_config("digits", "none")
    assert "optim" not in none and dict(none.train) == {}
    assert set(none.model) == {"encoder", "compute_dtype", "encoder_depth", "encoder_width"}
    grace = training.base_config("cora", "grace", optimizer="adam_l2")
    assert "batch_size" not in grace.train and set(grace.optim) == {
        "name", "lr", "weight_decay", "warmup_epochs", "schedule"
    }  # fmt: skip
    mvgrl = training.base_config("cora", "mvgrl")
    assert "head_width" not in mvgrl.model
    sup = training.base_config("digits", "supervised")
    assert "linear_epochs" not in sup.eval and "knn_every_epochs" not in sup.train
    svm = training.base_config("mutag", "infograph", optimizer="adam")
    svm.eval.graph_protocol = "svm"
    with pytest.raises(training.ConfigError, match="eval.graph_linear_lr does not apply"):
        training.validate(svm)
    fixed = training.conform(svm)
    assert "graph_linear_lr" not in fixed.eval and fixed.eval.svm_jobs == -1
    training.validate(fixed)
    for bad in (0, -2):
        fixed.eval.svm_jobs = bad
        with pytest.raises(training.ConfigError, match=f"config.eval.svm_jobs = {bad}"):
            training.validate(fixed)
    # The one config grammar: an unknown component name is named with the known ones.
    with pytest.raises(training.ConfigError, match="config.data.name = 'cifar': unknown"):
        training.base_config("cifar", "dacl")
    with pytest.raises(training.ConfigError, match="unknown method 'swav'"):
        training.base_config("digits", "swav")


def test_config_dict_itself_refuses_a_value_of_the_wrong_type():
    c = _config()
    with pytest.raises(TypeError, match="epochs"):
        c.train.epochs = 1.5


def test_missing_key_is_reported():
    c = _config()
    del c.train["log_every_steps"]
    with pytest.raises(training.ConfigError, match="config.train.log_every_steps is missing"):
        training.validate(c)


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown method 'swav'; known methods: .*'simclr'"):
        methods.get("swav")


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
    # No pretraining: the optimiser, training and head keys do not apply and are dropped.
    assert "optim" not in out["a"] and "head_depth" not in out["a"].model
    # A variant's method takes the method's defaults for what it leaves out.
    assert (
        out["b"].method.scale == 0.3
        and out["b"].method.temperature == methods.GaussianNoise.defaults["temperature"]
    )
    assert out["b"].train.epochs == 7
    assert out["b"].train.batch_size == c.train.batch_size  # untouched keys survive
    for cfg in out.values():
        training.validate(cfg)
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
    tabular = [
        n
        for n, cls in methods.REGISTRY.items()
        if "tabular" in cls.data_kinds and cls.__module__.startswith("jaxcl.")
    ]
    assert {"dacl", "dacl_plus", "gaussian", "npair", "imix", "supervised"} <= set(tabular)
    for name in tabular:
        cls = methods.get(name)
        # Graph and node methods take jraph batches: tests/test_{graph,node}_methods.py.
        if not cls.pretrains:
            continue
        c = training.base_config("digits", name)
        c.model.encoder_depth, c.model.encoder_width = 2, 8
        if "head_depth" in c.model:
            c.model.head_depth, c.model.head_width, c.model.embed_dim = 2, 8, 4
        method = cls(c)
        model = method.build(methods.DataSpec("tabular", 6, 3), nnx.Rngs(0))
        graphdef, params, rest = nnx.split(model, nnx.Param, ...)

        def loss(p, rest, method=method, graphdef=graphdef):
            m = nnx.merge(graphdef, p, rest, copy=True)
            return method.loss(m, methods.Batch(x=x, y=y), jax.random.key(1), {})[0]

        value, grads = jax.jit(jax.value_and_grad(loss))(params, rest)
        assert np.isfinite(value), name
        assert optax.tree.norm(grads) > 0, name


class _ScaledLoss(methods.Method):
    """A stand-in method whose loss is ``batch * sum(encoder output)``: NaN for a NaN batch."""

    name = "scaled_loss_test"

    def __init__(self):
        pass

    def loss(self, model, batch, key, extra):
        del key, extra
        loss = batch * jnp.sum(model.encoder(jnp.ones((2, 6))))
        return loss, {"loss": loss}


def test_default_step_applies_no_update_from_a_non_finite_step_on():
    """Adam's moments and the parameters stay as they were on a NaN step and every step
    after it (the conditional update), and the first bad step is recorded."""
    model = _model()
    graphdef, params, model_state = nnx.split(model, nnx.Param, ...)
    tx = optax.adam(0.1)
    ctx = training.StepContext(_ScaledLoss(), graphdef, tx, lambda s: 0.1, None)
    step = jax.jit(training.make_default_train_step(ctx), donate_argnums=0)
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
    assert float(state.last_loss) == float(metrics["loss"])  # the last step's loss, kept
    # Finite steps do update (the moments too).
    fresh = dataclasses.replace(state, nonfinite_step=jnp.full((), -1, jnp.int32))
    fresh, _ = step(fresh, jnp.float32(1.0), key)
    moved = jax.tree.map(lambda a, b: not np.array_equal(a, b), fresh.opt_state, before[1])
    assert any(jax.tree.leaves(moved))


def test_repeats_summarise_runs_by_mean_and_sample_std(tmp_path, monkeypatch):
    """The spread over seeds is the sample std (n - 1), as the README's tables report it."""
    from jaxcl.training import _sweep

    scores = {0: 0.8728, 1: 0.8675, 2: 0.8564}
    monkeypatch.setattr(
        _sweep,
        "train_and_evaluate",
        lambda cfg, workdir: {"method": "m", "data": "d", "test_top1": scores[cfg.seed]},
    )
    c = _config()
    with c.unlocked():
        c.repeats = 3
    summary = _sweep.run_repeats(c, str(tmp_path))
    values = list(scores.values())
    assert summary["test_top1"] == pytest.approx(np.mean(values))
    assert summary["test_top1_std"] == pytest.approx(np.std(values, ddof=1))  # 0.0084, not 0.0069
    assert [r["test_top1"] for r in summary["runs"]] == values


@pytest.mark.parametrize("depth", [0, -3, 1.5, True])
def test_mlp_depth_is_checked_by_name(depth):
    """``projection_head(depth=0)`` used to build one layer without a word."""
    with pytest.raises(ValueError, match=r"projection_head: `depth` must be an int >= 1"):
        models.projection_head(8, depth=depth, width=8, out_dim=4, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"mlp_encoder: `depth` must be an int >= 1"):
        models.mlp_encoder(8, depth=depth, width=8, rngs=nnx.Rngs(0))


def test_a_changed_config_on_resume_is_kept_and_its_changed_keys_logged(tmp_path, monkeypatch):
    from jaxcl.training import _workdir

    warnings = []
    monkeypatch.setattr(_workdir.logging, "warning", lambda msg, *a: warnings.append(msg % a))
    c = _config()
    _workdir.save_config(c, str(tmp_path))
    with c.unlocked():
        c.train.epochs, c.optim.lr = c.train.epochs + 5, 0.5
    _workdir.save_config(c, str(tmp_path))
    assert (tmp_path / "config.1.json").exists()
    (warning,) = warnings
    assert "optim.lr: " in warning and "-> 0.5" in warning
    assert f"train.epochs: {c.train.epochs - 5} -> {c.train.epochs}" in warning


def test_progress_rates_leave_out_evaluations_and_the_compiling_window(monkeypatch):
    from jaxcl.training import _logging

    clock = [0.0]
    monkeypatch.setattr(_logging.time, "perf_counter", lambda: clock[0])
    p = _logging.Progress("m", total_steps=100, batch_size=10)
    clock[0] = 50.0  # the first window: 10 steps and the compile
    assert p.update(10, {}) == {}  # its rate (0.2, the compile's) is not logged
    assert p.rate is None  # no ETA from the compiling window
    clock[0] = 60.0  # 10 steps in 5 s of training and a 5 s evaluation
    p.pause(5.0)
    assert p.update(20, {})["steps_per_sec"] == pytest.approx(2.0)
    assert p.rate == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("encoder", "key", "value", "message"),
    [
        ("resnet", "resnet_depth", 101, "resnet_depth = 101: expected one of [18, 34, 50]"),
        ("resnet", "width_multiplier", 0, "width_multiplier = 0: expected an integer >= 1"),
        ("resnet", "base_width", -8, "config.model.base_width = -8: expected an integer >= 0"),
        ("resnet", "resnet_stem", "tiny", "config.model.resnet_stem = 'tiny': expected one of"),
        ("resnet", "base_width", 16, "base_width = 16: expected 0 with model.width_multiplier = 2"),
        ("alexnet_half", "representation", "pool5", "config.model.representation = 'pool5'"),
        ("alexnet_half", "alexnet_width", 0.0, "alexnet_width = 0.0: expected a number > 0"),
        (None, "linear_augment", None, "config.eval.linear_augment = None: expected True or False"),
    ],
)  # fmt: skip
def test_image_encoder_and_probe_keys_are_checked_before_any_work(encoder, key, value, message):
    """These keys used to go unchecked: a ResNet-101 failed with a traceback once the data
    were loaded, and a linear_augment of None or 'False' was read by its truth value."""
    c = training.base_config("fashion_mnist_images", "simclr", encoder=encoder or "resnet")
    with c.unlocked():
        if (key, value) == ("base_width", 16):
            c.model.width_multiplier = 2
        (c.eval if encoder is None else c.model)[key] = value
    with pytest.raises(training.ConfigError) as err:
        training.validate(c)
    assert message in str(err.value)


def test_a_mesh_that_leaves_a_process_without_its_share_is_a_config_error(monkeypatch):
    """On two processes, mesh.data = 4 of 8 devices took all four from process 0 while
    each process still placed half of every batch, and JAX failed deep in its placement."""
    import types

    from jaxcl.training import _mesh

    fake = [types.SimpleNamespace(process_index=i // 4) for i in range(8)]
    monkeypatch.setattr(_mesh.jax, "process_count", lambda: 2)
    monkeypatch.setattr(_mesh.jax, "device_count", lambda: 8)
    monkeypatch.setattr(_mesh.jax, "devices", lambda: fake)
    with pytest.raises(training.ConfigError, match=r"mesh.data = 4: these 4 devices come \[4, 0\]"):
        _mesh.make_mesh(4)
    with pytest.raises(training.ConfigError, match=r"come \[4, 1\] from each of the 2"):
        _mesh.make_mesh(5)
