"""Tests for the graph pretraining methods (DACL Table 4): DACL with hidden-space Mixup and
InfoGraph. Losses on real MUTAG batches (finite, differentiable, invariant to padding),
DACL's mixing partners, InfoGraph's JSD against a NumPy reference, and a short end-to-end
run of the trainer."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax.test_util import check_grads

from jaxcl import losses, methods
from jaxcl.configs import dacl_graph
from jaxcl.data import load_tu
from jaxcl.graphs import PaddingBudget, batch_graphs
from jaxcl.training import ConfigError, train_and_evaluate, validate

DATA = Path(__file__).parents[1].parent / "shared" / "data"


@pytest.fixture(scope="module")
def mutag():
    if not (DATA / "tu_raw").is_dir():
        pytest.fail(f"benchmark data not found at {DATA} (../shared/data beside the checkout)")
    return load_tu(DATA / "tu_raw", "MUTAG")


def _spec(num_features):
    return methods.DataSpec("graph", num_features, 2)


def _method(name, **hp):
    config = dacl_graph.make(name, "mutag,quick")
    config.method.update(hp)
    return methods.get(name)(config)


def _loss_fn(method, model, batch):
    """``loss(params)`` for a fresh copy of ``model`` in training mode, jitted."""
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)

    @jax.jit
    def loss(params):
        model = nnx.merge(graphdef, params, rest, copy=True)
        return method.loss(model, batch, jax.random.key(0), {})[0]

    return loss, params


def _loss(name, graphs, budget, *, seed=0, **hp):
    method = _method(name, **hp)
    model = method.build(_spec(7), rngs=nnx.Rngs(seed))  # the same init for every budget
    loss, params = _loss_fn(method, model, batch_graphs(graphs, budget))
    return float(loss(params))


def _fits(graphs, extra_nodes=1, extra_edges=0, extra_graphs=1):
    n = sum(g.num_nodes for g in graphs)
    e = sum(g.num_edges for g in graphs)
    return PaddingBudget(n + extra_nodes, e + extra_edges, len(graphs) + extra_graphs)


@pytest.mark.parametrize("name", ["dacl_graph", "infograph"])
def test_losses_are_finite_and_differentiable_on_a_mutag_batch(mutag, name):
    graphs = mutag.graphs[:16]
    method = _method(name)
    model = method.build(_spec(mutag.num_features), rngs=nnx.Rngs(0))
    loss, params = _loss_fn(method, model, batch_graphs(graphs, _fits(graphs, 40, 64, 4)))
    value, grads = jax.value_and_grad(loss)(params)
    assert np.isfinite(value)
    norms = {
        jax.tree_util.keystr(path): float(jnp.linalg.norm(g))
        for path, g in jax.tree_util.tree_leaves_with_path(grads)
    }
    assert all(np.isfinite(v) for v in norms.values())
    # Every part is trained: the GIN and each head get a gradient.
    heads = ("head",) if name == "dacl_graph" else ("local_head", "global_head")
    for part in ("encoder", *heads):
        assert sum(v for k, v in norms.items() if k.startswith(f"['{part}']")) > 0, part


def test_dacl_loss_does_not_depend_on_padding(mutag):
    graphs = mutag.graphs[20:32]
    # With the head's (optional) batch norm: padding rows must stay out of its statistics.
    hp = {"head_batch_norm": True}
    tight = _loss("dacl_graph", graphs, _fits(graphs), **hp)
    loose = _loss("dacl_graph", graphs, _fits(graphs, 93, 160), **hp)
    np.testing.assert_allclose(loose, tight, rtol=2e-5)
    # More padding graphs change the shapes of the per-row random draws; with alpha = 1
    # (lam = 1 exactly) the partners do not enter and the loss must be the same.
    hp["alpha"] = 1.0
    tight = _loss("dacl_graph", graphs, _fits(graphs), **hp)
    more_graphs = _loss("dacl_graph", graphs, _fits(graphs, 30, 16, 9), **hp)
    np.testing.assert_allclose(more_graphs, tight, rtol=2e-5)


def test_infograph_loss_does_not_depend_on_padding_and_matches_reference(mutag):
    graphs = mutag.graphs[40:50]
    method = _method("infograph")
    out = []
    for budget in (_fits(graphs), _fits(graphs, 93, 160), _fits(graphs, 30, 16, 9)):
        model = method.build(_spec(7), rngs=nnx.Rngs(0))
        batch = batch_graphs(graphs, budget)
        graphdef, state = nnx.split(model)

        @jax.jit
        def run(state, batch, graphdef=graphdef):
            model = nnx.merge(graphdef, state)
            loss = method.loss(model, batch, None, {})[0]
            nodes, pooled = model.encoder.nodes_and_graphs(batch)  # BN on batch statistics
            return loss, model.local_head(nodes), model.global_head(pooled)

        out.append(run(state, batch))
    n = sum(g.num_nodes for g in graphs)
    ids = np.repeat(np.arange(len(graphs)), [g.num_nodes for g in graphs])
    for loss, local, global_ in out:
        np.testing.assert_allclose(loss, out[0][0], rtol=2e-5)
        # The method's loss is the JSD of its heads' outputs, each node positive with its
        # own graph only.
        want = _jsd_reference(np.asarray(local)[:n], np.asarray(global_)[: len(graphs)], ids)
        np.testing.assert_allclose(loss, want, rtol=1e-4)


def test_dacl_mixes_each_real_graph_with_another_real_graph_only():
    method = _method("dacl_graph", alpha=0.0)
    real = np.array([True, True, False, True, True, False, False, True])
    batch = real.size
    h = jnp.eye(batch) * 10.0  # one-hot rows: a mix shows its partner's column
    views = jax.jit(jax.vmap(lambda k: method.views(h, jnp.asarray(real), k)))(
        jax.random.split(jax.random.key(3), 400)
    )
    views = np.concatenate(views)  # both views of every key
    seen = {k: set() for k in np.flatnonzero(real)}
    for view in views:
        view = np.asarray(view)
        np.testing.assert_array_equal(view[~real], np.asarray(h)[~real])  # padding untouched
        for k in np.flatnonzero(real):
            partners = set(np.flatnonzero(view[k])) - {k}
            assert partners <= set(np.flatnonzero(real)) - {k}, (k, partners)
            np.testing.assert_allclose(view[k].sum(), 10.0, rtol=1e-5)  # a convex mix
            seen[k] |= partners
    # Over 800 views every other real graph has been drawn as a partner.
    for k, partners in seen.items():
        assert partners == set(np.flatnonzero(real)) - {k}, k


def _jsd_reference(l_enc, g_enc, graph_of_node):
    """InfoGraph's ``local_global_loss_`` with measure 'JSD', in NumPy (unpadded batch)."""
    num_nodes, num_graphs = l_enc.shape[0], g_enc.shape[0]
    pos_mask = np.zeros((num_nodes, num_graphs))
    pos_mask[np.arange(num_nodes), graph_of_node] = 1.0
    neg_mask = 1.0 - pos_mask
    res = l_enc.astype(np.float64) @ g_enc.astype(np.float64).T

    def softplus(x):
        return np.logaddexp(0.0, x)

    # As the original: masks multiply the scores, and the masked entries contribute
    # log 2 - softplus(0) = 0 to the sums.
    e_pos = (math.log(2) - softplus(-(res * pos_mask))).sum() / num_nodes
    e_neg = (softplus(-(res * neg_mask)) + res * neg_mask - math.log(2)).sum()
    e_neg /= num_nodes * (num_graphs - 1)
    return e_neg - e_pos


