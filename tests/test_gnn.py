"""Tests for the graph encoders (jaxcl.models GIN, GCN): NumPy references of a GIN layer
and of ``D^-1/2 (A+I) D^-1/2 X W``, padding invariance (outputs, batch-norm statistics),
masked batch norm, edge masks and weights, and jit + grad."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcl.data import Graph, NodeDataset, load_gin
from jaxcl.graphs import (
    GraphBatcher,
    PaddingBudget,
    batch_graphs,
    edge_pattern,
    node_graph,
    padding_masks,
    ppr_diffusion,
)
from jaxcl.models import GCN, GIN, GINLayer, grace_encoder

BN_EPS = 1e-5  # nnx.BatchNorm's default epsilon


@pytest.fixture(scope="module")
def mutag():
    path = Path(__file__).parents[1].parent / "shared" / "data"
    if not (path / "tu_gin").is_dir():
        pytest.fail(f"benchmark data not found at {path} (../shared/data beside the checkout)")
    return load_gin(path / "tu_gin", "MUTAG")


def _random_graph(rng, num_nodes, num_features=5, p=0.4) -> Graph:
    upper = np.triu(rng.random((num_nodes, num_nodes)) < p, 1)
    s, r = np.nonzero(upper | upper.T)
    return Graph(s, r, rng.normal(size=(num_nodes, num_features)), label=0)


def _call(model, *args, **kwargs):
    """``model(*args, **kwargs)`` under ``jax.jit`` as a pure function of the model state;
    returns the output and the model after the call (batch-norm statistics updated)."""
    graphdef, state = nnx.split(model)

    @jax.jit
    def pure(state, args, kwargs):
        m = nnx.merge(graphdef, state)
        out = m(*args, **kwargs)
        return out, nnx.state(m)

    out, state = pure(state, args, kwargs)
    return out, nnx.merge(graphdef, state)


def _prelu(x, slope):
    return np.where(x >= 0, x, slope * x)


def _dense_propagation(graph, num_nodes, *, edge_mask=None, edge_weight=None):
    """``D^-1/2 (A + I) D^-1/2`` with ``A[i, j]`` the kept weight of edge ``j -> i``."""
    s, r = np.asarray(graph.senders), np.asarray(graph.receivers)
    w = np.ones(s.shape) if edge_weight is None else np.asarray(edge_weight, np.float64)
    keep = np.ones(s.shape, bool) if edge_mask is None else np.asarray(edge_mask)
    a = np.zeros((num_nodes, num_nodes))
    np.add.at(a, (r[keep], s[keep]), w[keep])
    a += np.eye(num_nodes)
    d = np.diag(a.sum(1) ** -0.5)
    return d @ a @ d


def _randomise_gcn(model, rng):
    """Non-default biases and PReLU slope, so the reference checks where they enter."""
    for layer in model.layers:
        layer.bias[...] = jnp.asarray(rng.normal(size=layer.bias.shape), jnp.float32)
    model.prelu.negative_slope[...] = jnp.asarray(0.1, jnp.float32)


# ----------------------------------------------------------------------------- GCN


def test_gcn_matches_dense_reference_with_dropped_edges_and_weights():
    rng = np.random.default_rng(0)
    g = _random_graph(rng, 12)
    graph = batch_graphs([g])  # receiver-sorted, one padding node
    n = graph.nodes.shape[0]
    edge_mask = rng.random(graph.senders.shape) < 0.6  # directions dropped independently
    edge_weight = (rng.random(graph.senders.shape) + 0.5).astype(np.float32)
    model = grace_encoder(5, out_dim=4, rngs=nnx.Rngs(0))  # widths (8, 4), PReLU
    _randomise_gcn(model, rng)
    out, _ = _call(model, graph, edge_mask=edge_mask, edge_weight=edge_weight)
    p = _dense_propagation(graph, n, edge_mask=edge_mask, edge_weight=edge_weight)
    h = np.asarray(graph.nodes, np.float64)
    for layer in model.layers:
        h = _prelu(p @ h @ np.asarray(layer.linear.kernel) + np.asarray(layer.bias), 0.1)
    np.testing.assert_allclose(out[:12], h[:12], rtol=2e-4, atol=2e-5)


def test_gcn_without_normalization_propagates_the_diffusion_matrix():
    rng = np.random.default_rng(1)
    g = _random_graph(rng, 10)
    d = ppr_diffusion(g.senders, g.receivers, 10, eps=0.0)
    diff_graph = batch_graphs(
        [Graph(d.senders, d.receivers, g.node_features, 0)], edge_weights=[d.weights]
    )
    model = GCN(5, (6,), activation=None, normalize=False, rngs=nnx.Rngs(1))
    out, _ = _call(model, diff_graph)
    s = np.zeros((10, 10))
    s[d.receivers, d.senders] = d.weights
    kernel = np.asarray(model.layers[0].linear.kernel)
    np.testing.assert_allclose(out[:10], s @ g.node_features @ kernel, rtol=1e-4, atol=1e-5)


def test_gcn_is_invariant_to_padding():
    rng = np.random.default_rng(2)
    graphs = [_random_graph(rng, n) for n in (7, 4, 9)]
    num_nodes = 20
    num_edges = sum(g.num_edges for g in graphs)
    keep = rng.random(num_edges) < 0.7
    model = GCN(5, (8, 3), rngs=nnx.Rngs(2))
    outs = []
    for budget in (PaddingBudget(21, num_edges, 4), PaddingBudget(64, num_edges + 40, 9)):
        batch = batch_graphs(graphs, budget)
        pad = budget.n_edge - num_edges
        mask = np.concatenate([keep, np.ones(pad, bool)])  # even kept padding edges are inert
        out, _ = _call(model, batch, edge_mask=mask)
        outs.append(np.asarray(out[:num_nodes]))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)


def test_gcn_jit_and_grad_are_finite():
    rng = np.random.default_rng(3)
    g = _random_graph(rng, 40, num_features=16, p=0.1)
    graph = batch_graphs([g])
    model = grace_encoder(16, out_dim=8, rngs=nnx.Rngs(3))
    graphdef, params = nnx.split(model)

    @jax.jit
    def loss(params, mask):
        return jnp.sum(nnx.merge(graphdef, params)(graph, edge_mask=mask)[:40] ** 2)

    grads = jax.grad(loss)(params, jnp.asarray(rng.random(graph.senders.shape) < 0.8))
    leaves = jax.tree.leaves(grads)
    assert leaves and all(np.isfinite(x).all() for x in leaves)
    assert all(np.abs(x).sum() > 0 for x in leaves)


def test_node_graph_feeds_the_gcn():
    rng = np.random.default_rng(4)
    g = _random_graph(rng, 15)
    m = np.zeros(15, bool)
    ds = NodeDataset(
        "toy", g.senders, g.receivers, g.node_features, np.zeros(15, np.int32), 1, m, m, m
    )
    model = GCN(5, (4,), activation="relu", rngs=nnx.Rngs(4))
    out, _ = _call(model, node_graph(ds))
    p = _dense_propagation(node_graph(ds), 15)
    want = np.maximum(p @ g.node_features @ np.asarray(model.layers[0].linear.kernel), 0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- GIN


def test_gin_layer_matches_numpy_with_masked_batch_norm():
    rng = np.random.default_rng(5)
    graphs = [_random_graph(rng, n) for n in (6, 5)]
    batch = batch_graphs(graphs, PaddingBudget(16, 64, 3))
    real = 11
    layer = GINLayer(5, 8, eps=0.3, learn_eps=True, rngs=nnx.Rngs(5))
    mask = padding_masks(batch).nodes
    h = jnp.asarray(batch.nodes).at[real:].set(100.0)  # padding rows must not matter
    out, after = _call(layer, h, batch, node_mask=mask)

    a = np.zeros((16, 16))
    np.add.at(a, (batch.receivers, batch.senders), 1.0)
    x = np.asarray(batch.nodes, np.float64)[:real]
    z = 1.3 * x + a[:real, :real] @ x
    w1, b1 = np.asarray(layer.linear1.kernel), np.asarray(layer.linear1.bias)
    w2, b2 = np.asarray(layer.linear2.kernel), np.asarray(layer.linear2.bias)
    y = np.maximum(np.maximum(z @ w1 + b1, 0) @ w2 + b2, 0)
    mean, var = y.mean(0), y.var(0)
    want = (y - mean) / np.sqrt(var + BN_EPS)
    np.testing.assert_allclose(out[:real], want, rtol=1e-3, atol=1e-4)
    assert not np.asarray(out[real:]).any(), "padding rows are zeroed"
    np.testing.assert_allclose(after.norm.mean[...], 0.1 * mean, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(after.norm.var[...], 0.9 + 0.1 * var, rtol=1e-4, atol=1e-6)


def test_masked_batch_norm_ignores_padding_rows():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(10, 4)).astype(np.float32)
    padded = np.concatenate([x, np.full((6, 4), 1e4, np.float32)])
    mask = np.arange(16) < 10
    bn = nnx.BatchNorm(4, momentum=0.9, rngs=nnx.Rngs(0))
    got = bn(jnp.asarray(padded), mask=jnp.asarray(mask)[:, None])
    ref = nnx.BatchNorm(4, rngs=nnx.Rngs(0))(jnp.asarray(x))
    np.testing.assert_allclose(got[:10], ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.mean[...], 0.1 * x.mean(0), rtol=1e-4, atol=1e-6)


def test_gin_is_invariant_to_padding(mutag):
    graphs = mutag.graphs[:8]
    n = sum(g.num_nodes for g in graphs)
    e = sum(g.num_edges for g in graphs)
    outputs = []
    for budget in (PaddingBudget(n + 1, e, 9), PaddingBudget(n + 57, e + 100, 13)):
        model = GIN(9, width=16, depth=3, rngs=nnx.Rngs(7))  # same init each time
        (nodes, pooled), after = _call(model, batch_graphs(graphs, budget))
        stats = [np.asarray(layer.norm.var[...]) for layer in after.layers]
        outputs.append((np.asarray(nodes[:n]), np.asarray(pooled[:8]), stats))
        assert not np.asarray(nodes[n:]).any() and not np.asarray(pooled[8:]).any()
    (n0, g0, s0), (n1, g1, s1) = outputs
    np.testing.assert_allclose(n0, n1, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(g0, g1, rtol=1e-4, atol=1e-4)
    for a, b in zip(s0, s1, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_gin_graph_embedding_concatenates_sum_pooled_layers(mutag):
    graphs = mutag.graphs[:5]
    batch = batch_graphs(graphs, PaddingBudget(256, 512, 6))
    model = GIN(9, width=16, depth=3, rngs=nnx.Rngs(8))
    (nodes, pooled), _ = _call(model, batch)
    assert nodes.shape == (256, 48) and pooled.shape == (6, 48)
    start = 0
    for i, g in enumerate(graphs):
        want = np.asarray(nodes[start : start + g.num_nodes]).sum(0)
        np.testing.assert_allclose(pooled[i], want, rtol=1e-5, atol=1e-4)
        start += g.num_nodes


def test_gin_eval_mode_batches_equal_single_graphs(mutag):
    graphs = mutag.graphs[10:14]
    model = GIN(9, width=16, depth=2, rngs=nnx.Rngs(9))
    _call(model, batch_graphs(graphs, PaddingBudget(256, 512, 5)))  # one train step of stats
    model.eval()
    budget = PaddingBudget(256, 512, 5)
    (_, pooled), _ = _call(model, batch_graphs(graphs, budget))
    for i, g in enumerate(graphs):
        (_, alone), _ = _call(model, batch_graphs([g], budget))
        np.testing.assert_allclose(pooled[i], alone[0], rtol=1e-4, atol=1e-4)


def test_gin_with_every_edge_dropped_equals_gin_on_edgeless_graphs(mutag):
    graphs = mutag.graphs[:4]
    budget = PaddingBudget(256, 512, 5)
    batch = batch_graphs(graphs, budget)
    edgeless = [Graph(np.zeros(0, int), np.zeros(0, int), g.node_features, g.label) for g in graphs]
    model = GIN(9, width=8, depth=2, learn_eps=True, eps=0.1, rngs=nnx.Rngs(10))
    (_, dropped), _ = _call(model, batch, edge_mask=jnp.zeros(batch.senders.shape, bool))
    (_, alone), _ = _call(model, batch_graphs(edgeless, budget))
    np.testing.assert_allclose(dropped, alone, rtol=1e-5, atol=1e-5)


def test_gin_jit_and_grad_are_finite(mutag):
    batch = batch_graphs(mutag.graphs[:6], PaddingBudget(256, 512, 7))
    model = GIN(9, width=16, depth=2, learn_eps=True, rngs=nnx.Rngs(11))
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)

    @jax.jit
    def loss(params, rest):
        _, pooled = nnx.merge(graphdef, params, rest)(batch)
        return jnp.sum(padding_masks(batch).graphs[:, None] * pooled**2)

    value, grads = jax.value_and_grad(loss)(params, rest)
    assert np.isfinite(value)
    leaves = jax.tree.leaves(grads)
    assert all(np.isfinite(x).all() for x in leaves)
    eps_grads = [np.asarray(layer.eps[...]) for layer in nnx.merge(graphdef, grads, rest).layers]
    assert all(np.abs(g) > 0 for g in eps_grads), "learnable eps gets a gradient"


def test_gin_on_a_stacked_batch_equals_gin_on_the_unstacked_batch(mutag):
    """Sub-batches stacked on a leading axis: message passing per sub-batch, batch norm over
    the real nodes of all of them, outputs flattened; the same as the unstacked batch."""
    batcher = GraphBatcher(mutag, 24, num_shards=4, seed=0)
    indices = batcher.batch_indices(0)[-1]  # 188 = 7 * 24 + 20: sub-batches of 5 graphs
    stacked = list(batcher.epoch(0))[-1]
    unstacked = batch_graphs([mutag.graphs[i] for i in indices])
    edge_mask = np.random.default_rng(0).random(stacked.senders.shape) < 0.8
    out = {}
    for name, batch, kw in [
        ("unstacked", unstacked, {}),
        ("stacked", stacked, {}),
        ("dropped", stacked, {"edge_mask": edge_mask}),
        ("dropped_flat", stacked, {"edge_mask": edge_mask.reshape(-1)}),
    ]:
        model = GIN(9, width=16, depth=3, rngs=nnx.Rngs(7))  # same init each time
        (nodes, pooled), after = _call(model, batch, **kw)
        masks = padding_masks(batch)
        stats = [np.asarray(layer.norm.mean[...]) for layer in after.layers]
        out[name] = (np.asarray(nodes), np.asarray(pooled), masks, stats)
    nodes, pooled, masks, stats = out["stacked"]
    num_sub, n_node, n_graph = 4, stacked.nodes.shape[1], stacked.n_node.shape[1]
    assert nodes.shape == (num_sub * n_node, 48) and pooled.shape == (num_sub * n_graph, 48)
    assert not nodes[~np.asarray(masks.nodes)].any()
    assert not pooled[~np.asarray(masks.graphs)].any()
    want_nodes, want_pooled, want_masks, want_stats = out["unstacked"]
    real, want_real = np.asarray(masks.nodes), np.asarray(want_masks.nodes)
    np.testing.assert_allclose(nodes[real], want_nodes[want_real], rtol=1e-4, atol=1e-4)
    rows = batcher.graph_rows(indices)
    np.testing.assert_allclose(pooled[rows], want_pooled[: len(indices)], rtol=1e-4, atol=1e-4)
    for a, b in zip(stats, want_stats, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # A stacked edge mask may come flattened; dropping edges changes the embeddings.
    np.testing.assert_array_equal(out["dropped"][1], out["dropped_flat"][1])
    assert not np.allclose(out["dropped"][1], pooled)


def test_gin_through_slabs_equals_gin_through_gathers(mutag):
    """``slabs=True`` (the kept edges as a jitted slab pattern, once for all layers) is the
    same function, its gradients too, on a plain and on a stacked batch, with dropped edges.
    In float64: the learned epsilons' gradients are sums over every node with much
    cancellation, so float32's summation order alone moves them by about 1 %."""
    rng = np.random.default_rng(1)
    plain = batch_graphs(mutag.graphs[:7], PaddingBudget(256, 512, 8))
    stacked = list(GraphBatcher(mutag, 24, num_shards=4, seed=0).epoch(0))[-1]

    def float64(tree):
        return jax.tree.map(
            lambda x: np.asarray(x, np.float64) if np.issubdtype(x.dtype, np.floating) else x,
            tree,
        )

    with jax.enable_x64(True):
        for batch in (plain, stacked):
            batch = float64(batch)
            edge_mask = jnp.asarray(rng.random(np.shape(batch.senders)) < 0.8).reshape(-1)
            out = {}
            for slabs in (False, True):
                model = GIN(9, width=16, depth=3, learn_eps=True, slabs=slabs, rngs=nnx.Rngs(12))
                graphdef, params, rest = nnx.split(model, nnx.Param, ...)
                params, rest = float64((params, rest))

                def loss(params, rest, graphdef=graphdef, batch=batch, edge_mask=edge_mask):
                    model = nnx.merge(graphdef, params, rest, copy=True)
                    nodes, pooled = model(batch, edge_mask=edge_mask)
                    return jnp.sum(jnp.sin(pooled)) + jnp.sum(nodes**2), pooled

                f = jax.jit(jax.value_and_grad(loss, has_aux=True))
                (value, pooled), grads = f(params, rest)
                out[slabs] = value, pooled, grads
            assert out[True][0].dtype == np.float64
            np.testing.assert_allclose(out[True][0], out[False][0], rtol=1e-10)
            np.testing.assert_allclose(out[True][1], out[False][1], rtol=1e-9, atol=1e-9)
            for a, b in zip(
                jax.tree.leaves(out[True][2]), jax.tree.leaves(out[False][2]), strict=True
            ):
                np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-9 * max(np.abs(b).max(), 1))
    layer = GINLayer(9, 4, rngs=nnx.Rngs(0))
    pattern = edge_pattern(plain.senders, plain.receivers, 256)
    with pytest.raises(ValueError, match="`edge_mask` or `adjacency`"):
        layer(plain.nodes, plain, edge_mask=edge_mask[:512], adjacency=pattern)
    with pytest.raises(ValueError, match="`slabs` must be True or False, got 'on'"):
        GIN(9, width=4, depth=1, slabs="on", rngs=nnx.Rngs(0))


