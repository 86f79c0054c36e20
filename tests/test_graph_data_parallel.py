"""Data parallelism over graph batches: stacked sub-batches from ``GraphBatcher(num_shards=S)``
sharded over the 8 fake CPU devices of tests/conftest.py. The stacks hold the global batch's
graphs on one budget; DACL's and InfoGraph's losses, gradients and batch-norm statistics
equal the single-device values on the unstacked batch; one compile per budget; no
all-gather of node arrays in the compiled step."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import jax
import numpy as np
import pytest
from flax import nnx
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcl import methods
from jaxcl.configs import dacl_graph
from jaxcl.data import GraphDataset, load_gin
from jaxcl.graphs import (
    GraphBatcher,
    batch_graphs,
    padding_budgets,
    padding_masks,
    select_budget,
)
from jaxcl.models import GINGraphEncoder

SHARDS = 8


@functools.cache
def _mutag() -> GraphDataset:
    path = Path(__file__).parents[1].parent / "shared" / "data"
    if not (path / "tu_gin").is_dir():
        pytest.fail(f"benchmark data not found at {path} (../shared/data beside the checkout)")
    return load_gin(path / "tu_gin", "MUTAG")


@pytest.fixture(scope="module")
def mesh(num_devices):
    return Mesh(np.array(jax.devices()[:SHARDS]), ("data",))


def _real_graphs(stacked):
    """The real graphs of a stacked batch, in order: (features, edge set, label) each."""
    out = []
    for s in range(stacked.n_node.shape[0]):
        node, edge = 0, 0
        n_real = int((stacked.globals[s] >= 0).sum())
        for g in range(n_real):
            n, e = int(stacked.n_node[s, g]), int(stacked.n_edge[s, g])
            span = slice(edge, edge + e)
            edges = zip(
                stacked.senders[s, span] - node, stacked.receivers[s, span] - node, strict=True
            )
            out.append((stacked.nodes[s, node : node + n], set(edges), stacked.globals[s, g]))
            node, edge = node + n, edge + e
    return out


# ----------------------------------------------------------------------------- batching


def test_stacked_batches_split_the_global_batch_over_one_budget():
    ds = _mutag()
    batcher = GraphBatcher(ds, 32, num_shards=SHARDS, seed=1)
    assert batcher.budgets == padding_budgets(ds, 32 // SHARDS)  # 188 = 47 groups of 4
    flat = GraphBatcher(ds, 32, seed=1)
    for epoch in range(2):
        for indices, flat_indices, stacked, batch in zip(
            batcher.batch_indices(epoch),
            flat.batch_indices(epoch),
            batcher.epoch(epoch),
            flat.epoch(epoch),
            strict=True,
        ):
            np.testing.assert_array_equal(indices, flat_indices)  # the same global batches
            budget = batcher.budget_for(indices)
            shapes = jax.tree.map(np.shape, stacked)
            assert shapes.nodes == (SHARDS, budget.n_node, ds.num_features)
            assert shapes.senders == shapes.receivers == (SHARDS, budget.n_edge)
            assert shapes.n_node == shapes.globals == (SHARDS, budget.n_graph)
            assert (np.diff(stacked.receivers, axis=1) >= 0).all()
            # Each sub-batch is the ordinary padded batch of its group; the groups are the
            # global batch, in order, split evenly.
            groups = batcher.shard_indices(indices)
            np.testing.assert_array_equal(np.concatenate(groups), indices)
            assert max(map(len, groups)) - min(map(len, groups)) <= 1
            for s, group in enumerate(groups):
                want = batch_graphs([ds.graphs[i] for i in group], budget)
                for name in ("nodes", "senders", "receivers", "n_node", "n_edge", "globals"):
                    np.testing.assert_array_equal(getattr(stacked, name)[s], getattr(want, name))
            # The budget is the first of the ladder that fits every group.
            sizes = [
                (sum(ds.graphs[i].num_nodes for i in g), sum(ds.graphs[i].num_edges for i in g))
                for g in groups
            ]
            fits = [
                all(b.fits(n, e, len(g)) for (n, e), g in zip(sizes, groups, strict=True))
                for b in batcher.budgets
            ]
            assert budget == batcher.budgets[fits.index(True)]
            # The real graphs are those of the unstacked global batch (features, edges).
            real = _real_graphs(stacked)
            assert len(real) == len(indices)
            masks = padding_masks(batch)
            flat_nodes = np.asarray(batch.nodes)[np.asarray(masks.nodes)]
            np.testing.assert_array_equal(np.concatenate([r[0] for r in real]), flat_nodes)
            for (_, edges, label), i in zip(real, indices, strict=True):
                g = ds.graphs[i]
                assert edges == set(zip(g.senders, g.receivers, strict=True))
                assert label == g.label
            # graph_rows maps the flattened graph rows back to the batch's order.
            rows = batcher.graph_rows(indices)
            np.testing.assert_array_equal(stacked.globals.reshape(-1)[rows], ds.labels[indices])


def test_empty_sub_batches_are_all_padding_and_encode():
    ds = _mutag()
    rng = np.random.default_rng(0)
    weights = [rng.random(g.num_edges).astype(np.float32) for g in ds.graphs[:19]]
    batcher = GraphBatcher(
        ds.graphs[:19], 16, num_shards=SHARDS, shuffle=False, edge_weights=weights
    )
    *_, last = batcher.epoch(0)  # 3 graphs over 8 sub-batches
    groups = batcher.shard_indices(batcher.batch_indices(0)[-1])
    assert [len(g) for g in groups] == [1, 1, 1, 0, 0, 0, 0, 0]
    assert last.edges.shape == last.senders.shape
    for s in range(3, SHARDS):
        assert last.n_node[s].tolist() == [last.nodes.shape[1]] + [0] * 2
        assert (last.globals[s] == -1).all() and not last.nodes[s].any()
        assert not last.senders[s].any() and not last.edges[s].any()
    masks = padding_masks(last)
    assert np.asarray(masks.graphs).reshape(SHARDS, -1)[3:].sum() == 0
    assert np.asarray(masks.nodes).sum() == sum(ds.graphs[i].num_nodes for i in (16, 17, 18))
    encoder = GINGraphEncoder(ds.num_features, width=8, depth=2, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(encoder)
    out = jax.jit(lambda state, b: nnx.merge(graphdef, state)(b))(state, last)
    assert out.shape == (SHARDS * 3, 16) and np.isfinite(out).all()
    assert not np.asarray(out)[~np.asarray(masks.graphs)].any()


def test_one_shard_gives_the_unstacked_batches():
    ds = _mutag()
    batcher = GraphBatcher(ds, 32, num_shards=1, seed=2)
    assert batcher.budgets == padding_budgets(ds, 32)
    for indices, batch in zip(batcher.batch_indices(0), batcher.epoch(0), strict=True):
        budget = select_budget(
            batcher.budgets,
            sum(ds.graphs[i].num_nodes for i in indices),
            sum(ds.graphs[i].num_edges for i in indices),
            len(indices),
        )
        want = batch_graphs([ds.graphs[i] for i in indices], budget)
        for a, b in zip(jax.tree.leaves(batch), jax.tree.leaves(want), strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(batcher.graph_rows(indices), np.arange(len(indices)))


def test_local_sub_batches_for_multi_host_feeding():
    ds = _mutag()
    batcher = GraphBatcher(ds, 32, num_shards=SHARDS, seed=3)
    for full, part in zip(batcher.epoch(0), batcher.epoch(0, shards=slice(2, 5)), strict=True):
        for a, b in zip(jax.tree.leaves(full), jax.tree.leaves(part), strict=True):
            np.testing.assert_array_equal(a[2:5], b)


def test_bad_num_shards_and_shards_are_rejected():
    ds = _mutag()
    with pytest.raises(ValueError, match="`batch_size`=30 must be a multiple of `num_shards`=8"):
        GraphBatcher(ds, 30, num_shards=8)
    with pytest.raises(ValueError, match="`num_shards` must be a positive int"):
        GraphBatcher(ds, 32, num_shards=0)
    batcher = GraphBatcher(ds, 32, num_shards=8)
    with pytest.raises(ValueError, match="`shards` must be a slice"):
        next(batcher.epoch(0, shards=slice(8, 9)))


# ----------------------------------------------------------------------------- sharded steps


def _method(name, **hp):
    config = dacl_graph.make(name, "mutag,quick")
    config.method.update(hp)
    return methods.get(name)(config)


def _model(method):
    ds = _mutag()
    spec = methods.DataSpec("graph", ds.num_features, ds.num_classes)
    return method.build(spec, nnx.Rngs(0))


def _float64(tree):
    """Floating leaves as float64 (run under ``jax.enable_x64``)."""
    return jax.tree.map(
        lambda x: np.asarray(x, np.float64) if np.issubdtype(x.dtype, np.floating) else x, tree
    )


def _step_fn(method, graphdef):
    """(params, rest, batch, key) -> (loss, grads, batch-norm statistics after the step)."""

    def step(params, rest, batch, key):
        def loss_fn(params):
            model = nnx.merge(graphdef, params, rest, copy=True)
            loss = method.loss(model, batch, key, None)[0]
            return loss, nnx.state(model, nnx.BatchStat)

        (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        return loss, grads, stats

    return jax.jit(step)


def _assert_trees_close(got, want, *, rtol=1e-5, atol=1e-6):
    """Leaf by leaf, with ``atol`` relative to the largest entry of ``want`` (bias gradients
    before a batch norm, or batch means of normalised inputs, are rounding noise near 0)."""
    scale = max(float(np.abs(x).max()) for x in jax.tree.leaves(want))
    for (path, a), b in zip(
        jax.tree_util.tree_leaves_with_path(got), jax.tree.leaves(want), strict=True
    ):
        np.testing.assert_allclose(
            a, b, rtol=rtol, atol=atol * scale, err_msg=jax.tree_util.keystr(path)
        )


def _sharded(tree, mesh, spec):
    return jax.device_put(tree, NamedSharding(mesh, spec))


# The comparisons run the models in float64: in float32 the sharded step differs from the
# one-device step by the rounding of reductions in another order (gradients by up to 1e-4 of
# their largest entry, as much as between the stacked and unstacked batches on one device),
# which would hide a real difference. The losses themselves still reduce in float32.
#
# DACL's views draw a mixing partner and lambda per graph row, so the same key gives other
# draws on the [S * G] stacked rows than on the unstacked rows; alpha = 1 makes lambda = 1
# exactly, so the partners do not enter and the loss is deterministic (the mixing itself is
# compared on equal rows in the next test). The head's batch norm is on, over the real rows.
@pytest.mark.parametrize(
    "name, hp", [("dacl_graph", {"alpha": 1.0, "head_batch_norm": True}), ("infograph", {})]
)
def test_sharded_loss_gradients_and_statistics_equal_one_device(mesh, name, hp):
    ds = _mutag()
    method = _method(name, **hp)
    graphdef, params, rest = nnx.split(_model(method), nnx.Param, ...)
    # 37 graphs in batches of 32: a full batch, then 5 graphs over 8 sub-batches (3 empty).
    batcher = GraphBatcher(ds.graphs[:37], 32, num_shards=SHARDS, seed=4)
    with jax.enable_x64(True):
        params, rest = _float64((params, rest))
        step = functools.partial(_step_fn(method, graphdef), key=jax.random.key(0))
        placed = _sharded((params, rest), mesh, P())
        for indices, stacked in zip(batcher.batch_indices(0), batcher.epoch(0), strict=True):
            unstacked = batch_graphs([ds.graphs[i] for i in indices])
            want = step(params, rest, _float64(unstacked))
            got = step(*placed, _sharded(_float64(stacked), mesh, P("data")))
            assert got[0].sharding.is_fully_replicated
            np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
            _assert_trees_close(got[1], want[1])  # gradients
            _assert_trees_close(got[2], want[2])  # batch-norm statistics after the step
            assert jax.tree.leaves(got[1])[0].dtype == np.float64


def test_sharded_dacl_mixing_equals_the_stacked_batch_on_one_device(mesh):
    ds = _mutag()
    method = _method("dacl_graph", alpha=0.5)
    graphdef, params, rest = nnx.split(_model(method), nnx.Param, ...)
    stacked = next(GraphBatcher(ds, 32, num_shards=SHARDS, seed=5).epoch(0))
    with jax.enable_x64(True):
        params, rest, stacked = _float64((params, rest, stacked))
        step = _step_fn(method, graphdef)
        key = jax.random.key(1)
        want = step(params, rest, stacked, key)  # same rows: the same partners and lambdas
        placed = _sharded((params, rest), mesh, P())
        got = step(*placed, _sharded(stacked, mesh, P("data")), key)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
        _assert_trees_close(got[1], want[1])
        # The mixing matters: another key gives another loss.
        other = step(params, rest, stacked, jax.random.key(2))
        assert abs(float(other[0]) - float(want[0])) > 1e-3


def test_sharded_forward_compiles_once_per_budget(mesh):
    ds = _mutag()
    batcher = GraphBatcher(ds, 32, num_shards=SHARDS, seed=6)
    encoder = GINGraphEncoder(ds.num_features, width=8, depth=2, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(encoder)
    traces = []

    @jax.jit
    def embed(state, batch):
        traces.append(batch.nodes.shape)  # once per trace
        return nnx.merge(graphdef, state)(batch)

    compiles = []

    def on_event(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(event)

    state = _sharded(state, mesh, P())
    used, num_batches = set(), 0
    jax.monitoring.register_event_duration_secs_listener(on_event)
    try:
        for epoch in range(3):
            for indices, stacked in zip(
                batcher.batch_indices(epoch), batcher.epoch(epoch), strict=True
            ):
                used.add(batcher.budget_for(indices))
                out = embed(state, _sharded(stacked, mesh, P("data")))
                rows = np.asarray(out)[batcher.graph_rows(indices)]
                assert rows.shape == (len(indices), 16) and np.isfinite(rows).all()
                num_batches += 1
    finally:
        jax.monitoring.unregister_event_duration_listener(on_event)
    assert num_batches == 18
    assert len(traces) == len(used) == embed._cache_size()
    assert len(compiles) == len(used)  # one backend compile per budget used
    assert len(used) <= len(batcher.budgets)


# An HLO instruction of a collective: ``%x = <result shape(s)> all-gather(...)``.
_COLLECTIVE = re.compile(
    r"= (.+?) (all-gather|all-to-all|collective-permute|reduce-scatter|all-reduce)(?:-start)?\("
)


def test_sharded_step_does_not_gather_node_arrays(mesh):
    """The compiled InfoGraph step (it contrasts every node with every graph) keeps node
    and edge arrays on their devices: no collective carries a node- or edge-sized array."""
    ds = _mutag()
    method = _method("infograph")
    graphdef, params, rest = nnx.split(_model(method), nnx.Param, ...)
    step = _step_fn(method, graphdef)
    batcher = GraphBatcher(ds, 64, num_shards=SHARDS, seed=0)
    stacked = next(batcher.epoch(0))
    n_node, n_edge = stacked.nodes.shape[1], stacked.senders.shape[1]
    placed = _sharded((params, rest), mesh, P())
    args = (*placed, _sharded(stacked, mesh, P("data")), jax.random.key(0))
    hlo = step.lower(*args).compile().as_text()
    found = _COLLECTIVE.findall(hlo)
    assert any(kind == "all-gather" for _, kind in found)  # the graph embeddings
    big = {n_node, SHARDS * n_node, n_edge, SHARDS * n_edge}
    for shapes, kind in found:
        for dims in re.findall(r"\[([0-9,]*)\]", shapes):
            sizes = {int(d) for d in dims.split(",") if d}
            assert not sizes & big, (kind, shapes)