def test_local_global_jsd_matches_infograph_reference_with_padding():
    rng = np.random.default_rng(0)
    sizes = [3, 1, 4]
    graph_of_node = np.repeat(np.arange(3), sizes)
    l_enc = rng.normal(size=(8, 5)).astype(np.float32)
    g_enc = rng.normal(size=(3, 5)).astype(np.float32)
    want = _jsd_reference(l_enc, g_enc, graph_of_node)
    # Padded: 4 padding nodes (in a padding graph) and 2 padding graphs, holding garbage.
    l_pad = np.concatenate([l_enc, 1e3 * rng.normal(size=(4, 5))]).astype(np.float32)
    g_pad = np.concatenate([g_enc, 1e3 * rng.normal(size=(2, 5))]).astype(np.float32)
    ids = np.concatenate([graph_of_node, [3, 3, 3, 3]])
    node_mask = np.arange(12) < 8
    graph_mask = np.arange(5) < 3

    def fn(local, global_):
        return losses.local_global_jsd(
            local, global_, ids, node_mask=node_mask, graph_mask=graph_mask
        )

    got = jax.jit(fn)(l_pad, g_pad)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(
        losses.local_global_jsd(l_enc, g_enc, graph_of_node), want, rtol=1e-5
    )
    # Gradients: finite, zero on padding rows, and those of the unpadded loss.
    gl, gg = jax.jit(jax.grad(fn, argnums=(0, 1)))(l_pad, g_pad)
    assert not np.asarray(gl[8:]).any() and not np.asarray(gg[3:]).any()

    @jax.jit
    def unpadded(local, global_):
        return losses.local_global_jsd(local, global_, graph_of_node)

    check_grads(unpadded, (l_enc, g_enc), order=1, modes=["rev"], atol=1e-2)
    want_gl, want_gg = jax.jit(jax.grad(unpadded, argnums=(0, 1)))(l_enc, g_enc)
    np.testing.assert_allclose(gl[:8], want_gl, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gg[:3], want_gg, rtol=1e-5, atol=1e-7)


