"""Tests for jaxcl.graphs: batching against the unpadded graphs, padding budgets and the
number of compilations over an epoch of MUTAG, augmentations, PPR diffusion against a
NumPy inverse, and segment sums against NumPy references (sorted == unsorted)."""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import jraph
import numpy as np
import pytest

from jaxcl.data import Graph, GraphDataset, load_gin, load_planetoid
from jaxcl.graphs import (
    GraphBatcher,
    PaddingBudget,
    aggregate_edges,
    batch_graphs,
    drop_edges,
    gather_nodes,
    gcn_normalization,
    mask_features,
    node_graph,
    node_graph_ids,
    padding_budgets,
    padding_masks,
    pass_budget,
    pool_nodes,
    ppr_dataset,
    ppr_diffusion,
    ppr_matrix,
    select_budget,
)


@pytest.fixture(scope="module")
def data_dir() -> Path:
    path = Path(__file__).parents[1].parent / "shared" / "data"
    if not (path / "tu_gin").is_dir() or not (path / "planetoid").is_dir():
        pytest.fail(
            f"benchmark data not found at {path}: these tests read MUTAG and Cora from "
            "../shared/data beside the repository checkout (see ../shared/data/README.md)"
        )
    return path


@functools.cache
def _mutag(root: Path) -> GraphDataset:
    return load_gin(root / "tu_gin", "MUTAG")


@functools.cache
def _cora(root: Path):
    return load_planetoid(root / "planetoid", "cora")


def _random_graph(rng, num_nodes, num_features=3, p=0.4, label=0) -> Graph:
    """An undirected random graph, edges both ways, sorted by sender (as the readers)."""
    upper = np.triu(rng.random((num_nodes, num_nodes)) < p, 1)
    s, r = np.nonzero(upper | upper.T)
    return Graph(
        senders=s,
        receivers=r,
        node_features=rng.normal(size=(num_nodes, num_features)),
        label=label,
    )


def _edge_set(s, r):
    return set(zip(np.asarray(s).tolist(), np.asarray(r).tolist(), strict=True))


# ----------------------------------------------------------------------------- batching


def test_batch_graphs_matches_the_unpadded_graphs():
    rng = np.random.default_rng(0)
    graphs = [_random_graph(rng, n, label=i) for i, n in enumerate([4, 1, 6, 3])]
    budget = PaddingBudget(n_node=24, n_edge=64, n_graph=7)
    batch = batch_graphs(graphs, budget)

    assert batch.nodes.shape == (24, 3) and batch.senders.shape == (64,)
    assert batch.n_node.tolist() == [4, 1, 6, 3, 24 - 14, 0, 0]
    assert batch.n_edge.sum() == 64 and batch.n_edge[:4].tolist() == [g.num_edges for g in graphs]
    assert batch.globals.tolist() == [0, 1, 2, 3, -1, -1, -1]
    offset, edge = 0, 0
    for g in graphs:
        np.testing.assert_array_equal(batch.nodes[offset : offset + g.num_nodes], g.node_features)
        s = batch.senders[edge : edge + g.num_edges] - offset
        r = batch.receivers[edge : edge + g.num_edges] - offset
        assert _edge_set(s, r) == _edge_set(g.senders, g.receivers)
        offset, edge = offset + g.num_nodes, edge + g.num_edges
    assert not batch.nodes[offset:].any()
    # Padding edges stay inside the padding graph (its first node), after all real nodes.
    assert (batch.senders[edge:] == offset).all() and (batch.receivers[edge:] == offset).all()
    assert (np.diff(batch.receivers) >= 0).all(), "receivers must be sorted"

    masks = padding_masks(batch)
    assert np.asarray(masks.nodes).sum() == offset and np.asarray(masks.edges).sum() == edge
    assert np.asarray(masks.graphs).tolist() == [True] * 4 + [False] * 3

    # Same arrays as jraph's own batch + pad of the receiver-sorted graphs.
    parts = []
    for g in graphs:
        order = np.lexsort((g.senders, g.receivers))
        parts.append(
            jraph.GraphsTuple(
                nodes=g.node_features,
                edges=None,
                senders=g.senders[order],
                receivers=g.receivers[order],
                globals=None,
                n_node=np.array([g.num_nodes]),
                n_edge=np.array([g.num_edges]),
            )
        )
    ref = jraph.pad_with_graphs(jraph.batch_np(parts), 24, 64, 7)
    for name in ("nodes", "senders", "receivers", "n_node", "n_edge"):
        np.testing.assert_array_equal(getattr(batch, name), getattr(ref, name), err_msg=name)


def test_batch_graphs_rejects_a_budget_too_small():
    g = _random_graph(np.random.default_rng(1), 5)
    with pytest.raises(ValueError, match="do not fit"):
        batch_graphs([g], PaddingBudget(n_node=5, n_edge=64, n_graph=2))  # no padding node
    with pytest.raises(ValueError, match="do not fit"):
        batch_graphs([g, g], PaddingBudget(n_node=64, n_edge=64, n_graph=2))  # no padding graph
    assert batch_graphs([g]).nodes.shape[0] == 6  # minimal padding by default


