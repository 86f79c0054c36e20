"""MoCo v2 and BYOL (with and without i-Mix): their losses against NumPy, the EMA targets,
the queue, BYOL's cosine momentum, and the hyperparameter checks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcl import losses, methods, models, training
from jaxcl.methods import _images, _momentum


class Flat(nnx.Module):
    def __init__(self, pixels, width, rngs):
        self.linear = nnx.Linear(pixels, width, rngs=rngs)

    def __call__(self, x):
        return self.linear(x.reshape(x.shape[0], -1))


def _batch(n=8, seed=0):
    x = np.random.default_rng(seed).integers(0, 256, (n, 6, 6, 3), np.uint8)
    return methods.Batch(x=jnp.asarray(x), y=jnp.zeros(n, jnp.int32))


def _method(name, **hp):
    config = training.base_config("cifar10", name)
    config.model.embed_dim = 4
    config.train.batch_size = 8  # (the queues of 16 rows take whole batches of _batch's 8)
    config.method.update(hp)
    return methods.get(name)(config)


def _moco_model(seed=0):
    rngs = nnx.Rngs(seed)
    return models.ContrastiveModel(Flat(108, 10, rngs), nnx.Linear(10, 4, rngs=rngs))


def _np_normalize(x):
    x = np.asarray(x, np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _np_ce_rows(logits, targets):
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -np.asarray([logp[i, t] for i, t in enumerate(targets)])


def _np_ce(logits, targets):
    return float(np.mean(_np_ce_rows(logits, targets)))


def _filled_queue(method, rows):
    queue = methods.queue_init(method.hp.queue_size, 4)
    return methods.enqueue(queue, jnp.asarray(_np_normalize(rows), jnp.float32))


def test_moco_loss_is_infonce_over_own_key_and_written_queue_rows():
    method = _method("moco", queue_size=16, temperature=0.2)
    model = _moco_model()
    extra = method.init_extra(model, jax.random.key(0))
    # Perturb the target so that query and key networks differ.
    extra["target"] = jax.tree.map(lambda t: t * 0.9, extra["target"])
    rows = np.random.default_rng(1).normal(size=(8, 4))
    extra["queue"] = _filled_queue(method, rows)  # 8 of 16 rows written
    batch, key = _batch(), jax.random.key(3)
    loss, metrics, keys = method.loss(model, batch, key, extra)

    a, b = _images.simclr_views(jax.random.split(key)[0], batch.x, method.hp)
    q = _np_normalize(model(a))
    target = _moco_model()
    nnx.update(target, {"encoder": extra["target"]["encoder"], "head": extra["target"]["head"]})
    k = _np_normalize(target(b))
    np.testing.assert_allclose(keys, k, atol=1e-5)
    logits = np.concatenate([np.sum(q * k, 1, keepdims=True), q @ _np_normalize(rows).T], 1)
    want = _np_ce(logits / 0.2, [0] * 8)
    np.testing.assert_allclose(float(loss), want, rtol=1e-4)
    assert float(metrics["queue_filled"]) == 8.0


def test_imix_moco_uses_the_batch_keys_and_the_queue():
    method = _method("imix_moco", queue_size=16, temperature=0.2, alpha=1.0)
    q = jax.random.normal(jax.random.key(0), (8, 4))
    k = losses.l2_normalize(jax.random.normal(jax.random.key(1), (8, 4)))
    queue = _filled_queue(method, np.random.default_rng(2).normal(size=(4, 4)))
    perm = jnp.asarray(np.random.default_rng(3).permutation(8))
    got = method.contrast(q, k, jnp.float32(0.7), perm, queue)
    qn, kn = _np_normalize(q), _np_normalize(k)
    logits = np.concatenate([qn @ kn.T, qn @ _np_normalize(np.asarray(queue["keys"][:4])).T], 1)
    logits = logits / 0.2
    want = 0.7 * _np_ce(logits, range(8)) + 0.3 * _np_ce(logits, np.asarray(perm))
    np.testing.assert_allclose(float(got), want, rtol=1e-4)


@pytest.mark.parametrize("per_sample", [False, True])
def test_imix_moco_loss_mixes_the_queries_and_keeps_the_keys_unmixed(per_sample):
    """The whole loss: queries of the mixed first view, keys of the unmixed second view from
    the target network, logits against the batch's keys then the queue's written rows, and
    the virtual labels lam on i and 1 - lam on perm(i) (lam per batch, or row i's own)."""
    from jaxcl import mixers

    method = _method(
        "imix_moco", queue_size=16, temperature=0.2, alpha=1.0, lam_per_sample=per_sample
    )
    model = _moco_model()
    extra = method.init_extra(model, jax.random.key(0))
    extra["target"] = jax.tree.map(lambda t: t * 0.9, extra["target"])
    rows = np.random.default_rng(1).normal(size=(8, 4))
    extra["queue"] = _filled_queue(method, rows)
    batch, key = _batch(), jax.random.key(3)
    loss, metrics, keys = method.loss(model, batch, key, extra)

    view_key, mix_key = jax.random.split(key)
    a, b = _images.simclr_views(view_key, batch.x, method.hp)
    mixed, lam, perm = mixers.imix_mixup(mix_key, a, alpha=1.0, per_sample=per_sample)
    lam = np.asarray(lam)
    assert not np.array_equal(np.asarray(perm), np.arange(8))
    if per_sample:  # one folded lam per row, and not all the same
        assert lam.shape == (8,) and np.all(lam >= 0.5) and np.ptp(lam) > 0.05
    else:
        assert lam.shape == () and 0.05 < float(lam) < 0.95
    assert float(metrics["lam"]) == pytest.approx(float(np.mean(lam)))
    target = _moco_model()
    nnx.update(target, {"encoder": extra["target"]["encoder"], "head": extra["target"]["head"]})
    k = _np_normalize(target(b))
    np.testing.assert_allclose(keys, k, atol=1e-5)  # the unmixed view's keys are enqueued

    def want(q):
        logits = np.concatenate([q @ k.T, q @ _np_normalize(rows).T], 1) / 0.2
        own, other = _np_ce_rows(logits, range(8)), _np_ce_rows(logits, np.asarray(perm))
        return float(np.mean(lam * own + (1 - lam) * other))

    np.testing.assert_allclose(float(loss), want(_np_normalize(model(mixed))), rtol=1e-4)
    assert abs(float(loss) - want(_np_normalize(model(a)))) > 1e-3  # the queries are mixed


def test_moco_after_update_moves_the_target_and_enqueues_the_keys():
    method = _method("moco", queue_size=16, momentum=0.9)
    model = _moco_model()
    extra = method.init_extra(model, jax.random.key(0))
    params = jax.tree.map(lambda p: p + 1.0, nnx.state(model, nnx.Param))
    keys = losses.l2_normalize(jax.random.normal(jax.random.key(1), (8, 4)))
    new = method.after_update(
        params=params, model_state=None, extra=extra, outputs=keys, step=jnp.int32(0)
    )
    for t_new, t_old, p in zip(
        jax.tree.leaves(new["target"]),
        jax.tree.leaves(extra["target"]),
        jax.tree.leaves({"encoder": params["encoder"], "head": params["head"]}),
        strict=True,
    ):
        np.testing.assert_allclose(t_new, 0.9 * t_old + 0.1 * p, rtol=1e-6)
    np.testing.assert_array_equal(new["queue"]["keys"][:8], keys)
    assert int(new["queue"]["filled"]) == 8


def test_byol_cosine_momentum_goes_from_base_to_one():
    steps = jnp.arange(0, 101)
    tau = np.asarray(_momentum.cosine_momentum(steps, 0.99, 100))
    assert tau[0] == pytest.approx(0.99) and tau[-1] == pytest.approx(1.0)
    assert tau[50] == pytest.approx(0.995, abs=1e-6)
    assert np.all(np.diff(tau) >= 0)


def _byol_model(seed=0):
    rngs = nnx.Rngs(seed)
    return _momentum.BYOLModel(
        Flat(108, 10, rngs), nnx.Linear(10, 4, rngs=rngs), nnx.Linear(4, 4, rngs=rngs)
    )


@pytest.mark.parametrize(
    "name, per_sample", [("byol", False), ("imix_byol", False), ("imix_byol", True)]
)
def test_byol_loss_is_the_symmetric_regression(name, per_sample):
    method = _method(name, **({"lam_per_sample": True} if per_sample else {}))
    model = _byol_model()
    extra = method.init_extra(model, jax.random.key(0))
    extra["target"] = jax.tree.map(lambda t: t * 1.1, extra["target"])
    batch, key = _batch(), jax.random.key(5)
    loss, metrics = method.loss(model, batch, key, extra)

    k_views, k_mix = jax.random.split(key)
    a, b = _momentum.byol_views(k_views, batch.x)
    a_in, b_in, (lam_a, lam_b), (perm_a, perm_b) = method.mix(k_mix, a, b)
    target = _byol_model()
    nnx.update(target, {"encoder": extra["target"]["encoder"], "head": extra["target"]["head"]})
    z_a, z_b = (_np_normalize(target.head(target.encoder(v))) for v in (a, b))
    p_a, p_b = _np_normalize(model(a_in)), _np_normalize(model(b_in))

    def regression(p, z, lam, perm):  # lam: () or one per row
        lam, perm = np.asarray(lam), np.asarray(perm)
        cos = lam * np.sum(p * z, 1) + (1 - lam) * np.sum(p * z[perm], 1)
        return np.mean(2 - 2 * cos)

    want = regression(p_a, z_b, lam_a, perm_a) + regression(p_b, z_a, lam_b, perm_b)
    np.testing.assert_allclose(float(loss), want, rtol=1e-4)
    lams = np.concatenate([np.ravel(lam_a), np.ravel(lam_b)])
    assert float(metrics["lam"]) == pytest.approx(float(np.mean(lams)))  # both directions
    if name == "byol":
        assert np.all(lams == 1.0)
    elif per_sample:  # each direction its own folded lam per row
        assert np.shape(lam_a) == np.shape(lam_b) == (8,) and np.all(lams >= 0.5)
        assert not np.allclose(lam_a, lam_b) and not np.array_equal(a_in, a)
    else:
        assert np.shape(lam_a) == () and 0.0 <= float(lam_a) <= 1.0
        assert not np.array_equal(a_in, a)


def test_byol_after_update_follows_the_run_length():
    method = _method("byol", base_momentum=0.9)
    method.total_steps = 10
    model = _byol_model()
    extra = method.init_extra(model, jax.random.key(0))
    params = jax.tree.map(lambda p: p + 1.0, nnx.state(model, nnx.Param))
    last = method.after_update(
        params=params, model_state=None, extra=extra, outputs=None, step=jnp.int32(10)
    )
    jax.tree.map(np.testing.assert_allclose, last["target"], extra["target"])  # tau = 1
    first = method.after_update(
        params=params, model_state=None, extra=extra, outputs=None, step=jnp.int32(0)
    )
    jax.tree.map(
        lambda n, o: np.testing.assert_allclose(n, o + 0.1, atol=1e-6),
        first["target"],
        extra["target"],
    )


def test_byol_after_update_refuses_an_unknown_run_length():
    # without the run's length the cosine schedule has no end: refused, not tau = 1 forever
    method = _method("byol")
    model = _byol_model()
    extra = method.init_extra(model, jax.random.key(0))
    params = nnx.state(model, nnx.Param)
    with pytest.raises(ValueError, match="`total_steps` is None"):
        method.after_update(
            params=params, model_state=None, extra=extra, outputs=None, step=jnp.int32(0)
        )


def _head_layers(head):
    """(linear has a bias, followed by batch norm) for each layer of an MLP head."""
    return [(lin.bias is not None, i < len(head.norms)) for i, lin in enumerate(head.linears)]


@pytest.mark.parametrize("name", ["moco", "imix_moco", "byol", "imix_byol", "simclr"])
def test_heads_follow_imix_code_output_batch_norm(name):
    # i-Mix's code: MoCo and BYOL heads (`--proj mlpbn1 --pred mlpbn1`) end in a plain Linear
    # with a bias; SimCLR / N-pair (`--proj mlpbn`) end in Linear -> BN
    config = training.base_config("cifar10", name)
    config.model.head_width = 16
    config.model.embed_dim = 8
    method = methods.get(name)(config)
    model = method.build(methods.DataSpec("image", 0, 10, (8, 8, 3)), nnx.Rngs(0))
    heads = [model.head] + ([model.predictor] if "byol" in name else [])
    for head in heads:
        depth = len(head.linears)
        if name == "simclr":
            assert _head_layers(head) == [(False, True)] * depth
        else:
            assert _head_layers(head) == [(False, True)] * (depth - 1) + [(True, False)]
    # the option is the config's: MoCo with `head_output_norm=True` gets SimCLR's head
    if name == "moco":
        config.model.head_output_norm = True
        model = methods.get(name)(config).build(
            methods.DataSpec("image", 0, 10, (8, 8, 3)), nnx.Rngs(0)
        )
        assert _head_layers(model.head) == [(False, True), (False, True)]


class FlatBN(nnx.Module):
    """A linear layer then jaxcl's batch norm: an encoder whose output depends on its batch."""

    def __init__(self, pixels, width, rngs):
        self.linear = nnx.Linear(pixels, width, rngs=rngs)
        self.norm = models.BatchNorm(width, rngs=rngs)

    def __call__(self, x):
        return self.norm(self.linear(x.reshape(x.shape[0], -1)))


def _bn_model(kind, groups=1, seed=0):
    rngs = nnx.Rngs(seed)
    encoder, head = FlatBN(108, 10, rngs), nnx.Linear(10, 4, rngs=rngs)
    if kind == "moco":
        model = models.ContrastiveModel(encoder, head)
    else:
        model = _momentum.BYOLModel(encoder, head, nnx.Linear(4, 4, rngs=rngs))
    return models.set_batch_norm_groups(model, groups)


def _per_slice(fn, x, slices):
    """``fn`` on each of ``slices`` equal slices of ``x`` as its own batch, concatenated."""
    return jnp.concatenate([fn(part) for part in jnp.split(x, slices)])


def _with_target(kind, extra):
    target = _bn_model(kind)
    nnx.update(target, {"encoder": extra["target"]["encoder"], "head": extra["target"]["head"]})
    return target


def test_moco_shuffle_bn_normalises_queries_and_shuffled_keys_per_slice():
    # i-Mix's `--bn shuffle` on 2 GPUs: each GPU's queries with their own statistics, the keys
    # shuffled across the GPUs before the key encoder and put back after
    method = _method("moco", queue_size=16, temperature=0.2, bn_groups=2)
    model = _bn_model("moco", groups=2)
    extra = method.init_extra(model, jax.random.key(0))
    extra["target"] = jax.tree.map(lambda t: t * 0.9, extra["target"])
    batch, key = _batch(), jax.random.key(3)
    loss, _, keys = method.loss(model, batch, key, extra)

    a, b = _images.simclr_views(jax.random.split(key)[0], batch.x, method.hp)
    online, target = _bn_model("moco"), _with_target("moco", extra)  # global statistics
    order = np.asarray(jax.random.permutation(jax.random.fold_in(key, _momentum._SHUFFLE), 8))
    assert not np.array_equal(order, np.arange(8))
    k = np.empty((8, 4))
    k[order] = _np_normalize(_per_slice(target, b[order], 2))
    np.testing.assert_allclose(keys, k, atol=1e-5)
    unshuffled = _np_normalize(_per_slice(target, b, 2))
    assert np.abs(unshuffled - k).max() > 1e-2  # the shuffle changes the keys
    q = _np_normalize(_per_slice(online, a, 2))
    logits = np.sum(q * k, 1, keepdims=True)  # an empty queue: the positives alone
    np.testing.assert_allclose(float(loss), _np_ce(logits / 0.2, [0] * 8), atol=1e-5)


def test_byol_shuffle_bn_slices_each_view_and_shuffles_within_it():
    # BYOL's calls take both views (2N): 2G slices, G per view; each view's target batch is
    # shuffled within the view
    method = _method("byol", bn_groups=2)
    model = _bn_model("byol", groups=4)
    extra = method.init_extra(model, jax.random.key(0))
    extra["target"] = jax.tree.map(lambda t: t * 1.1, extra["target"])
    batch, key = _batch(), jax.random.key(5)
    loss, _ = method.loss(model, batch, key, extra)

    a, b = _momentum.byol_views(jax.random.split(key)[0], batch.x)
    online, target = _bn_model("byol"), _with_target("byol", extra)
    k_a, k_b = jax.random.split(jax.random.fold_in(key, _momentum._SHUFFLE))
    z = []
    for view, k in ((a, k_a), (b, k_b)):
        order = np.asarray(jax.random.permutation(k, 8))
        out = np.empty((8, 4))
        out[order] = _per_slice(lambda v: target.head(target.encoder(v)), view[order], 2)
        z.append(_np_normalize(out))
    p_a, p_b = (_np_normalize(_per_slice(online, v, 2)) for v in (a, b))
    want = np.mean(2 - 2 * np.sum(p_a * z[1], 1)) + np.mean(2 - 2 * np.sum(p_b * z[0], 1))
    np.testing.assert_allclose(float(loss), want, rtol=1e-4)


@pytest.mark.parametrize("name, slices", [("moco", 2), ("imix_moco", 2), ("byol", 4)])
def test_bn_groups_reach_every_batch_norm_of_the_built_model(name, slices):
    config = training.base_config("cifar10", name)
    config.model.update(head_width=16, embed_dim=8, resnet_depth=18, base_width=4)
    config.method.bn_groups = 2
    model = methods.get(name)(config).build(
        methods.DataSpec("image", 0, 10, (8, 8, 3)), nnx.Rngs(0)
    )
    norms = [m for _, m in nnx.iter_modules(model) if isinstance(m, nnx.BatchNorm)]
    assert len(norms) > 10 and {m.groups for m in norms} == {slices}


@pytest.mark.parametrize(
    "name, key, value, match",
    [
        ("moco", "momentum", 1.0, r"momentum = 1.0: expected a number in \[0, 1\)"),
        ("moco", "queue_size", -1, "queue_size = -1: expected an int >= 1"),
        ("moco", "queue_size", 0, "queue_size = 0: expected an int >= 1"),
        ("imix_moco", "mix", "cutout", "mix = 'cutout': expected one of"),
        ("imix_byol", "alpha", 0.0, r"alpha = 0.0: expected a number in \(0.0, inf\)"),
        ("byol", "base_momentum", -0.1, "base_momentum = -0.1"),
        ("moco", "bn_groups", 0, "bn_groups = 0: expected an int >= 1"),
        ("byol", "bn_groups", -2, "bn_groups = -2: expected an int >= 1"),
        (
            "moco",
            "bn_groups",
            3,
            r"bn_groups = 3: config.train.batch_size = \d+ is not a multiple of it",
        ),
    ],
)
def test_bad_momentum_hyperparameters_are_refused(name, key, value, match):
    config = training.base_config("cifar10", name)
    config.method[key] = value
    with pytest.raises(training.ConfigError, match=match):
        training.validate(config)


@pytest.mark.parametrize(("name", "key"), [("byol", "base_momentum"), ("moco", "momentum")])
def test_a_bool_momentum_is_refused(name, key):
    # a ConfigDict casts False into a float field (0.0), but a key set anew keeps the bool,
    # which passed 0 <= False < 1 and trained with a momentum of 0
    config = training.base_config("cifar10", name)
    with config.unlocked():
        del config.method[key]
        config.method[key] = False
    with pytest.raises(ValueError, match=rf"config.method.{key} = False: expected a number"):
        methods.get(name)(config)


@pytest.mark.parametrize("name", ["moco", "imix_moco"])
def test_queue_size_must_be_a_multiple_of_the_batch_when_built(name):
    # enqueue needs each device's ring (queue_size / n rows) to take whole batches of its
    # batch_size / n rows: queue_size % batch_size == 0 on any n; else the first step failed
    config = training.base_config("cifar10", name)
    config.train.batch_size = 96
    match = r"config.method.queue_size = 4096: expected a multiple of config.train.batch_size = 96"
    with pytest.raises(training.ConfigError, match=match):
        training.validate(config)
    config.train.batch_size = 128
    training.validate(config)
    # (validate refuses any non-finite number; the method built alone now does too)
    config.method.temperature = float("nan")
    with pytest.raises(ValueError, match=rf"config.method.temperature = nan: .* \({name}\)"):
        methods.get(name)(config)


def _image_table():
    """``experiments/imix/image_table.py`` as a module."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[1] / "experiments/imix/image_table.py"
    spec = importlib.util.spec_from_file_location("image_table", path)
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    return table


def test_image_table_plot_names_the_runs_data_set(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = _image_table()
    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    row = {m: [80.0, 81.0] for m in table.METRICS}
    row.update({f"{m}_summary": {"mean": 80.5} for m in table.METRICS})
    result = {6: {"rows": {table.ORDER[0]: row}, "gaps": {}}}
    for data, want in [("cifar100", "CIFAR-100"), ("fashion_mnist_images", "Fashion-MNIST")]:
        table.plot(result, str(tmp_path / f"{data}.png"), data=data)
        assert figures[-1].axes[0].get_ylabel() == f"{want} test top-1 (%)"


def test_image_table_pairs_each_imix_run_with_its_baselines_seed(tmp_path, capsys):
    import json

    table = _image_table()

    def run(name, method, seed, top1, knn, epochs=6, data="fashion_mnist_images", probe=None, **hp):
        workdir = tmp_path / name
        workdir.mkdir()
        config = {"method": {"name": method, **hp}, "seed": seed, "train": {"epochs": epochs}}
        config["data"] = {"name": data}
        simclr = {"linear_trust_ratio": False, "linear_standardize": False}
        config["eval"] = simclr if probe is None else probe
        (workdir / "config.json").write_text(json.dumps(config))
        result = {"test_top1": top1, "knn_top1": knn, "pretrain_seconds": 60.0}
        (workdir / "results.json").write_text(json.dumps(result))
        return str(workdir)

    runs = [
        run("b0", "byol", 0, 0.77, 0.70),
        run("b1", "byol", 1, 0.75, 0.71),
        run("m0", "imix_byol", 0, 0.80, 0.72),
        run("m1", "imix_byol", 1, 0.74, 0.73),
        run("m2", "imix_byol", 2, 0.90, 0.90),  # no baseline run of seed 2: not in the gap
        run("n0", "npair_image", 0, 0.79, 0.74, epochs=2),
    ]
    table.main(["--runs", *runs, "--tag", "_t", "--out-dir", str(tmp_path / "out")])
    out = json.loads((tmp_path / "out" / "image_table_t.json").read_text())["table"]
    gap = out["6"]["gaps"]["imix_byol"]
    assert gap["seeds"] == [0, 1] and gap["imix_ahead"] == 1
    assert gap["test_top1"] == pytest.approx([3.0, -1.0])
    assert gap["knn_top1_summary"]["mean"] == pytest.approx(2.0)
    assert out["6"]["rows"]["imix_byol"]["seeds"] == [0, 1, 2]
    assert out["2"]["rows"]["npair_image"]["test_top1"] == pytest.approx([79.0])
    assert out["2"]["gaps"] == {}
    printed = capsys.readouterr().out
    assert "| BYOL | 76.0 ± 1.4 | 70.5 ± 0.7 | 77.0 / 75.0 | 0, 1 |" in printed
    assert "linear +3.0 / -1.0 (mean +1.0)" in printed
    assert (tmp_path / "out" / "image_table_t.png").stat().st_size > 0
    with pytest.raises(SystemExit, match="method byol, seed 0, 6 epochs given twice"):
        table.main(["--runs", runs[0], runs[0], "--out-dir", str(tmp_path)])
    other = run("c0", "byol", 0, 0.5, 0.5)
    config = json.loads((tmp_path / "c0" / "config.json").read_text())
    config["data"]["name"] = "cifar10"
    (tmp_path / "c0" / "config.json").write_text(json.dumps(config))
    with pytest.raises(SystemExit, match="mix data sets"):
        table.main(["--runs", runs[2], other, "--out-dir", str(tmp_path)])
    # Seeds of one row that trained different models (shuffle-BN here) are refused.
    shuffled = run("b2", "byol", 2, 0.76, 0.70, bn_groups=2)
    with pytest.raises(SystemExit, match=r"byol: its runs trained different models"):
        table.main(["--runs", runs[0], shuffled, "--out-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="no results.json"):
        (tmp_path / "empty").mkdir()
        (tmp_path / "empty" / "config.json").write_text("{}")
        table.main(["--runs", str(tmp_path / "empty")])
    # The tabular rows pair the same way, under their own file name; runs scored with
    # another probe (the :cpu rows' recorded one) are refused beside SimCLR's.
    measured = {"linear_trust_ratio": True, "linear_standardize": True}
    tab = [
        run("t0", "npair", 0, 0.85, 0.84, 60, "fashion_mnist", measured),
        run("t1", "imix", 0, 0.87, 0.85, 60, "fashion_mnist", measured),
    ]
    # i-Mix's per-sample lambda (the official code's) is a row of its own, against the same
    # baseline; the per-batch run of the same seed is not overwritten by it.
    per_sample = run(
        "t3", "imix", 0, 0.88, 0.86, 60, "fashion_mnist", measured, lam_per_sample=True
    )
    table.main(
        ["--runs", *tab, per_sample, "--name", "tabular", "--out-dir", str(tmp_path / "out")]
    )
    out = json.loads((tmp_path / "out" / "tabular.json").read_text())
    assert out["probe"] == "trust_ratio=True, standardize=True"
    gaps = out["table"]["60"]["gaps"]
    assert gaps["imix"]["test_top1"] == pytest.approx([2.0])
    assert gaps["imix_per_sample"]["test_top1"] == pytest.approx([3.0])
    assert gaps["imix_per_sample"]["baseline"] == "npair"
    printed = capsys.readouterr().out
    assert "linear probe: trust_ratio=True, standardize=True" in printed
    assert "| N-pair + i-Mix, per-sample λ (tabular) | 88.0 | 86.0 | 88.0 | 0 |" in printed
    assert "N-pair + i-Mix, per-sample λ (tabular) minus N-pair (tabular): linear +3.0" in printed
    simclr = run("t2", "imix", 1, 0.87, 0.85, 60, "fashion_mnist")
    with pytest.raises(SystemExit, match="different linear probes"):
        table.main(["--runs", *tab, simclr, "--out-dir", str(tmp_path)])
    # An earlier table's recorded runs join new ones (their workdirs may be gone).
    later = run("t4", "npair", 1, 0.86, 0.84, 60, "fashion_mnist", measured)
    recorded = str(tmp_path / "out" / "tabular.json")
    table.main(
        ["--records", recorded, "--runs", later, "--name", "both", "--out-dir", str(tmp_path)]
    )
    both = json.loads((tmp_path / "both.json").read_text())
    assert both["table"]["60"]["rows"]["npair"]["seeds"] == [0, 1]
    assert both["table"]["60"]["gaps"]["imix_per_sample"]["test_top1"] == pytest.approx([3.0])
    with pytest.raises(SystemExit, match="seed 0, 60 epochs given twice"):
        table.main(["--records", recorded, "--runs", tab[0], "--out-dir", str(tmp_path)])
    # A run from before the probe had these settings (config.json without them) was scored
    # with the trust ratio on standardised features: it joins the measured runs, and an old
    # augmented probe (never standardised) is told apart from them.
    old = run("t5", "imix", 1, 0.86, 0.84, 60, "fashion_mnist", {})
    old_augmented = run("t6", "imix", 2, 0.86, 0.84, 60, "fashion_mnist", {"linear_augment": True})
    assert table.read_run(old)["probe"] == "trust_ratio=True, standardize=True"
    assert table.read_run(old_augmented)["probe"] == (
        "augment=True, trust_ratio=True, standardize=False"
    )
    table.main(["--runs", *tab, old, "--name", "old", "--out-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="different linear probes"):
        table.main(["--runs", *tab, old_augmented, "--out-dir", str(tmp_path)])