def test_local_global_jsd_rejects_bad_arguments():
    nodes, graphs = np.ones((4, 3), np.float32), np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="`node_emb` and `graph_emb` must have the same width"):
        losses.local_global_jsd(nodes, np.ones((2, 4), np.float32), np.zeros(4, int))
    with pytest.raises(ValueError, match=r"`node_graph` must be an integer array of shape \(4,\)"):
        losses.local_global_jsd(nodes, graphs, np.zeros(3, int))
    with pytest.raises(ValueError, match="`graph_mask` must be a boolean array"):
        losses.local_global_jsd(nodes, graphs, np.zeros(4, int), graph_mask=np.ones(2))


def test_short_dacl_run_on_mutag_writes_results(tmp_path):
    config = dacl_graph.make("dacl_graph", "mutag,quick")
    config.data.data_dir = str(DATA)
    config.mesh.data = 1
    config.train.batch_size = 256  # one batch per epoch: one padding budget, one compile
    results = train_and_evaluate(config, str(tmp_path))
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["method"] == "dacl_graph" and saved["steps"] == 2
    assert 0 < saved["test_top1"] <= 1 and saved["evaluated_epochs"] == [1, 2]
    assert np.isfinite(saved["final_loss"])
    assert results["test_top1"] == saved["test_top1"]


@pytest.mark.parametrize("row", ["none", "infograph", "dacl_graph"])
def test_table_4_configs_validate_and_follow_the_released_setup(row):
    for dataset in dacl_graph.DATASETS:
        config = dacl_graph.make(row, dataset)
        validate(config)
        assert config.repeats == 5 and config.train.batch_size == 128
        assert config.model.encoder_depth * config.model.encoder_width == 2048
        assert config.model.gin_kernel_init == "glorot_uniform"
        if row == "none":  # no training: no optimiser, epochs or heads
            assert "optim" not in config and "epochs" not in config.train
            assert "head_width" not in config.model
        else:
            assert config.train.epochs == 20 and config.eval.last_epochs == 5
            assert config.optim.name == "adam" and config.optim.schedule == "constant"
        want = "constant" if dataset.startswith("imdb") else "tags"
        assert config.data.node_features == want
    assert dacl_graph.make(row, "mutag").data.graph_format == "tu"
    quick = dacl_graph.make(row, "ptc_mr,quick")
    assert quick.repeats == 1 and quick.model.encoder_width == 32
    assert quick.train.get("epochs", 2) == 2
    for bad in ("", "reddit", "mutag,slow", "mutag,quick,x"):
        with pytest.raises(ConfigError, match="config argument"):
            dacl_graph.make(row, bad)