def test_edge_weights_follow_their_edges_through_batching():
    rng = np.random.default_rng(2)
    graphs = [_random_graph(rng, n) for n in (5, 7)]
    weights = [rng.random(g.num_edges).astype(np.float32) for g in graphs]
    batch = batch_graphs(graphs, PaddingBudget(16, 64, 3), edge_weights=weights)
    offset, edge = 0, 0
    for g, w in zip(graphs, weights, strict=True):
        want = {(s, r): x for s, r, x in zip(g.senders, g.receivers, w, strict=True)}
        span = slice(edge, edge + g.num_edges)
        s, r = batch.senders[span] - offset, batch.receivers[span] - offset
        got = zip(s, r, batch.edges[span], strict=True)
        assert {(s, r): x for s, r, x in got} == want
        offset, edge = offset + g.num_nodes, edge + g.num_edges
    assert not batch.edges[edge:].any(), "padding edges must weigh 0"


def test_padding_budgets_ladder(data_dir):
    ds = _mutag(data_dir)
    ladder = padding_budgets(ds, 32)
    assert ladder == tuple(sorted(ladder)) and 1 < len(ladder) <= 6
    assert all(b.n_graph == 33 and b.n_node % 8 == 0 and b.n_edge % 8 == 0 for b in ladder)
    nodes = np.sort([g.num_nodes for g in ds.graphs])
    edges = np.sort([g.num_edges for g in ds.graphs])
    # The top rung fits the worst batch: the 32 largest graphs.
    assert select_budget(ladder, nodes[-32:].sum(), edges[-32:].sum(), 32) == ladder[-1]
    with pytest.raises(ValueError, match="no budget fits"):
        select_budget(ladder, ladder[-1].n_node, 0, 1)  # no room for the padding node
    with pytest.raises(ValueError, match="growth"):
        padding_budgets(ds, 32, growth=1.0)
    # NumPy scalars are numbers like any other (they used to be refused as "not an int").
    assert padding_budgets(ds, np.int64(32), growth=np.float32(1.5), multiple=np.int32(8)) == (
        padding_budgets(ds, 32, growth=1.5, multiple=8)
    )
    for bad in [(), (1.0, float("inf")), ("a",), 2.0]:
        with pytest.raises(ValueError, match="`anchors` must be a non-empty sequence"):
            padding_budgets(ds, 32, anchors=bad)


def test_more_padding_anchors_pad_less_and_compile_more(data_dir):
    """Rungs at more standard deviations above the mean batch cut the padding of full
    batches (measured over 20 shuffled epochs), at the price of more budgets."""
    ds = _mutag(data_dir)
    nodes = np.array([g.num_nodes for g in ds.graphs])
    edges = np.array([g.num_edges for g in ds.graphs])

    def padded_fraction(anchors):
        batcher = GraphBatcher(ds, 32, seed=0, anchors=anchors)
        real = padded = 0
        for epoch in range(20):
            for indices in batcher.batch_indices(epoch):
                if len(indices) == 32:
                    budget = batcher.budget_for(indices)
                    real += nodes[indices].sum() + edges[indices].sum()
                    padded += budget.n_node + budget.n_edge
        return padded / real - 1, len(batcher.budgets)

    one, few = padded_fraction((3.0,))
    many, more = padded_fraction((0.0, 1.0, 2.0, 3.0))
    assert more > few
    assert 0 < many < 0.6 * one, (many, one)
    # Order and repeats of the anchors do not matter.
    assert padding_budgets(ds, 32, anchors=(3, 1, 1)) == padding_budgets(ds, 32, anchors=(1, 3))


@pytest.mark.parametrize("shards", [1, 4])
def test_pass_budget_is_the_tightest_one_budget_for_an_ordered_pass(data_dir, shards):
    """Every batch (sub-batch) of an unshuffled epoch fits it, and it is tight: one multiple
    fewer nodes, or edges, and some batch no longer fits. MUTAG's 188 graphs in batches of
    32: the last one partial, split over 4 shards as GraphBatcher splits it."""
    ds = _mutag(data_dir)
    budget = pass_budget(ds, 32, num_shards=shards)
    assert budget.n_graph == 32 // shards + 1 and budget.n_node % 8 == budget.n_edge % 8 == 0
    batcher = GraphBatcher(ds, 32, shuffle=False, budgets=[budget], num_shards=shards)
    nodes = np.array([g.num_nodes for g in ds.graphs])
    edges = np.array([g.num_edges for g in ds.graphs])
    groups = [g for ix in batcher.batch_indices(0) for g in batcher.shard_indices(ix)]
    assert sum(len(g) for g in groups) == len(ds) and len(batcher) == 6
    most = max(nodes[g].sum() for g in groups), max(edges[g].sum() for g in groups)
    assert budget.n_node - 8 < most[0] + 1 <= budget.n_node
    assert budget.n_edge - 8 < most[1] <= budget.n_edge
    batches = list(batcher.epoch(0))  # padding to it raises nothing, and one shape for all
    lead = (shards,) if shards > 1 else ()
    assert {b.nodes.shape[:-1] for b in batches} == {(*lead, budget.n_node)}
    assert {b.senders.shape for b in batches} == {(*lead, budget.n_edge)}
    assert pass_budget(ds, 32, num_shards=shards, multiple=1).n_node == most[0] + 1
    for bad, match in [
        (dict(batch_size=0), "`batch_size` must be a positive int, got 0"),
        (dict(batch_size=30, num_shards=4), "`batch_size`=30 must be a multiple of `num_shards`=4"),
        (dict(batch_size=32, multiple=0), "`multiple` must be a positive int, got 0"),
    ]:
        with pytest.raises(ValueError, match=match):
            pass_budget(ds, **bad)
    with pytest.raises(ValueError, match="`graphs` is empty"):
        pass_budget([], 32)