def test_gin_slabs_on_a_batch_sharded_over_eight_devices_equal_the_unstacked_batch(mutag):
    """The slab patterns built per sub-batch inside a jit whose batch is sharded over the 8
    (fake CPU) devices: the same node states and graph embeddings as one device's batch."""
    from jaxcl import training

    mesh = training.make_mesh(8)  # the trainer's mesh (axes of automatic sharding)
    batcher = GraphBatcher(mutag, 64, num_shards=8, seed=0)
    indices = batcher.batch_indices(0)[0]
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    sharded = jax.device_put(list(batcher.epoch(0))[0], sharding)
    unstacked = batch_graphs([mutag.graphs[i] for i in indices])
    out = {}
    for name, batch in (("sharded", sharded), ("one", unstacked)):
        model = GIN(9, width=16, depth=3, slabs=True, rngs=nnx.Rngs(7))
        with jax.set_mesh(mesh):
            (nodes, pooled), _ = _call(model, batch)
        out[name] = np.asarray(nodes)[np.asarray(padding_masks(batch).nodes)], np.asarray(pooled)
    np.testing.assert_allclose(out["sharded"][0], out["one"][0], rtol=1e-4, atol=1e-4)
    rows = batcher.graph_rows(indices)
    np.testing.assert_allclose(
        out["sharded"][1][rows], out["one"][1][: len(indices)], rtol=1e-4, atol=1e-4
    )
