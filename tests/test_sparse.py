"""Tests for jaxcl.graphs.SparseMatrix (slab layout, products and their gradients against
dense ones, new values through the same pattern, column masks), GCN propagation through an
adjacency pattern, the pattern of a padded batch built under jit (``edge_pattern``), and GRACE's
sparse layout against its dense one on Cora."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import jraph
import numpy as np
import pytest
from flax import nnx

from jaxcl import methods, models, training
from jaxcl.data import NodeDataset, load_planetoid
from jaxcl.graphs import (
    SparseMatrix,
    adjacency_pattern,
    edge_dots,
    edge_pattern,
    mask_features,
    node_graph,
    sparse_matmul,
)


def _random_sparse(rng, n, m, density, long_rows=()):
    x = np.where(rng.random((n, m)) < density, rng.normal(size=(n, m)), 0.0).astype(np.float32)
    for r in long_rows:  # rows longer than a slab
        x[r] = rng.normal(size=m)
    x[1] = 0.0  # an empty row
    return x


@pytest.mark.parametrize("slab_width", [1, 4, 16])
def test_sparse_matmul_and_its_gradients_match_the_dense_product(slab_width):
    rng = np.random.default_rng(0)
    x = _random_sparse(rng, 23, 40, 0.15, long_rows=(3, 17))
    m = SparseMatrix.from_dense(x, slab_width=slab_width)
    assert m.shape == (23, 40) and m.nnz == np.count_nonzero(x)
    assert m.by_row.indices.shape[1] == slab_width == m.by_col.indices.shape[1]
    assert np.all(np.diff(np.asarray(m.by_row.rows)) >= 0)  # sorted, as the segment sum says
    np.testing.assert_array_equal(m.todense(), x)
    w = jnp.asarray(rng.normal(size=(40, 7)), jnp.float32)
    np.testing.assert_allclose(jax.jit(sparse_matmul)(m, w), x @ w, rtol=1e-5, atol=1e-5)

    # Gradients in the dense factor (through the stored transpose) and in the stored values.
    r, c = np.nonzero(x)
    values = jnp.asarray(x[r, c])

    def f_sparse(values, w):
        return jnp.sum(jnp.sin(m.with_values(values) @ w))

    def f_dense(values, w):
        return jnp.sum(jnp.sin(jnp.zeros(x.shape).at[r, c].set(values) @ w))

    g_sparse = jax.jit(jax.grad(f_sparse, (0, 1)))(values, w)
    g_dense = jax.grad(f_dense, (0, 1))(values, w)
    for a, b in zip(g_sparse, g_dense, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_from_coo_keeps_duplicates_and_zeros_as_entries_and_checks_its_input():
    m = SparseMatrix.from_coo([0, 0, 2, 1], [1, 1, 0, 2], [1.0, 2.0, 0.0, 4.0], (3, 3))
    assert m.nnz == 4  # every entry keeps its slot: with_values may change them
    np.testing.assert_array_equal(m.todense(), [[0, 3, 0], [0, 0, 4], [0, 0, 0]])
    np.testing.assert_array_equal(
        m.with_values(jnp.array([1.0, 1.0, 5.0, 1.0])).todense(), [[0, 2, 0], [0, 0, 1], [5, 0, 0]]
    )
    empty = SparseMatrix.from_coo([], [], [], (2, 3))
    np.testing.assert_array_equal(empty @ np.ones((3, 4), np.float32), np.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"`cols` must lie in \[0, 3\), got values in \[0, 3\]"):
        SparseMatrix.from_coo([0, 1], [0, 3], [1.0, 1.0], (2, 3))
    with pytest.raises(ValueError, match="1-D of one length"):
        SparseMatrix.from_coo([0, 1], [0], [1.0, 1.0], (2, 3))
    with pytest.raises(ValueError, match="`slab_width` must be a positive int, got 0"):
        SparseMatrix.from_coo([0], [0], [1.0], (2, 3), slab_width=0)
    with pytest.raises(ValueError, match=r"must have shape \(3, d\) for a \(3, 3\) matrix"):
        sparse_matmul(m, np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"`values` must have shape \(4,\), got \(3,\)"):
        m.with_values(jnp.ones(3))


def test_mask_features_masks_the_same_columns_of_sparse_and_dense_features():
    rng = np.random.default_rng(1)
    x = _random_sparse(rng, 12, 50, 0.3)
    m = SparseMatrix.from_dense(x, slab_width=4)
    key = jax.random.key(5)
    dense = np.asarray(mask_features(key, jnp.asarray(x), 0.4))
    sparse = jax.jit(mask_features, static_argnums=2)(key, m, 0.4)
    assert isinstance(sparse, SparseMatrix)
    np.testing.assert_array_equal(sparse.todense(), dense)
    w = rng.normal(size=(50, 3)).astype(np.float32)
    np.testing.assert_allclose(sparse @ w, dense @ w, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"`keep` must be bool of shape \(50,\)"):
        m.mask_columns(jnp.ones(50))


def _toy(rng, num_nodes=30, num_features=40):
    upper = np.triu(rng.random((num_nodes, num_nodes)) < 0.15, 1)
    s, r = np.nonzero(upper | upper.T)
    x = np.where(rng.random((num_nodes, num_features)) < 0.1, 1.0, 0.0).astype(np.float32)
    m = np.zeros(num_nodes, bool)
    return NodeDataset("toy", s, r, x, rng.integers(0, 3, num_nodes), 3, m, m, m)


def test_gcn_propagates_through_an_adjacency_pattern_as_through_its_edges():
    ds = _toy(np.random.default_rng(2))
    graph = node_graph(ds)
    pattern = adjacency_pattern(graph, slab_width=4)
    gcn = models.GCN(ds.num_features, (16, 8), activation="prelu", rngs=nnx.Rngs(0))
    keep = jax.random.bernoulli(jax.random.key(0), 0.7, graph.senders.shape)
    sparse_graph = graph._replace(nodes=SparseMatrix.from_dense(ds.node_features))

    graphdef, params = nnx.split(gcn)

    def run(g, adjacency):
        def f(params):
            model = nnx.merge(graphdef, params)
            return jnp.sum(jnp.tanh(model(g, edge_mask=keep, adjacency=adjacency)))

        return jax.value_and_grad(f)(params)

    want, want_grads = run(graph, None)
    for g, adjacency in ((graph, pattern), (sparse_graph, None), (sparse_graph, pattern)):
        got, grads = jax.jit(run)(g, adjacency)
        np.testing.assert_allclose(got, want, rtol=1e-5)
        for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    other = adjacency_pattern(node_graph(_toy(np.random.default_rng(3))))
    with pytest.raises(ValueError, match="`adjacency` must be the pattern of this graph's"):
        gcn(graph, adjacency=other)


def _random_edges(rng, n, e, *, sort):
    senders, receivers = rng.integers(0, n, e), rng.integers(0, n, e)  # duplicates, self loops
    if sort:
        order = np.argsort(receivers, kind="stable")
        senders, receivers = senders[order], receivers[order]
    return senders.astype(np.int32), receivers.astype(np.int32)


def _dense_of(senders, receivers, keep, values, n):
    want = np.zeros((n, n), np.float64)
    np.add.at(want, (receivers[keep], senders[keep]), values[keep])
    return want


@pytest.mark.parametrize("slab_width", [1, 3, 8])
@pytest.mark.parametrize("sort", [True, False])
def test_edge_pattern_under_jit_is_the_kept_edges_and_its_products_match_dense(slab_width, sort):
    rng = np.random.default_rng(slab_width + 10 * sort)
    for n, e in ((1, 0), (1, 3), (7, 0), (12, 40), (30, 25), (9, 160)):
        senders, receivers = _random_edges(rng, n, e, sort=sort)
        keep = rng.random(e) < 0.7
        build = jax.jit(
            lambda s, r, k, n=n: edge_pattern(
                s, r, n, edge_mask=k, sorted_receivers=sort, slab_width=slab_width
            )
        )
        pattern = build(senders, receivers, keep)
        assert pattern.shape == (n, n) and pattern.nnz == e
        # Every kept edge has exactly one slot, in each layout; dropped edges none.
        for slabs in (pattern.by_row, pattern.by_col):
            held = np.sort(np.asarray(slabs.entries).ravel())
            np.testing.assert_array_equal(held[held < e], np.flatnonzero(keep))
            assert np.all(np.diff(np.asarray(slabs.rows)) >= 0)  # sorted for the segment sum
        values = rng.normal(size=e).astype(np.float32)
        m = pattern.with_values(values)
        want = _dense_of(senders, receivers, keep, values, n)
        np.testing.assert_allclose(m.todense(), want, rtol=1e-5, atol=1e-6)
        transposed = SparseMatrix(by_row=m.by_col, by_col=m.by_row, shape=(n, n), nnz=e)
        np.testing.assert_allclose(transposed.todense(), want.T, rtol=1e-5, atol=1e-6)
        x = rng.normal(size=(n, 5)).astype(np.float32)
        np.testing.assert_allclose(jax.jit(sparse_matmul)(m, x), want @ x, rtol=1e-4, atol=1e-5)

        def f(values, x, pattern=pattern):
            return jnp.sum(jnp.sin(pattern.with_values(values) @ x))

        g_values, g_x = jax.jit(jax.grad(f, (0, 1)))(values, x)
        cos = np.cos(want @ x)
        np.testing.assert_allclose(g_x, want.T @ cos, rtol=1e-4, atol=1e-5)
        want_values = np.where(keep, np.sum(cos[receivers] * x[senders], axis=1), 0.0)
        np.testing.assert_allclose(g_values, want_values, rtol=1e-4, atol=1e-5)


def test_edge_pattern_holds_the_worst_case_layouts_and_equals_the_host_pattern():
    """Rows of degree ``K + 1`` (each wastes ``K - 1`` slots) and ``min(N, E)`` rows of one
    edge each are the layouts that need the most slabs: no edge may lose its slot."""
    k = 4
    cases = [
        (np.tile(np.arange(k + 1), 6), np.repeat(np.arange(6), k + 1), 6),  # degree K + 1
        (np.arange(10), np.arange(10), 10),  # one edge per row, E = N
        (np.zeros(3, int), np.arange(3), 20),  # E < N
    ]
    for senders, receivers, n in cases:
        pattern = edge_pattern(senders, receivers, n, slab_width=k, sorted_receivers=True)
        for slabs in (pattern.by_row, pattern.by_col):
            assert (np.asarray(slabs.entries) < senders.size).sum() == senders.size
        host = adjacency_pattern(
            jraph.GraphsTuple(
                nodes=None,
                edges=None,
                senders=senders,
                receivers=receivers,
                n_node=np.array([n]),
                n_edge=np.array([senders.size]),
                globals=None,
            )
        )
        np.testing.assert_array_equal(pattern.todense(), host.todense())


def test_edge_pattern_slabs_follow_the_mean_degree_by_default():
    """Default slab width: the power of two at most edges / nodes, in [1, 8]."""
    for n, e, width in ((10, 5, 1), (10, 20, 2), (10, 39, 2), (10, 40, 4), (4, 400, 8)):
        senders, receivers = _random_edges(np.random.default_rng(e), n, e, sort=True)
        pattern = edge_pattern(senders, receivers, n, sorted_receivers=True)
        assert pattern.by_row.indices.shape[1] == pattern.by_col.indices.shape[1] == width
        np.testing.assert_array_equal(
            pattern.todense(), _dense_of(senders, receivers, np.ones(e, bool), np.ones(e), n)
        )


def test_edge_pattern_without_room_for_a_packed_sort_key_sorts_pairs():
    """(N + 1) * E above int32's range: the transpose is ordered by an argsort instead."""
    rng = np.random.default_rng(5)
    n, e = 2**16, 2**15 + 1
    senders, receivers = _random_edges(rng, n, e, sort=True)
    pattern = jax.jit(lambda s, r: edge_pattern(s, r, n, sorted_receivers=True))(senders, receivers)
    slabs = pattern.by_col
    rows = np.broadcast_to(np.asarray(slabs.rows)[:, None], slabs.entries.shape)
    used = np.asarray(slabs.entries) < e
    entries = np.asarray(slabs.entries)[used]
    np.testing.assert_array_equal(np.sort(entries), np.arange(e))
    np.testing.assert_array_equal(rows[used], senders[entries])  # grouped by sender
    np.testing.assert_array_equal(np.asarray(slabs.indices)[used], receivers[entries])