def test_padding_budgets_with_a_negative_anchor_end_in_a_few_rungs():
    # Skewed sizes and an anchor below the mean: its rung is 0 or negative, and growing by
    # `growth` from it never reached the largest batch (the call hung); growth now starts
    # from the mean batch's rung at least.
    from jaxcl.data import Graph

    def graph(n):
        ring = np.arange(n)
        return Graph(senders=ring, receivers=(ring + 1) % n, node_features=np.ones((n, 1)), label=0)

    graphs = [graph(1)] * 20 + [graph(200)]
    budgets = padding_budgets(graphs, 1, anchors=(-3.0,))
    assert 1 < len(budgets) <= 16
    assert budgets[-1].n_node >= 201 and budgets[-1].n_edge >= 200  # fits the largest


def test_batcher_is_deterministic_and_covers_each_graph_once(data_dir):
    ds = _mutag(data_dir)
    batcher = GraphBatcher(ds, 32, seed=3)
    assert len(batcher) == 6  # 188 = 5 * 32 + 28
    first = [b.globals for b in batcher.epoch(0)]
    again = [b.globals for b in batcher.epoch(0)]
    other = [b.globals for b in batcher.epoch(1)]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(first, other, strict=True))
    order = np.concatenate(batcher.batch_indices(0))
    np.testing.assert_array_equal(np.sort(order), np.arange(len(ds)))
    labels = np.concatenate([g[g >= 0] for g in first])
    np.testing.assert_array_equal(labels, ds.labels[order])
    dropped = GraphBatcher(ds, 32, seed=3, drop_remainder=True)
    assert len(dropped) == 5 and len(list(dropped.epoch(0))) == 5
    # Seeds and epochs are checked where they are given, naming the argument.
    with pytest.raises(ValueError, match="`seed` must be an int >= 0, got -1"):
        GraphBatcher(ds, 32, seed=-1)
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match="`epoch` must be an int >= 0"):
            batcher.order(bad)
    np.testing.assert_array_equal(
        GraphBatcher(ds, np.int64(32), seed=np.int64(3)).order(np.int64(1)), batcher.order(1)
    )


def test_an_epoch_of_mutag_compiles_once_per_budget(data_dir):
    """Over two shuffled epochs of MUTAG, a jitted function compiles once per budget used,
    and its per-graph results equal those of the unpadded graphs."""
    ds = _mutag(data_dir)
    batcher = GraphBatcher(ds, 32, seed=0)
    traces = []

    @jax.jit
    def per_graph_stats(graph):
        traces.append(graph.nodes.shape)  # runs once per trace, i.e. per compilation
        masks = padding_masks(graph)
        degree = aggregate_edges(
            jnp.ones(graph.senders.shape),
            graph.receivers,
            graph.nodes.shape[0],
            edge_mask=masks.edges,
            sorted_receivers=True,
        )
        feature_sum = pool_nodes(graph, graph.nodes, node_mask=masks.nodes)
        return feature_sum, pool_nodes(graph, degree, node_mask=masks.nodes)

    used, num_batches = set(), 0
    for epoch in range(2):
        for indices, batch in zip(batcher.batch_indices(epoch), batcher.epoch(epoch), strict=True):
            used.add(batcher.budget_for(indices))
            assert batch.nodes.shape[0] == batcher.budget_for(indices).n_node
            features, degrees = per_graph_stats(batch)
            num_batches += 1
            for row, i in enumerate(indices):
                g = ds.graphs[i]
                np.testing.assert_allclose(features[row], g.node_features.sum(0), atol=1e-5)
                assert degrees[row] == g.num_edges
            assert not np.asarray(features[len(indices) :]).any()
    assert num_batches == 12
    assert len(traces) == len(used), (traces, used)
    assert per_graph_stats._cache_size() == len(used)
    assert len(used) <= len(batcher.budgets) and len(used) < num_batches


def test_node_graph_of_cora(data_dir):
    cora = _cora(data_dir)
    g = node_graph(cora)
    assert g.nodes.shape == (2708, 1433) and g.n_node.tolist() == [2708]
    assert g.n_edge.tolist() == [10556] and g.edges is None
    assert (np.diff(g.receivers) >= 0).all()
    assert _edge_set(g.senders, g.receivers) == _edge_set(cora.senders, cora.receivers)


# ----------------------------------------------------------------------------- augmentations


def _chain(num_nodes):
    s = np.arange(num_nodes - 1)
    senders, receivers = np.concatenate([s, s + 1]), np.concatenate([s + 1, s])
    order = np.lexsort((senders, receivers))
    return jraph.GraphsTuple(
        nodes=np.zeros((num_nodes, 1), np.float32),
        edges=None,
        senders=senders[order],
        receivers=receivers[order],
        globals=None,
        n_node=np.array([num_nodes]),
        n_edge=np.array([2 * num_nodes - 2]),
    )