def test_glorot_uniform_gin_kernels():
    config = dacl_graph.make("none", "mutag,quick")
    encoder, width = methods.build_encoder(config.model, _spec(7), nnx.Rngs(0))
    assert width == 2 * 32
    for layer in encoder.gin.layers:
        for linear in (layer.linear1, layer.linear2):
            fan_in, fan_out = linear.kernel.shape
            limit = math.sqrt(6 / (fan_in + fan_out))
            kernel = np.asarray(linear.kernel[...])
            assert np.abs(kernel).max() <= limit
            np.testing.assert_allclose(kernel.std(), limit / math.sqrt(3), rtol=0.15)
            assert not np.asarray(linear.bias[...]).any()


@pytest.mark.parametrize("head_batch_norm", [False, True])
def test_dacl_loss_mixes_after_the_heads_first_linear_as_before_it(mutag, head_batch_norm):
    """The method mixes the head's first Linear's outputs; mixing its inputs and running the
    whole head gives the same loss and gradients (the Linear is affine, the mixtures convex)."""
    graphs = mutag.graphs[60:76]
    method = _method("dacl_graph", alpha=0.5, head_batch_norm=head_batch_norm)
    model = method.build(_spec(mutag.num_features), rngs=nnx.Rngs(2))
    for i, linear in enumerate(model.head.linears):  # biases start at zero: make them count
        linear.bias[...] = jax.random.normal(jax.random.key(i), linear.bias.shape)
    batch = batch_graphs(graphs, _fits(graphs, 20, 30, 3))
    key = jax.random.key(7)

    def before(model):  # Algorithm 1 as written: mix the embeddings, then the whole head
        real = jnp.arange(batch.n_node.shape[0]) < len(graphs)
        h1, h2 = method.views(model.encoder(batch), real, key)
        rows = jnp.concatenate([real, real])
        z1, z2 = jnp.split(model.head(jnp.concatenate([h1, h2]), mask=rows), 2)
        return losses.nt_xent(z1, z2, temperature=method.hp.temperature, where=real)

    graphdef, params, rest = nnx.split(model, nnx.Param, ...)

    def as_method(params):
        return method.loss(nnx.merge(graphdef, params, rest, copy=True), batch, key, {})[0]

    def as_written(params):
        return before(nnx.merge(graphdef, params, rest, copy=True))

    got, got_grads = jax.jit(jax.value_and_grad(as_method))(params)
    want, want_grads = jax.jit(jax.value_and_grad(as_written))(params)
    assert abs(float(got) - float(want)) <= 1e-5 * abs(float(want))
    want_grads = dict(jax.tree_util.tree_leaves_with_path(want_grads))
    # Float32 rounding differs (other sums): each leaf agrees to 1e-4 of its l2 norm, or of
    # the whole gradient's for a leaf whose gradient is zero up to rounding (a bias that
    # batch norm follows).
    total = np.sqrt(sum(np.sum(np.square(w)) for w in want_grads.values()))
    for path, g in jax.tree_util.tree_leaves_with_path(got_grads):
        w = np.asarray(want_grads[path])
        scale = np.linalg.norm(w) if np.linalg.norm(w) > 1e-3 * total else total
        error = np.linalg.norm(np.asarray(g) - w) / scale
        assert error <= 1e-4, (jax.tree_util.keystr(path), error, np.linalg.norm(w), total)