def test_edge_dots_are_the_kept_edges_dot_products_with_slab_product_gradients():
    rng = np.random.default_rng(11)
    for n, e, sort in ((1, 0, True), (12, 40, True), (9, 60, False)):
        senders, receivers = _random_edges(rng, n, e, sort=sort)
        keep = rng.random(e) < 0.6
        a, b = rng.normal(size=(2, n, 6)).astype(np.float32)
        pattern = edge_pattern(senders, receivers, n, edge_mask=keep, sorted_receivers=sort)
        got = jax.jit(edge_dots)(pattern, a, b)
        want = np.where(keep, np.sum(a[receivers] * b[senders], axis=1), 0.0)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        c = rng.normal(size=e).astype(np.float32)
        g_a, g_b = jax.jit(
            jax.grad(lambda a, b, c=c, p=pattern: jnp.sum(c * edge_dots(p, a, b)), (0, 1))
        )(a, b)
        m = _dense_of(senders, receivers, keep, c, n)  # d/da_i = sum_j c_ij b_j, d/db_j = ...
        np.testing.assert_allclose(g_a, m @ b, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(g_b, m.T @ a, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"`a` must be \[9, d\] and `b` \[9, d\]"):
        edge_dots(pattern, a[:3], b)
    with pytest.raises(TypeError, match="`pattern` must be a SparseMatrix"):
        edge_dots(np.eye(3), a, b)


def test_edge_pattern_names_its_bad_arguments():
    s = r = np.zeros(3, np.int32)
    with pytest.raises(ValueError, match="1-D of one length"):
        edge_pattern(np.zeros((2, 3), np.int32), np.zeros((2, 3), np.int32), 4)
    with pytest.raises(ValueError, match="1-D of one length"):
        edge_pattern(s, np.zeros(4, np.int32), 4)
    with pytest.raises(ValueError, match="`num_nodes` must be a positive int, got 0"):
        edge_pattern(s, r, 0)
    with pytest.raises(ValueError, match="`slab_width` must be a positive int, got 2.0"):
        edge_pattern(s, r, 4, slab_width=2.0)
    with pytest.raises(ValueError, match="`edge_mask` must be bool of shape"):
        edge_pattern(s, r, 4, edge_mask=np.ones(3, np.float32))


@pytest.fixture(scope="module")
def cora():
    path = Path(__file__).parents[1].parent / "shared" / "data" / "planetoid"
    return load_planetoid(path, "cora", normalize_features=True)


def _grace_config(layout):
    c = training.base_config("cora", "grace")
    c.model.encoder_depth = 2
    c.model.encoder_width = c.model.head_width = c.model.embed_dim = 32
    c.model.head_depth = 2
    c.method.sparse_layout = layout
    return c


def test_grace_sparse_layout_gives_the_dense_layouts_loss_gradients_and_features(cora):
    dense = methods.GRACE(_grace_config("off"))
    sparse = methods.GRACE(_grace_config("on"))
    graph = node_graph(cora)
    assert dense.node_inputs(cora, graph) is graph
    inputs = sparse.node_inputs(cora, graph)
    assert isinstance(inputs, methods.GRACEInputs)
    assert isinstance(inputs.graph.nodes, SparseMatrix) and inputs.graph.nodes.nnz == 49216
    # auto: Cora's features are 1.3% nonzero, so on CPU (these tests) the sparse layout.
    auto = methods.GRACE(_grace_config("auto"))
    assert auto.use_sparse_layout(cora.node_features) == (jax.default_backend() == "cpu")
    assert not auto.use_sparse_layout(np.ones((4, 4)))

    model = dense.build(methods.DataSpec("node", cora.num_features, cora.num_classes), nnx.Rngs(0))
    graphdef, params = nnx.split(model)
    key = jax.random.key(7)

    def loss_and_grads(method, batch):
        def f(params):
            return method.loss(nnx.merge(graphdef, params), batch, key, {})[0]

        return jax.value_and_grad(f)(params)

    want, want_grads = jax.jit(lambda b: loss_and_grads(dense, b))(graph)
    got, grads = jax.jit(lambda b: loss_and_grads(sparse, b))(inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-5 * np.abs(b).max())
    np.testing.assert_allclose(
        sparse.features(model, inputs), dense.features(model, graph), rtol=1e-4, atol=1e-5
    )
    with pytest.raises(ValueError, match="sparse_layout"):
        methods.GRACE(_grace_config("yes"))