def test_drop_edges_keeps_about_one_minus_p_with_a_static_shape():
    graph = _chain(20001)  # 40,000 directed edges
    num_edges = graph.senders.shape[0]
    drop = jax.jit(drop_edges, static_argnums=2)
    for p in (0.2, 0.4):
        keep = drop(jax.random.key(0), graph, p)
        assert keep.shape == (num_edges,) and keep.dtype == jnp.bool_
        std = np.sqrt(p * (1 - p) / num_edges)
        assert abs(float(keep.mean()) - (1 - p)) < 5 * std
    assert drop(jax.random.key(1), graph, 0.0).all()
    assert not drop(jax.random.key(1), graph, 1.0).any()
    # GRACE drops the two directions of an undirected edge independently.
    keep = np.asarray(drop(jax.random.key(2), graph, 0.4))
    kept = {(s, r) for s, r, k in zip(graph.senders, graph.receivers, keep, strict=True) if k}
    one_way = np.mean([((s, s + 1) in kept) != ((s + 1, s) in kept) for s in range(20000)])
    assert abs(one_way - 2 * 0.4 * 0.6) < 0.02
    # An existing mask is respected, and keys matter.
    prior = np.arange(num_edges) % 2 == 0
    assert not np.asarray(drop_edges(jax.random.key(3), graph, 0.1, edge_mask=prior))[~prior].any()
    assert not np.array_equal(keep, drop(jax.random.key(5), graph, 0.4))


def test_mask_features_masks_whole_columns():
    x = jax.random.normal(jax.random.key(0), (50, 2000)) + 3.0  # no zeros of its own
    out = np.asarray(jax.jit(mask_features, static_argnums=2)(jax.random.key(1), x, 0.3))
    zero_cols = (out == 0).all(axis=0)
    kept_cols = (out == np.asarray(x)).all(axis=0)
    assert (zero_cols | kept_cols).all(), "a column must be all masked or untouched"
    assert abs(zero_cols.mean() - 0.3) < 5 * np.sqrt(0.3 * 0.7 / 2000)
    assert np.array_equal(np.asarray(mask_features(jax.random.key(1), x, 0.0)), np.asarray(x))
    with pytest.raises(ValueError, match="`p` must lie in"):
        mask_features(jax.random.key(1), x, 1.5)


# ----------------------------------------------------------------------------- diffusion


def _mvgrl_ppr(adjacency, alpha):
    """MVGRL's compute_ppr, written out with NumPy (dense A with self loops)."""
    a = adjacency + np.eye(adjacency.shape[0])
    d_inv_sqrt = np.diag(a.sum(1) ** -0.5)
    t = d_inv_sqrt @ a @ d_inv_sqrt
    return alpha * np.linalg.inv(np.eye(a.shape[0]) - (1 - alpha) * t)


def test_ppr_exact_matches_a_numpy_inverse():
    g = _random_graph(np.random.default_rng(4), 30, p=0.15)
    adjacency = np.zeros((30, 30))
    adjacency[g.receivers, g.senders] = 1.0
    want = _mvgrl_ppr(adjacency, 0.2)
    got = ppr_matrix(g.senders, g.receivers, 30, alpha=0.2)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    d = ppr_diffusion(g.senders, g.receivers, 30, eps=0.0, method="exact")
    dense = np.zeros((30, 30))
    dense[d.receivers, d.senders] = d.weights
    np.testing.assert_allclose(dense, want, rtol=1e-6, atol=1e-7)
    assert (np.diff(d.receivers) >= 0).all()
    top = ppr_diffusion(g.senders, g.receivers, 30, eps=0.0, top_k=4)
    assert np.bincount(top.receivers, minlength=30).max() <= 4
    for i in range(30):
        np.testing.assert_allclose(
            np.sort(top.weights[top.receivers == i])[::-1], np.sort(want[i])[::-1][:4], rtol=1e-6
        )


def test_ppr_arguments_are_checked_and_numpy_scalars_accepted():
    g = _random_graph(np.random.default_rng(4), 30, p=0.15)
    args = (g.senders, g.receivers, 30)
    want = ppr_diffusion(*args, alpha=0.2, eps=1e-3, top_k=4, method="sparse")
    got = ppr_diffusion(
        *args,
        alpha=np.float32(0.2),
        eps=np.float64(1e-3),
        top_k=np.int64(4),
        method="sparse",
        max_iterations=np.int32(200),
    )
    np.testing.assert_allclose(got.weights, want.weights, rtol=1e-6)
    # Zero terms of the series used to give an empty diffusion without a word.
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="`max_iterations` must be a positive int"):
            ppr_diffusion(*args, eps=1e-3, method="sparse", max_iterations=bad)
    for name, bad in (("alpha", 0.0), ("alpha", True), ("eps", -1.0), ("eps", np.inf)):
        with pytest.raises(ValueError, match=f"`{name}`"):
            ppr_diffusion(*args, **{name: bad})
    with pytest.raises(ValueError, match="`top_k` must be a positive int or None"):
        ppr_diffusion(*args, top_k=np.float32(2.0))


