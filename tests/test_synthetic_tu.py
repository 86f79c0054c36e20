"""synthetic_tu: REDDIT-BINARY's published sizes, threads as the loaders store graphs (an
independent check: the set written in GIN's text format and read back by load_gin is the
same), one-hot degree features, seeding, argument errors, and the graph task's
data.synthetic keys.

Statistics are checked at scale 0.2 and 0.05, not 1: at full size the set's degree one-hot
alone is about 14 GB of float32 (859,260 nodes by some 4,000 columns), too much for a unit
test; the sizes come from the same code at every scale, with totals exact by construction.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph

from jaxcl import training
from jaxcl.configs import mmix_graph
from jaxcl.data import load_gin, synthetic_tu


@pytest.fixture(scope="module")
def small():
    return synthetic_tu("reddit_binary", seed=0, scale=0.05)


@pytest.mark.parametrize("scale", [0.2, 0.05])
def test_sizes_are_reddit_binarys_scaled(scale):
    ds = synthetic_tu("reddit_binary", seed=1, scale=scale)
    graphs = round(2000 * scale)
    nodes = np.array([g.num_nodes for g in ds.graphs])
    edges = np.array([g.num_edges for g in ds.graphs]) // 2  # undirected
    assert (len(ds), ds.num_classes, ds.name) == (graphs, 2, "reddit_binary (synthetic)")
    # TU's means (429.63 nodes, 497.75 edges per graph) times scale, to rounding of totals
    assert nodes.sum() == round(graphs * 429.63 * scale)
    assert edges.sum() == round(graphs * 497.75 * scale)
    np.testing.assert_allclose(nodes.mean(), 429.63 * scale, rtol=0.01)
    np.testing.assert_allclose(edges.mean(), 497.75 * scale, rtol=0.01)
    # heavy-tailed sizes: a long right tail, clipped at 10x the mean
    assert np.median(nodes) < 0.8 * nodes.mean() < nodes.max() / 3
    assert nodes.min() >= 2 and nodes.max() <= round(10 * 429.63 * scale)
    assert np.bincount(ds.labels).tolist() == [graphs // 2, graphs // 2]  # balanced


def test_graphs_are_connected_threads_stored_as_the_loaders_store_them(small):
    for g in small.graphs:
        s, r, n = g.senders, g.receivers, g.num_nodes
        assert not np.any(s == r)  # no self-loops
        keys = s.astype(np.int64) * n + r
        assert np.all(np.diff(keys) > 0)  # sorted by (sender, receiver), no duplicates
        np.testing.assert_array_equal(np.sort(r.astype(np.int64) * n + s), keys)  # both ways
        adj = scipy.sparse.coo_matrix((np.ones(s.size), (s, r)), shape=(n, n))
        assert scipy.sparse.csgraph.connected_components(adj, directed=False)[0] == 1
        assert s.size // 2 >= n - 1  # a spanning tree, plus the extra edges


def test_features_are_one_hot_degrees_consistent_with_the_edges(small):
    width = 1 + max(np.bincount(g.senders, minlength=g.num_nodes).max() for g in small.graphs)
    assert small.num_features == width  # uncapped: max degree + 1 over the set
    for g in small.graphs:
        x = g.node_features
        assert np.all((x == 0) | (x == 1)) and np.all(x.sum(1) == 1)
        np.testing.assert_array_equal(x.argmax(1), np.bincount(g.senders, minlength=g.num_nodes))


def test_load_gin_reads_back_the_same_graphs(small, tmp_path):
    """The set written in GIN's text format (tag 0, neighbour lists) and read by load_gin
    with degree features: identical edges, features and labels."""
    lines = [str(len(small))]
    for g in small.graphs:
        lines.append(f"{g.num_nodes} {g.label}")
        for v in range(g.num_nodes):
            nbrs = g.receivers[g.senders == v].tolist()
            lines.append(" ".join(map(str, [0, len(nbrs), *nbrs])))
    path = tmp_path / "SYN.txt"
    path.write_text("\n".join(lines) + "\n")
    back = load_gin(path, node_features="degree")
    np.testing.assert_array_equal(back.labels, small.labels)
    assert back.num_features == small.num_features
    for a, b in zip(small.graphs, back.graphs, strict=True):
        np.testing.assert_array_equal(a.senders, b.senders)
        np.testing.assert_array_equal(a.receivers, b.receivers)
        np.testing.assert_array_equal(a.node_features, b.node_features)


def test_same_seed_same_graphs_other_seed_other_graphs(small):
    again = synthetic_tu("reddit_binary", seed=0, scale=0.05)
    np.testing.assert_array_equal(again.labels, small.labels)
    for a, b in zip(small.graphs, again.graphs, strict=True):
        np.testing.assert_array_equal(a.senders, b.senders)
        np.testing.assert_array_equal(a.receivers, b.receivers)
        np.testing.assert_array_equal(a.node_features, b.node_features)
    other = synthetic_tu("reddit_binary", seed=1, scale=0.05)
    assert [g.num_nodes for g in other.graphs] != [g.num_nodes for g in small.graphs]
    assert not np.array_equal(other.labels, small.labels)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(name="reddit_multi_5k"), r"`name` must be one of \['coil_del', 'reddit_binary'\]"),
        (dict(scale=0.0), r"`scale` must be a number in \(0, 1\], got 0.0"),
        (dict(scale=1.5), r"`scale` must be a number in \(0, 1\], got 1.5"),
        (dict(scale=float("nan")), r"`scale` must be a number in \(0, 1\], got nan"),
        (dict(scale=True), r"`scale` must be a number in \(0, 1\], got True"),
        (dict(scale="0.5"), r"`scale` must be a number in \(0, 1\], got '0.5'"),
        (dict(scale=0.005), r"`scale` = 0.005 gives reddit_binary 10 graphs, fewer than the 20"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    kwargs = {"name": "reddit_binary", **kwargs}
    with pytest.raises(ValueError, match=r"synthetic_tu: " + message):
        synthetic_tu(**kwargs)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("data.name", "mutag", r"synthetic = True: .*'mutag', only of coil_del, reddit_binary"),
        ("data.synthetic_scale", 2.0, r"config.data.synthetic_scale = 2.0: expected a number <= 1"),
        ("data.synthetic_scale", 0.001, r"synthetic_scale = 0.001: synthetic_tu: `scale` = 0.001"),
        ("data.node_features", "tags", r"config.data.node_features = 'tags': the synthetic"),
    ],
)
def test_graph_task_names_the_synthetic_key_that_cannot_work(tmp_path, key, value, message):
    c = mmix_graph.make("mp", "reddit_binary,quick")
    section, name = key.split(".")
    c[section][name] = value
    with pytest.raises(training.ConfigError, match=message):
        training.train_and_evaluate(c, str(tmp_path))