def test_feedforward_after_first_linear():
    from jaxcl.models import FeedForward

    x = jax.random.normal(jax.random.key(0), (6, 5))
    mask = jnp.array([True] * 5 + [False])
    for batch_norm in (False, True):
        ff = FeedForward(
            5, width=8, depth=3, out_features=4, batch_norm=batch_norm, rngs=nnx.Rngs(1)
        )
        want = ff(x, mask=mask)
        got = ff(ff.linears[0](x), mask=mask, after_first_linear=True)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    ff = FeedForward(5, width=8, depth=2, shortcut=True, rngs=nnx.Rngs(1))
    with pytest.raises(ValueError, match="after_first_linear.*shortcut"):
        ff(ff.linears[0](x), after_first_linear=True)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [("alpha", 1.2, r"alpha = 1.2: expected a number in \[0.0, 1.0\] \(dacl_graph\)"),
     ("temperature", -1.0, r"temperature = -1.0: expected a number in \(0.0, inf\)")],
)  # fmt: skip
def test_dacl_graph_refuses_bad_hyperparameters_when_built(key, value, message):
    from jaxcl import training

    config = training.base_config("mutag", "dacl_graph")
    config.method[key] = value
    with pytest.raises(training.ConfigError, match=message):
        training.validate(config)


def test_a_graph_rerun_scored_with_other_eval_settings_evaluates_again(tmp_path):
    """A finished graph run rerun with other evaluation settings (here the folds) used to
    report the evaluation recorded under the old ones; it scores the last epoch again, as a
    fresh run with those settings does, also for a workdir written before evaluations
    carried their settings. A mean over epochs evaluated under other settings, or not at all,
    is refused before anything is evaluated, naming eval.last_epochs."""
    import json

    from jaxcl import training

    def config(**eval_settings):
        c = training.base_config("mutag", "dacl_graph")
        c.train.epochs, c.eval.last_epochs, c.data.data_dir = 2, 1, str(DATA)
        c.model.encoder_depth, c.model.encoder_width, c.model.head_width = 2, 32, 32
        c.model.embed_dim, c.train.batch_size, c.eval.graph_linear_steps = 16, 96, 20
        c.eval.update(eval_settings)
        return c

    run, fresh = tmp_path / "run", tmp_path / "fresh"
    first = training.train_and_evaluate(config(folds=5), str(run))
    direct = training.train_and_evaluate(config(folds=4), str(fresh))["test_top1"]
    assert direct != first["test_top1"]  # the two settings score this run differently
    path = run / "eval_history.json"
    history = json.loads(path.read_text())
    assert history[-1]["eval"]["folds"] == 5
    assert training.train_and_evaluate(config(folds=4), str(run))["test_top1"] == direct
    # the recorded settings again: their recorded evaluation (nothing evaluated, nothing added)
    assert training.train_and_evaluate(config(folds=5), str(run))["test_top1"] == first["test_top1"]
    assert json.loads(path.read_text()) == history
    # a history written before entries carried their settings: read as the saved config's
    path.write_text(json.dumps([{k: v for k, v in h.items() if k != "eval"} for h in history]))
    assert training.train_and_evaluate(config(folds=4), str(run))["test_top1"] == direct
    with pytest.raises(training.ConfigError, match=r"eval.last_epochs = 2: .* epochs 1-2"):
        training.train_and_evaluate(config(folds=5, last_epochs=2), str(run))
    assert len(json.loads(path.read_text())) == len(history)  # refused before evaluating


def test_folds_beyond_the_smallest_class_are_a_config_error_before_training(tmp_path):
    """eval.folds = 100 on MUTAG (smallest class 63) used to fail with a traceback at the
    first evaluation, after most of the training."""
    from jaxcl import training

    c = training.base_config("mutag", "dacl_graph")
    c.data.data_dir, c.eval.folds = str(DATA), 100
    message = r"config.eval.folds = 100: mutag: `num_folds` must lie in \[2, 63\]"
    with pytest.raises(training.ConfigError, match=message):
        training.train_and_evaluate(c, str(tmp_path))
    assert not (tmp_path / "checkpoints").exists()  # refused before any step