def test_sparse_ppr_is_close_to_exact_on_cora(data_dir):
    cora = _cora(data_dir)
    exact = ppr_matrix(cora.senders, cora.receivers, cora.num_nodes)
    eps = 1e-3
    d = ppr_diffusion(cora.senders, cora.receivers, cora.num_nodes, eps=eps, method="sparse")
    approx = np.zeros_like(exact)
    approx[d.receivers, d.senders] = d.weights
    assert (np.diff(d.receivers) >= 0).all()
    assert d.weights.size < 0.05 * exact.size and (d.weights >= eps).all()
    assert np.abs(approx - exact).max() < 10 * eps
    assert (approx <= exact + 1e-6).all(), "the truncated series under-estimates"
    k = 8
    top_exact = -np.sort(-exact, axis=1)[:, :k]
    top_approx = -np.sort(-approx, axis=1)[:, :k]
    np.testing.assert_allclose(top_approx, top_exact, atol=10 * eps)
    # The approximate top-k are (up to ties within the error) the exact top-k.
    picked = np.argsort(-approx, axis=1)[:, :k]
    assert (np.take_along_axis(exact, picked, 1) >= top_exact[:, -1:] - 10 * eps).all()


def test_ppr_dataset_feeds_the_batcher():
    rng = np.random.default_rng(5)
    graphs = tuple(_random_graph(rng, n, label=i % 2) for i, n in enumerate((4, 6, 5)))
    ds = GraphDataset("toy", graphs, np.array([0, 1, 0]), num_classes=2, num_features=3)
    diffused, weights = ppr_dataset(ds, eps=0.0)
    dense = [ppr_matrix(g.senders, g.receivers, g.num_nodes) for g in graphs]
    assert [g.num_edges for g in diffused.graphs] == [int((m > 0).sum()) for m in dense]
    assert diffused.graphs[0].num_edges == 16  # connected: every pair, self loops included
    batch = next(GraphBatcher(diffused, 3, shuffle=False, edge_weights=weights).epoch(0))
    got = np.zeros((4, 4))
    got[batch.receivers[:16], batch.senders[:16]] = batch.edges[:16]
    np.testing.assert_allclose(got, dense[0], rtol=1e-6)


# ----------------------------------------------------------------------------- segment ops


def test_aggregate_sorted_equals_unsorted_and_numpy():
    rng = np.random.default_rng(6)
    receivers = np.sort(rng.integers(0, 50, 400)).astype(np.int32)
    messages = rng.normal(size=(400, 5)).astype(np.float32)
    mask = rng.random(400) < 0.7
    perm = rng.permutation(400)
    agg = jax.jit(aggregate_edges, static_argnames=("num_nodes", "sorted_receivers"))
    fast = agg(messages, receivers, num_nodes=50, edge_mask=mask, sorted_receivers=True)
    slow = agg(
        messages[perm], receivers[perm], num_nodes=50, edge_mask=mask[perm], sorted_receivers=False
    )
    want = np.zeros((50, 5))
    np.add.at(want, receivers[mask], messages[mask])
    np.testing.assert_allclose(fast, want, atol=1e-5)
    np.testing.assert_allclose(slow, fast, atol=1e-5)
    grad = jax.grad(lambda m: agg(m, receivers, num_nodes=50, sorted_receivers=True).sum())(
        jnp.asarray(messages)
    )
    np.testing.assert_array_equal(grad, np.ones_like(messages))


def test_pool_nodes_sum_and_mean_with_mask():
    graph = batch_graphs(
        [_random_graph(np.random.default_rng(i), n) for i, n in enumerate((3, 5))],
        PaddingBudget(12, 64, 4),
    )
    values = jnp.arange(12.0)[:, None] * jnp.array([1.0, -2.0])
    mask = padding_masks(graph).nodes
    pool = jax.jit(pool_nodes, static_argnames="reduction")
    total = pool(graph, values, node_mask=mask)
    mean = pool(graph, values, node_mask=mask, reduction="mean")
    v = np.asarray(values)
    np.testing.assert_allclose(total, [v[:3].sum(0), v[3:8].sum(0), 0 * v[0], 0 * v[0]])
    np.testing.assert_allclose(mean, [v[:3].mean(0), v[3:8].mean(0), 0 * v[0], 0 * v[0]])
    vmapped = jax.jit(jax.vmap(lambda x: pool_nodes(graph, x, node_mask=mask)))(
        jnp.stack([values, values])
    )
    np.testing.assert_allclose(vmapped[1], total)


def test_gcn_normalization_matches_dense_reference():
    rng = np.random.default_rng(7)
    g = _random_graph(rng, 9, p=0.5)
    mask = rng.random(g.num_edges) < 0.6  # asymmetric: directions dropped independently
    weight = rng.random(g.num_edges).astype(np.float32) + 0.5
    order = np.lexsort((g.senders, g.receivers))
    s, r, mask, weight = g.senders[order], g.receivers[order], mask[order], weight[order]
    edge_coef, self_coef = gcn_normalization(
        s, r, 9, edge_weight=weight, edge_mask=mask, sorted_receivers=True
    )
    a = np.zeros((9, 9))
    np.add.at(a, (r[mask], s[mask]), weight[mask])
    a += np.eye(9)
    d = np.diag(a.sum(1) ** -0.5)
    want = d @ a @ d
    got = np.diag(np.asarray(self_coef)).astype(np.float64)
    np.add.at(got, (r, s), np.asarray(edge_coef))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_gather_nodes_and_aggregate_edges_match_indexing_with_gradients():
    """The in-bounds gather and segment sum give ``x[senders]`` summed at the receivers,
    and the same gradient as plain indexing and ``np.add.at``."""
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(7, 3)).astype(np.float32))
    senders = rng.integers(0, 7, 20)
    receivers = np.sort(rng.integers(0, 7, 20))

    def ours(x):
        return aggregate_edges(gather_nodes(x, senders), receivers, 7, sorted_receivers=True)

    want = np.zeros((7, 3), np.float32)
    np.add.at(want, receivers, np.asarray(x)[senders])
    np.testing.assert_allclose(jax.jit(ours)(x), want, rtol=1e-6)
    weights = jnp.asarray(rng.normal(size=(7, 3)).astype(np.float32))
    grad = jax.grad(lambda x: jnp.sum(weights * ours(x)))(x)
    want_grad = np.zeros((7, 3), np.float32)
    np.add.at(want_grad, senders, np.asarray(weights)[receivers])
    np.testing.assert_allclose(grad, want_grad, rtol=1e-5, atol=1e-6)


def _stacked_batch(rng, sizes, budget):
    """Sub-batches of random graphs (one list of sizes each) stacked on a leading axis, as
    ``GraphBatcher(num_shards=len(sizes))`` yields them."""
    subs = [batch_graphs([_random_graph(rng, n) for n in group], budget) for group in sizes]
    return jax.tree.map(lambda *xs: np.stack(xs), *subs), subs


def test_segment_ops_on_a_stacked_batch_apply_per_sub_batch():
    """Stacked inputs (``[S, ...]``, node ids local to each sub-batch) give the op of each
    sub-batch, under jit; masks and graph ids come flattened, ids global."""
    rng = np.random.default_rng(8)
    budget = PaddingBudget(24, 80, 4)
    stacked, subs = _stacked_batch(rng, [[4, 6], [7], [3, 2, 5]], budget)
    num_sub, num_nodes = stacked.nodes.shape[:2]
    values = jnp.asarray(rng.normal(size=(num_sub, num_nodes, 2)).astype(np.float32))
    edge_mask = rng.random(stacked.senders.shape) < 0.7

    @jax.jit
    def ops(graph, values, edge_mask):
        masks = padding_masks(graph)
        messages = gather_nodes(values, graph.senders, batch_dims=1)
        summed = aggregate_edges(
            messages, graph.receivers, num_nodes, edge_mask=edge_mask, sorted_receivers=True
        )
        flat_mask = aggregate_edges(  # a flattened mask, as padding_masks gives
            messages, graph.receivers, num_nodes, edge_mask=edge_mask.reshape(-1)
        )
        pooled = pool_nodes(graph, values, node_mask=masks.nodes, reduction="mean")
        coef = gcn_normalization(graph.senders, graph.receivers, num_nodes, edge_mask=edge_mask)
        return masks, summed, flat_mask, pooled, coef, node_graph_ids(graph)

    masks, summed, flat_mask, pooled, (edge_coef, self_coef), ids = ops(stacked, values, edge_mask)
    assert summed.shape == (num_sub, num_nodes, 2) and pooled.shape == (num_sub, 4, 2)
    assert masks.nodes.shape == (num_sub * num_nodes,) and ids.shape == masks.nodes.shape
    np.testing.assert_array_equal(flat_mask, summed)
    for s, sub in enumerate(subs):
        want_masks = padding_masks(sub)
        for got, want in zip(masks, want_masks, strict=True):
            np.testing.assert_array_equal(np.asarray(got).reshape(num_sub, -1)[s], want)
        keep = edge_mask[s]
        want = np.zeros((num_nodes, 2), np.float32)
        np.add.at(want, sub.receivers[keep], np.asarray(values[s])[sub.senders[keep]])
        np.testing.assert_allclose(summed[s], want, rtol=1e-6, atol=1e-6)
        want_pool = pool_nodes(sub, values[s], node_mask=want_masks.nodes, reduction="mean")
        np.testing.assert_allclose(pooled[s], want_pool, rtol=1e-6)
        e, c = gcn_normalization(sub.senders, sub.receivers, num_nodes, edge_mask=keep)
        np.testing.assert_allclose(edge_coef[s], e, rtol=1e-6)
        np.testing.assert_allclose(self_coef[s], c, rtol=1e-6)
        # Global ids: graph g of sub-batch s is row s * n_graph + g of the flattened graphs.
        local = np.repeat(np.arange(4), sub.n_node)
        np.testing.assert_array_equal(ids[s * num_nodes : (s + 1) * num_nodes], s * 4 + local)
    # A stacked gather is said explicitly; 2-D indices are otherwise a plain gather.
    plain = gather_nodes(values[0], stacked.senders)
    assert plain.shape == (num_sub, stacked.senders.shape[1], 2)
    with pytest.raises(ValueError, match="`values` must have leading shape"):
        gather_nodes(values[:2], stacked.senders, batch_dims=1)
    with pytest.raises(ValueError, match="`messages` must have leading shape"):
        aggregate_edges(values, stacked.receivers, num_nodes)


def test_padding_budgets_for_a_given_last_batch_size(data_dir):
    """A sharded batcher's last sub-batches hold ``ceil(remainder / num_shards)`` graphs: the
    ladder gets rungs for that size, not for ``len(graphs) % batch_size``."""
    ds = _mutag(data_dir)  # 188 graphs
    default = padding_budgets(ds, 32)  # rungs for the last batch of 188 % 32 = 28 graphs
    assert padding_budgets(ds, 32, last_batch_size=28) == default
    assert padding_budgets(ds, 32, last_batch_size=0) == padding_budgets(
        ds, 32, drop_remainder=True
    )
    small = padding_budgets(ds, 32, last_batch_size=3)
    nodes = np.sort([g.num_nodes for g in ds.graphs])
    assert small[0].n_node < default[0].n_node and small[0].n_node <= nodes[-3:].sum() + 8
    with pytest.raises(ValueError, match="`last_batch_size` must be an int in"):
        padding_budgets(ds, 32, last_batch_size=33)


def test_bfloat16_sums_over_many_nodes_and_edges_are_added_in_float32():
    """Pooling 600 nodes' bfloat16 states, or 600 messages at one receiver: each sum used to
    be accumulated in bfloat16, whose 8-bit mantissa drops the small terms (17% off here);
    now added in float32 and rounded once (off by bfloat16's rounding of the result)."""
    from jaxcl.graphs import SparseMatrix, sparse_matmul

    rng = np.random.default_rng(0)
    values = rng.uniform(0, 2, (600, 3)).astype(np.float32)
    low = jnp.asarray(values, jnp.bfloat16)
    exact = np.asarray(low, np.float64).sum(axis=0)  # the bfloat16 inputs, summed exactly
    g = jraph.GraphsTuple(
        nodes=np.zeros((600, 1)), edges=None, senders=np.zeros(0, int),
        receivers=np.zeros(0, int), n_node=np.array([600]), n_edge=np.array([0]), globals=None,
    )  # fmt: skip
    for reduction, want in (("sum", exact), ("mean", exact / 600)):
        got = pool_nodes(g, low, reduction=reduction)
        assert got.dtype == jnp.bfloat16
        np.testing.assert_allclose(np.asarray(got, np.float64)[0], want, rtol=8e-3)
    # Only a widened narrow float is rounded back: integers' mean stays a float.
    pair = jraph.GraphsTuple(
        nodes=np.zeros((3, 1)), edges=None, senders=np.zeros(0, int),
        receivers=np.zeros(0, int), n_node=np.array([2, 1]), n_edge=np.array([0, 0]), globals=None,
    )  # fmt: skip
    means = pool_nodes(pair, jnp.array([1, 2, 5]), reduction="mean")
    np.testing.assert_allclose(np.asarray(means), [1.5, 5.0])
    got = aggregate_edges(low, jnp.zeros(600, jnp.int32), 2, sorted_receivers=True)
    assert got.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(got, np.float64)[0], exact, rtol=8e-3)
    # one row of degree 600, one entry per slab: 600 terms added at the row
    adjacency = SparseMatrix.from_dense(np.ones((1, 600), np.float32), slab_width=1)
    got = sparse_matmul(adjacency, low)
    assert got.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(got, np.float64)[0], exact, rtol=8e-3)


# ------------------------------------------------------------------- review findings


def test_sparse_node_features_give_the_node_count_of_their_rows():
    """A ``SparseMatrix``'s first leaf counts its slabs (here 3 per row), not its rows:
    graph ids, padding masks and pooling used to take that for the node count."""
    from jaxcl.graphs import SparseMatrix

    rng = np.random.default_rng(20)
    graphs = [_random_graph(rng, n, num_features=40) for n in (3, 4)]
    dense = batch_graphs(graphs, PaddingBudget(9, 64, 3))
    sparse = dense._replace(nodes=SparseMatrix.from_dense(np.asarray(dense.nodes) + 1.0))
    assert jax.tree.leaves(sparse.nodes)[0].shape[0] != 9  # slabs, not rows

    @jax.jit  # as GRACE's step takes them
    def ops(graph):
        masks = padding_masks(graph)
        return masks, node_graph_ids(graph), pool_nodes(graph, jnp.ones(9), node_mask=masks.nodes)

    (masks, ids, pooled), want = ops(sparse), ops(dense)
    for got, expected in zip(masks, want[0], strict=True):
        np.testing.assert_array_equal(got, expected)
    assert ids.tolist() == [0, 0, 0, 1, 1, 1, 1, 2, 2] and pooled.tolist() == [3.0, 4.0, 0.0]
    for fn in (node_graph_ids, padding_masks, lambda g: pool_nodes(g, jnp.ones(9))):
        with pytest.raises(ValueError, match=r"`graph.nodes` must be an array .* got dict"):
            fn(dense._replace(nodes={"x": dense.nodes}))


def test_drop_edges_on_a_stacked_batch_draws_every_edge_of_every_sub_batch():
    rng = np.random.default_rng(21)
    batcher = GraphBatcher([_random_graph(rng, n) for n in (4, 5, 6, 3)], 4, num_shards=2)
    stacked = next(batcher.epoch(0))
    num_sub, num_edges = stacked.senders.shape
    real = jax.jit(padding_masks)(stacked).edges  # flattened [S * E]
    drop = jax.jit(drop_edges, static_argnums=2)
    keep = drop(jax.random.key(0), stacked, 0.5, edge_mask=real)
    assert keep.shape == (num_sub * num_edges,) and keep.dtype == jnp.bool_
    assert not np.asarray(keep)[~np.asarray(real)].any() and 0 < keep.sum() < real.sum()
    square = drop(jax.random.key(0), stacked, 0.5, edge_mask=real.reshape(num_sub, -1))
    np.testing.assert_array_equal(square, keep)
    want = (
        f"`edge_mask` must have shape \\({num_sub * num_edges},\\) or \\({num_sub}, {num_edges}\\)"
    )
    with pytest.raises(ValueError, match=f"drop_edges: {want}, got \\({num_edges},\\)"):
        drop_edges(jax.random.key(0), stacked, 0.5, edge_mask=real[:num_edges])


def test_ppr_refuses_one_way_edges_and_float_ids():
    """A one-direction edge list used to give a directed diffusion, float ids were cut."""
    one_way = (np.array([0, 1]), np.array([1, 2]), 3)
    for fn in (ppr_matrix, ppr_diffusion):
        with pytest.raises(ValueError, match=rf"{fn.__name__}: the graph must be undirected.*"
                           r"edge 0 \(0 -> 1\) has no reverse"):  # fmt: skip
            fn(*one_way)
        with pytest.raises(ValueError, match=f"{fn.__name__}: `senders` must be an integer"):
            fn(np.array([0.0, 1.7]), np.array([1, 0]), 2)
    with pytest.raises(ValueError, match="more often in one direction"):
        ppr_matrix(np.array([0, 0, 1]), np.array([1, 1, 0]), 2)  # 0 -> 1 twice, 1 -> 0 once
    assert ppr_matrix(np.array([0, 1, 2]), np.array([1, 0, 2]), 3).shape == (3, 3)  # self loop


def test_ppr_dataset_gives_an_empty_graph_an_empty_diffusion_and_names_a_bad_graph():
    rng = np.random.default_rng(22)
    empty = Graph(np.zeros(0, int), np.zeros(0, int), np.zeros((0, 3)), label=1)
    graphs = (_random_graph(rng, 4), empty, _random_graph(rng, 3))
    ds = GraphDataset("toy", graphs, np.array([0, 1, 0]), num_classes=2, num_features=3)
    diffused, weights = ppr_dataset(ds, eps=0.0)
    assert diffused.graphs[1].num_nodes == 0 and diffused.graphs[1].num_edges == 0
    assert weights[1].shape == (0,) and weights[1].dtype == np.float32
    assert next(GraphBatcher(diffused, 3, shuffle=False, edge_weights=weights).epoch(0))
    one_way = Graph([0], [1], np.zeros((2, 3)), label=0)
    bad = GraphDataset("toy", graphs + (one_way,), np.array([0, 1, 0, 0]), 2, 3)
    with pytest.raises(ValueError, match=r"ppr_dataset: graph 3 of 'toy': ppr_diffusion: the g"):
        ppr_dataset(bad)


def test_node_graph_refuses_float_and_wrapping_edge_ids(data_dir):
    cora = _cora(data_dir)
    s, r = cora.senders, cora.receivers
    with pytest.raises(ValueError, match="node_graph: `senders` must hold int32 values, got float"):
        node_graph(cora, senders=s + 0.5, receivers=r)  # used to truncate to valid ids
    with pytest.raises(
        ValueError, match=r"node_graph: `receivers` must hold values that fit int32"
    ):
        node_graph(cora, senders=s, receivers=r.astype(np.int64) + 2**32)  # used to wrap to r
    with pytest.raises(ValueError, match=r"`senders` must hold node ids in \[0, 2708\), got send"):
        node_graph(cora, senders=s.astype(np.int64) + 1, receivers=r)


def test_padding_budgets_of_a_generator_and_budgets_of_non_integers():
    rng = np.random.default_rng(23)
    graphs = [_random_graph(rng, n) for n in (4, 5, 6, 3, 7)]
    assert padding_budgets((g for g in graphs), 2) == padding_budgets(graphs, 2)
    bad_budgets = {"n_node": (40.5, 64, 3), "n_edge": (40, -1, 3), "n_graph": (40, 64, 0)}
    for field, sizes in bad_budgets.items():
        bad = PaddingBudget(*sizes)
        with pytest.raises(ValueError, match=rf"batch_graphs: `budget.{field}` must be an int"):
            batch_graphs(graphs[:1], bad)
        with pytest.raises(ValueError, match=rf"select_budget: `budgets\[1\].{field}` must be"):
            select_budget([PaddingBudget(8, 8, 2), bad], 3, 4, 1)
        with pytest.raises(ValueError, match=rf"GraphBatcher: `budgets\[0\].{field}` must be"):
            GraphBatcher(graphs, 2, budgets=[bad])
    assert batch_graphs(graphs[:1], PaddingBudget(8, 64, 2)).n_node.tolist() == [4, 4]


def test_batches_refuse_graphs_of_other_widths_up_front():
    rng = np.random.default_rng(24)
    graphs = [_random_graph(rng, 4), _random_graph(rng, 5), _random_graph(rng, 3, 2)]
    for make in (batch_graphs, lambda gs, **kw: GraphBatcher(gs, 2, **kw)):
        with pytest.raises(ValueError, match="graph 2 has 2 node features, graph 0 has 3"):
            make(graphs)
        weights = [np.ones(g.num_edges) for g in graphs[:2]]
        weights[1] = weights[1][:, None]
        with pytest.raises(
            ValueError, match=r"graph 1 has edge weights \[num_edges, 1\], graph 0 \[num_edges\]"
        ):
            make(graphs[:2], edge_weights=weights)
