"""Graph data readers: counts on the real benchmark files, cross-format agreement,
structural invariants, independent reference parsers, and malformed-file errors."""

from __future__ import annotations

import collections
import functools
import os
import pickle
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.sparse

from jaxcl.data import (
    Graph,
    GraphDataset,
    GraphFormatError,
    NodeDataset,
    drop_tagged_nodes,
    load_gin,
    load_planetoid,
    load_tu,
    random_node_split,
    stratified_kfold,
    synthetic_planetoid,
    with_degree_features,
)

GIN_SETS = {  # name: (graphs, classes, graphs per class)
    "MUTAG": (188, 2, [63, 125]),
    "PTC": (344, 2, [192, 152]),
    "IMDBBINARY": (1000, 2, [500, 500]),
    "IMDBMULTI": (1500, 3, [500, 500, 500]),
    "PROTEINS": (1113, 2, [663, 450]),
    "NCI1": (4110, 2, [2053, 2057]),
}


@pytest.fixture(scope="module")
def data_dir() -> Path:
    path = Path(__file__).parents[1].parent / "shared" / "data"
    if not (path / "tu_gin").is_dir():
        pytest.fail(
            f"benchmark data not found at {path}: the graph tests read the real files from "
            "../shared/data beside the repository checkout (see ../shared/data/README.md); "
            "CI provides it. Check out or mount the shared data there."
        )
    return path


@functools.cache
def _gin(root: Path, name: str, **kwargs) -> GraphDataset:
    return load_gin(root / "tu_gin", name, **kwargs)


@functools.cache
def _tu(root: Path, name: str, **kwargs) -> GraphDataset:
    return load_tu(root / "tu_raw", name, **kwargs)


@functools.cache
def _planetoid(root: Path, name: str) -> NodeDataset:
    return load_planetoid(root / "planetoid", name)


def _edge_set(senders, receivers) -> set[tuple[int, int]]:
    return set(zip(np.asarray(senders).tolist(), np.asarray(receivers).tolist(), strict=True))


def _check_edges(senders, receivers, num_nodes):
    """Both directions present, each pair once, no self-loops, ids in range, int32."""
    assert senders.dtype == np.int32 and receivers.dtype == np.int32
    assert senders.shape == receivers.shape
    if senders.size:
        assert 0 <= min(senders.min(), receivers.min())
        assert max(senders.max(), receivers.max()) < num_nodes
    assert not np.any(senders == receivers), "self-loop"
    pairs = senders.astype(np.int64) * num_nodes + receivers
    assert np.unique(pairs).size == pairs.size, "duplicate edge"
    reverse = receivers.astype(np.int64) * num_nodes + senders
    assert np.array_equal(np.sort(pairs), np.sort(reverse)), "edge without its reverse"


# --------------------------------------------------------------------------- real data


@pytest.mark.parametrize("name", GIN_SETS)
def test_gin_counts_and_invariants(data_dir, name):
    num_graphs, num_classes, per_class = GIN_SETS[name]
    ds = _gin(data_dir, name)
    assert ds.name == name
    assert len(ds) == num_graphs and ds.num_classes == num_classes
    assert ds.labels.dtype == np.int32 and np.bincount(ds.labels).tolist() == per_class
    for i, g in enumerate(ds.graphs):
        assert g.label == ds.labels[i]
        assert g.node_features.dtype == np.float32
        assert g.node_features.shape == (g.num_nodes, ds.num_features)
        np.testing.assert_array_equal(g.node_features.sum(axis=1), 1.0)  # one-hot rows
        _check_edges(g.senders, g.receivers, g.num_nodes)


def test_average_graph_sizes(data_dir):
    # DACL Table 4: MUTAG 17.93 nodes per graph, IMDB-BINARY 19.77.
    mutag, imdb = _gin(data_dir, "MUTAG"), _gin(data_dir, "IMDBBINARY")
    assert mutag.num_nodes == 3371 and round(mutag.num_nodes / len(mutag), 2) == 17.93
    assert imdb.num_nodes == 19773 and round(imdb.num_nodes / len(imdb), 2) == 19.77
    tu = _tu(data_dir, "MUTAG")
    assert tu.num_nodes == 3371 and tu.num_edges == 7442  # MUTAG_A.txt: 7442 lines, symmetric
    # GIN's MUTAG.txt adds 6 undirected edges, all in its quirky first graph (see below).
    assert mutag.num_edges == 7442 + 12
    assert mutag.graphs[0].num_edges - tu.graphs[100].num_edges == 12


@pytest.mark.parametrize(("name", "width"), [("MUTAG", 9), ("PTC", 19), ("NCI1", 37)])
def test_gin_tag_features_cover_all_tags(data_dir, name, width):
    # One column per distinct tag in the file, in sorted tag order.
    ds = _gin(data_dir, name)
    assert ds.num_features == width
    used = np.unique(np.concatenate([g.node_features.argmax(1) for g in ds.graphs]))
    np.testing.assert_array_equal(used, np.arange(width))


@pytest.mark.parametrize(("name", "width"), [("IMDBBINARY", 136), ("IMDBMULTI", 89)])
def test_imdb_auto_features_are_one_hot_degree(data_dir, name, width):
    ds = _gin(data_dir, name)  # all tags are 0 in these files, so 'auto' picks degree
    assert ds.num_features == width
    max_seen = 0
    for g in ds.graphs:
        degree = np.bincount(g.senders, minlength=g.num_nodes)
        np.testing.assert_array_equal(g.node_features.argmax(1), degree)
        max_seen = max(max_seen, degree.max())
    assert max_seen + 1 == width


def test_degree_cap_bucket(data_dir):
    full = _gin(data_dir, "IMDBBINARY")
    capped = _gin(data_dir, "IMDBBINARY", node_features="degree", max_degree=10)
    assert capped.num_features == 11
    for a, b in zip(full.graphs, capped.graphs, strict=True):
        np.testing.assert_array_equal(
            b.node_features.argmax(1), np.minimum(a.node_features.argmax(1), 10)
        )
        np.testing.assert_array_equal(b.node_features.sum(1), 1.0)


def test_constant_node_features_are_one_ones_column(data_dir):
    degree = _gin(data_dir, "IMDBBINARY")
    constant = _gin(data_dir, "IMDBBINARY", node_features="constant")
    tu = _tu(data_dir, "MUTAG", node_features="constant")
    assert constant.num_features == tu.num_features == 1
    for a, b in zip(degree.graphs, constant.graphs, strict=True):
        np.testing.assert_array_equal(b.node_features, np.ones((a.num_nodes, 1), np.float32))
        np.testing.assert_array_equal(b.senders, a.senders)  # the same graphs otherwise
    assert all(g.node_features.shape[1] == 1 and g.node_features.all() for g in tu.graphs)


def test_gin_ptc_without_its_hydrogens_has_tu_ptc_mr_counts(data_dir):
    ptc = _gin(data_dir, "PTC")
    hydrogens = np.concatenate([g.node_features[:, 16] for g in ptc.graphs]).sum()
    mr = drop_tagged_nodes(ptc, 16)
    # TU's PTC_MR: 344 graphs, 4,915 nodes, 5,054 undirected edges, 18 node labels.
    assert (len(mr), mr.num_nodes, mr.num_edges, mr.num_features) == (344, 4915, 10108, 18)
    assert hydrogens == ptc.num_nodes - mr.num_nodes == 3877
    np.testing.assert_array_equal(mr.labels, ptc.labels)
    for a, b in zip(ptc.graphs, mr.graphs, strict=True):
        kept = a.node_features[:, 16] == 0
        np.testing.assert_array_equal(b.node_features, np.delete(a.node_features[kept], 16, 1))
        # Every hydrogen had one edge: each graph lost exactly two directed edges per one.
        assert a.num_edges - b.num_edges == 2 * (~kept).sum()
        assert b.senders.max(initial=-1) < b.num_nodes
    with pytest.raises(ValueError, match=r"`column` must lie in \[0, 19\), got 19"):
        drop_tagged_nodes(ptc, 19)
    for bad in (True, 1.5, "1"):
        with pytest.raises(ValueError, match=r"`column` must lie in \[0, 19\)"):
            drop_tagged_nodes(ptc, bad)
    assert drop_tagged_nodes(ptc, np.int64(16)).num_nodes == mr.num_nodes
    with pytest.raises(ValueError, match="every node of graph 0 has tag 0"):
        drop_tagged_nodes(_gin(data_dir, "IMDBBINARY", node_features="constant"), 0)
    with pytest.raises(ValueError, match="graph 0 has node features that are not one-hot"):
        drop_tagged_nodes(_tu(data_dir, "PROTEINS", node_features="attributes"), 0)


def _reference_gin(path: Path):
    """A plain line-by-line reader, as GIN's util.py reads the file (networkx edge sets)."""
    lines = path.read_text().split("\n")
    graphs, pos = [], 1
    for _ in range(int(lines[0])):
        n, label = map(int, lines[pos].split())
        tags, edges = [], set()
        for j in range(n):
            row = list(map(int, lines[pos + 1 + j].split()))
            tags.append(row[0])
            for k in row[2 : 2 + row[1]]:
                if k != j:
                    edges |= {(j, k), (k, j)}
        graphs.append((label, tags, edges))
        pos += n + 1
    return graphs


@pytest.mark.parametrize("name", ["MUTAG", "PTC", "PROTEINS"])
def test_gin_matches_reference_reader(data_dir, name):
    reference = _reference_gin(data_dir / "tu_gin" / f"{name}.txt")
    ds = _gin(data_dir, name)
    label_values = sorted({label for label, _, _ in reference})
    tag_values = sorted({t for _, tags, _ in reference for t in tags})
    for g, (label, tags, edges) in zip(ds.graphs, reference, strict=True):
        assert g.label == label_values.index(label)
        np.testing.assert_array_equal(
            g.node_features.argmax(1), [tag_values.index(t) for t in tags]
        )
        assert _edge_set(g.senders, g.receivers) == edges


# TU MUTAG node labels (README: 0 C, 1 N, 2 O, 3 F, 4 I, 5 Cl, 6 Br) and the tag the GIN
# file uses for the same atom.
MUTAG_TU_TO_GIN_TAG = {0: 2, 1: 5, 2: 6, 3: 3, 4: 4, 5: 1, 6: 0}


def test_mutag_tu_and_gin_agree(data_dir):
    """The same 188 molecules, in another order (GIN's file lists class 1 first), with the
    same node order inside each graph and a consistent relabelling of atom tags; one
    graph differs where the public GIN file itself is damaged."""
    tu, gin = _tu(data_dir, "MUTAG"), _gin(data_dir, "MUTAG")
    assert len(tu) == len(gin) == 188
    # Raw labels -1/1 (TU) and 0/2 (GIN) both become 0/1 in the same order.
    assert np.bincount(tu.labels).tolist() == np.bincount(gin.labels).tolist() == [63, 125]
    assert tu.num_features == 7 and gin.num_features == 9
    to_gin = np.array([MUTAG_TU_TO_GIN_TAG[t] for t in range(7)])
    assert len(set(to_gin.tolist())) == 7  # a bijection onto the tags GIN uses

    def key(g, tags):
        return (g.num_nodes, g.label, g.senders.tobytes(), g.receivers.tobytes(), tags.tobytes())

    unused = collections.defaultdict(list)
    for i, g in enumerate(tu.graphs):
        unused[key(g, to_gin[g.node_features.argmax(1)])].append(i)
    unmatched = []
    for j, g in enumerate(gin.graphs):
        candidates = unused.get(key(g, g.node_features.argmax(1)))
        if candidates:
            candidates.pop()
        else:
            unmatched.append(j)
    left = [i for ids in unused.values() for i in ids]
    assert unmatched == [0] and left == [100], (unmatched, left)

    # GIN graph 0 is TU graph 100 with its first nine node lines overwritten by
    # "i 2 a b" (tags 0..8, asymmetric neighbour lists): the rest agrees.
    g, t = gin.graphs[0], tu.graphs[100]
    assert (g.num_nodes, g.label) == (t.num_nodes, t.label) == (23, 1)
    np.testing.assert_array_equal(g.node_features.argmax(1)[:9], np.arange(9))
    np.testing.assert_array_equal(
        g.node_features.argmax(1)[9:], to_gin[t.node_features.argmax(1)[9:]]
    )

    def tail(graph):
        return {(a, b) for a, b in _edge_set(graph.senders, graph.receivers) if min(a, b) >= 9}

    assert tail(g) == tail(t)


def test_proteins_tu_and_gin_agree(data_dir):
    tu, gin = _tu(data_dir, "PROTEINS"), _gin(data_dir, "PROTEINS")
    assert len(tu) == len(gin) == 1113 and tu.num_features == gin.num_features == 3
    for a, b in zip(tu.graphs, gin.graphs, strict=True):
        assert a.label == b.label
        np.testing.assert_array_equal(a.senders, b.senders)
        np.testing.assert_array_equal(a.receivers, b.receivers)
        np.testing.assert_array_equal(a.node_features, b.node_features)


def test_tu_feature_kinds(data_dir):
    mutag = _tu(data_dir, "MUTAG")
    for g in mutag.graphs:
        _check_edges(g.senders, g.receivers, g.num_nodes)
        np.testing.assert_array_equal(g.node_features.sum(1), 1.0)
    raw_tags = np.loadtxt(data_dir / "tu_raw/MUTAG/MUTAG_node_labels.txt", dtype=int)
    tags = np.concatenate([g.node_features.argmax(1) for g in mutag.graphs])
    np.testing.assert_array_equal(tags, raw_tags)  # TU tags are already 0..6

    attrs = _tu(data_dir, "PROTEINS", node_features="attributes")
    expected = np.loadtxt(data_dir / "tu_raw/PROTEINS/PROTEINS_node_attributes.txt")
    assert attrs.num_features == 1
    np.testing.assert_array_equal(
        np.concatenate([g.node_features[:, 0] for g in attrs.graphs]), expected
    )
    degree = _tu(data_dir, "MUTAG", node_features="degree")
    assert degree.num_features == 5  # MUTAG's atoms have degree 1..4
    with pytest.raises(ValueError, match="no node attributes"):
        load_gin(data_dir / "tu_gin", "MUTAG", node_features="attributes")


def test_with_degree_features_after_dropping_nodes(data_dir):
    """The degrees appended after drop_tagged_nodes are those of the graphs without the
    dropped nodes (networkx on the kept edges), and on an unedited set the same features as
    loading with 'tags+degree'."""
    mr = with_degree_features(drop_tagged_nodes(_gin(data_dir, "PTC"), 16))
    tags = drop_tagged_nodes(_gin(data_dir, "PTC"), 16)
    degrees = []
    for g in tags.graphs:
        graph = nx.Graph()
        graph.add_nodes_from(range(g.num_nodes))
        graph.add_edges_from(zip(g.senders.tolist(), g.receivers.tolist(), strict=True))
        degrees.append([graph.degree[u] for u in range(g.num_nodes)])
    width = max(max(d) for d in degrees) + 1
    assert mr.num_features == 18 + width
    for g, t, d in zip(mr.graphs, tags.graphs, degrees, strict=True):
        np.testing.assert_array_equal(g.node_features[:, :18], t.node_features)
        np.testing.assert_array_equal(g.node_features[:, 18:], np.eye(width)[d])
    mutag = with_degree_features(_tu(data_dir, "MUTAG", node_features="tags"))
    direct = _tu(data_dir, "MUTAG", node_features="tags+degree")
    assert mutag.num_features == direct.num_features == 12
    for a, b in zip(mutag.graphs, direct.graphs, strict=True):
        np.testing.assert_array_equal(a.node_features, b.node_features)
    capped = with_degree_features(_tu(data_dir, "MUTAG", node_features="tags"), max_degree=2)
    assert capped.num_features == 10 and capped.graphs[0].node_features[:, 7:].sum(1).min() == 1
    with pytest.raises(
        ValueError, match="with_degree_features: `max_degree` must be a positive integer, got 0"
    ):
        with_degree_features(mutag, max_degree=0)


def test_tags_plus_degree_matches_mvgrl_features(data_dir):
    """'tags+degree' is MVGRL's graph-code feature: the node label's one-hot, then the
    one-hot of the node's degree in networkx's graph of the listed edges (width: the data
    set's largest degree + 1). Built here from the raw TU files with networkx."""
    raw = data_dir / "tu_raw" / "MUTAG" / "MUTAG"
    indicator = np.loadtxt(f"{raw}_graph_indicator.txt", dtype=int)
    labels = np.loadtxt(f"{raw}_node_labels.txt", dtype=int)
    edges = np.loadtxt(f"{raw}_A.txt", dtype=int, delimiter=",")
    graph = nx.Graph()
    graph.add_nodes_from(range(1, indicator.size + 1))
    graph.add_edges_from(map(tuple, edges))
    degree = np.array([graph.degree[u] for u in range(1, indicator.size + 1)])
    expected = np.concatenate(
        [np.eye(labels.max() + 1)[labels], np.eye(degree.max() + 1)[degree]], 1
    )

    ds = _tu(data_dir, "MUTAG", node_features="tags+degree")
    np.testing.assert_array_equal(np.concatenate([g.node_features for g in ds.graphs]), expected)
    # GIN's file: its own tags, then the same degree block
    gin = _gin(data_dir, "MUTAG", node_features="tags+degree")
    tags = _gin(data_dir, "MUTAG", node_features="tags")
    deg = _gin(data_dir, "MUTAG", node_features="degree")
    assert gin.num_features == tags.num_features + deg.num_features
    for g, t, d in zip(gin.graphs, tags.graphs, deg.graphs, strict=True):
        np.testing.assert_array_equal(
            g.node_features, np.concatenate([t.node_features, d.node_features], 1)
        )
    with pytest.raises(ValueError, match="node_features='tags\\+degree' but .* has no node tags"):
        from jaxcl.data._graph_build import build_graph_dataset

        build_graph_dataset(
            "X",
            graph_sizes=np.array([2]),
            senders=np.array([0]),
            receivers=np.array([1]),
            raw_labels=np.array([0]),
            tags=None,
            attributes=None,
            node_features="tags+degree",
            max_degree=None,
            fn="load_x",
            tags_source="x.txt",
            attributes_source="x.txt",
        )


def _kipf_reference(root: Path, name: str):
    """Kipf's GCN load_data with scipy.sparse (lil), the procedure PyG follows."""
    parts = {}
    for part in ("tx", "ty", "allx", "ally", "graph"):
        with open(root / f"ind.{name}.{part}", "rb") as f, warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # scipy.sparse.csr path
            parts[part] = pickle.load(f, encoding="latin1")
    test_idx = np.loadtxt(root / f"ind.{name}.test.index", dtype=int)
    test_range = np.sort(test_idx)
    tx, ty = parts["tx"], parts["ty"]
    if name == "citeseer":
        full = range(test_range.min(), test_range.max() + 1)
        tx_ext = scipy.sparse.lil_matrix((len(full), tx.shape[1]))
        tx_ext[test_range - test_range.min(), :] = tx
        ty_ext = np.zeros((len(full), ty.shape[1]))
        ty_ext[test_range - test_range.min(), :] = ty
        tx, ty = tx_ext, ty_ext
    features = scipy.sparse.vstack((parts["allx"], tx)).tolil()
    features[test_idx, :] = features[test_range, :]
    labels = np.vstack((parts["ally"], ty))
    labels[test_idx, :] = labels[test_range, :]
    return features.toarray(), labels.argmax(1), parts["graph"], test_idx


@pytest.mark.parametrize(
    ("name", "nodes", "features", "classes", "edges", "train"),
    [("cora", 2708, 1433, 7, 10556, 140), ("citeseer", 3327, 3703, 6, 9104, 120)],
)
def test_planetoid(data_dir, name, nodes, features, classes, edges, train):
    ds = _planetoid(data_dir, name)
    assert (ds.num_nodes, ds.num_features, ds.num_classes, ds.num_edges) == (
        nodes,
        features,
        classes,
        edges,
    )
    _check_edges(ds.senders, ds.receivers, ds.num_nodes)
    assert ds.labels.dtype == np.int32 and ds.node_features.dtype == np.float32
    masks = np.stack([ds.train_mask, ds.val_mask, ds.test_mask])
    assert masks.sum(1).tolist() == [train, 500, 1000]
    assert masks.sum(0).max() == 1  # disjoint
    np.testing.assert_array_equal(np.flatnonzero(ds.train_mask), np.arange(train))
    np.testing.assert_array_equal(np.flatnonzero(ds.val_mask), np.arange(train, train + 500))
    np.testing.assert_array_equal(np.bincount(ds.labels[ds.train_mask]), [20] * classes)

    x, y, graph, test_idx = _kipf_reference(data_dir / "planetoid", name)
    np.testing.assert_array_equal(ds.node_features, x)
    np.testing.assert_array_equal(ds.labels, y)
    np.testing.assert_array_equal(np.flatnonzero(ds.test_mask), np.sort(test_idx))
    listed = {(k, v) for k, vs in graph.items() for v in vs if k != v}
    assert _edge_set(ds.senders, ds.receivers) == listed | {(v, k) for k, v in listed}


@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_synthetic_planetoid_has_the_real_sets_sizes(data_dir, name):
    real, fake = _planetoid(data_dir, name), synthetic_planetoid(name, seed=1)
    sizes = [(ds.num_nodes, ds.num_features, ds.num_classes, ds.num_edges) for ds in (real, fake)]
    assert sizes[0] == sizes[1]
    nonzero = [np.mean(np.count_nonzero(ds.node_features, axis=1)) for ds in (real, fake)]
    assert abs(nonzero[0] - nonzero[1]) < 1.0, nonzero


def test_synthetic_planetoid_pubmed_is_a_valid_seeded_graph():
    ds = synthetic_planetoid("pubmed", seed=3, normalize_features=True)
    assert (ds.num_nodes, ds.num_features, ds.num_classes, ds.num_edges) == (19717, 500, 3, 88648)
    assert ds.name == "pubmed (synthetic)"
    _check_edges(ds.senders, ds.receivers, ds.num_nodes)
    np.testing.assert_allclose(ds.node_features.sum(1), 1.0, rtol=1e-5)
    assert np.all(np.count_nonzero(ds.node_features, axis=1) == 50)
    masks = np.stack([ds.train_mask, ds.val_mask, ds.test_mask])
    assert masks.sum(1).tolist() == [60, 500, 1000] and masks.sum(0).max() == 1
    assert np.bincount(ds.labels[ds.train_mask]).tolist() == [20, 20, 20]
    again = synthetic_planetoid("pubmed", seed=3, normalize_features=True)
    np.testing.assert_array_equal(again.senders, ds.senders)
    np.testing.assert_array_equal(again.node_features, ds.node_features)
    other = synthetic_planetoid("pubmed", seed=4)
    assert not np.array_equal(other.senders, ds.senders)
    with pytest.raises(ValueError, match=r"synthetic_planetoid: `name` must be one of .*'ogbn'"):
        synthetic_planetoid("ogbn")


def test_synthetic_planetoid_scale_shrinks_nodes_and_edges_and_keeps_the_rest():
    ds = synthetic_planetoid("dblp", seed=2, scale=0.1)
    assert (ds.num_nodes, ds.num_edges, ds.num_features, ds.num_classes) == (1772, 10574, 1639, 4)
    _check_edges(ds.senders, ds.receivers, ds.num_nodes)
    assert np.all(np.count_nonzero(ds.node_features, axis=1) == 8)
    masks = np.stack([ds.train_mask, ds.val_mask, ds.test_mask])
    assert masks.sum(1).tolist() == [80, 500, 1000] and masks.sum(0).max() == 1
    tiny = synthetic_planetoid("cora", scale=0.06)  # 162 nodes: the split shrinks with it
    counts = np.bincount(tiny.labels, minlength=7)
    assert tiny.num_nodes == 162 and counts.min() < 20  # a class too small for 20
    train = np.bincount(tiny.labels[tiny.train_mask], minlength=7)
    np.testing.assert_array_equal(train, np.minimum(counts, 20))
    rest = 162 - train.sum()
    assert (tiny.val_mask.sum(), tiny.test_mask.sum()) == (rest // 3, rest - rest // 3)
    for bad in (0, 1.5, -0.1, True, "0.5"):
        with pytest.raises(ValueError, match=r"`scale` must be a number in \(0, 1\]"):
            synthetic_planetoid("cora", scale=bad)
    # A NumPy scale is a number like a Python one.
    assert synthetic_planetoid("cora", scale=np.float32(0.06)).num_nodes == 162
    with pytest.raises(ValueError, match="`scale` = 0.01 gives cora 27 nodes, fewer than the 142"):
        synthetic_planetoid("cora", scale=0.01)


def test_citeseer_isolated_test_gap(data_dir):
    ds = _planetoid(data_dir, "citeseer")
    in_split = ds.train_mask | ds.val_mask | ds.test_mask
    gap = np.setdiff1d(np.arange(2312, 3327), np.flatnonzero(ds.test_mask))
    assert gap.size == 15  # test-range ids missing from ind.citeseer.test.index
    assert not in_split[gap].any()
    np.testing.assert_array_equal(ds.node_features[gap], 0.0)
    np.testing.assert_array_equal(ds.labels[gap], 0)


def test_planetoid_normalize_features(data_dir):
    ds = load_planetoid(data_dir / "planetoid", "citeseer", normalize_features=True)
    sums = ds.node_features.sum(1)
    nonzero = sums > 0
    np.testing.assert_allclose(sums[nonzero], 1.0, rtol=1e-5)
    assert (~nonzero).sum() == 15


# --------------------------------------------------------------------------- splits


def test_random_node_split():
    tr, va, te = random_node_split(2708, seed=3)
    assert (tr.sum(), va.sum(), te.sum()) == (270, 270, 2168)  # GRACE: int(n * 0.1)
    np.testing.assert_array_equal(tr.astype(int) + va + te, 1)  # a partition
    again = random_node_split(2708, seed=3)
    np.testing.assert_array_equal(again[0], tr)
    assert not np.array_equal(random_node_split(2708, seed=4)[0], tr)
    tr, va, te = random_node_split(10, seed=0, train=0.5, val=0.5)
    assert (tr.sum(), va.sum(), te.sum()) == (5, 5, 0)
    with pytest.raises(ValueError, match="`train` \\+ `val`"):
        random_node_split(10, seed=0, train=0.6, val=0.5)
    with pytest.raises(ValueError, match="`num_nodes`"):
        random_node_split(0, seed=0)
    with pytest.raises(ValueError, match="`seed`"):
        random_node_split(10, seed=1.5)


def test_stratified_kfold():
    labels = np.repeat([0, 1, 2], [30, 20, 10])
    folds = stratified_kfold(labels, num_folds=10, seed=0)
    assert len(folds) == 10
    tests = np.concatenate([test for _, test in folds])
    np.testing.assert_array_equal(np.sort(tests), np.arange(60))
    for train, test in folds:
        assert np.intersect1d(train, test).size == 0 and train.size + test.size == 60
        np.testing.assert_array_equal(np.bincount(labels[test]), [3, 2, 1])
    again = stratified_kfold(labels, num_folds=10, seed=0)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, again, strict=True))
    other = stratified_kfold(labels, num_folds=10, seed=1)
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(folds, other, strict=True))
    with pytest.raises(ValueError, match="`num_folds`"):
        stratified_kfold(labels, num_folds=1, seed=0)
    with pytest.raises(ValueError, match="`labels`"):
        stratified_kfold(labels.reshape(6, 10), seed=0)


# --------------------------------------------------------------------------- in-memory form


def test_graph_types_validate_and_are_read_only():
    senders = np.array([0, 1])
    g = Graph(senders=senders, receivers=[1, 0], node_features=np.eye(2), label=1)
    assert g.senders.dtype == np.int32 and g.node_features.dtype == np.float32
    assert (g.num_nodes, g.num_edges) == (2, 2)
    with pytest.raises(ValueError):
        g.senders[0] = 1
    senders[0] = 1  # the caller's array is neither frozen nor shared with the graph
    assert g.senders[0] == 0
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        Graph(senders=[0, 2], receivers=[2, 0], node_features=np.eye(2), label=0)
    with pytest.raises(ValueError, match="`senders` must hold int32"):
        Graph(senders=[0.0], receivers=[1], node_features=np.eye(2), label=0)
    with pytest.raises(ValueError, match="features"):
        GraphDataset("toy", (g,), np.array([1]), num_classes=2, num_features=3)
    m = np.array([True, False])
    with pytest.raises(ValueError, match="`labels` has 3 entries"):
        NodeDataset("toy", [0], [1], np.eye(2), [0, 1, 1], 2, m, m, m)
    # Class ids outside [0, num_classes) are refused when the data set is built, not after
    # pretraining, when the classifier first meets them.
    for labels in ([0, 5], [-4, 1]):
        with pytest.raises(ValueError, match=r"`labels` must lie in \[0, 2\) \(num_classes=2\)"):
            NodeDataset("toy", [0, 1], [1, 0], np.eye(2), labels, 2, m, ~m, ~m)
    # A node id past int32 is refused rather than wrapped into a valid id (2**32 -> 0).
    for ids in ([2**32, 1], [-(2**31) - 1, 1]):
        with pytest.raises(ValueError, match="`senders` must hold values that fit int32"):
            Graph(senders=ids, receivers=[1, 0], node_features=np.eye(2), label=0)
    with pytest.raises(ValueError, match="`labels` must hold values that fit int32"):
        NodeDataset("toy", [0, 1], [1, 0], np.eye(2), [2**32, 1], 2, m, ~m, ~m)


def test_loader_argument_errors(data_dir):
    with pytest.raises(ValueError, match="`node_features` must be one of"):
        load_tu(data_dir / "tu_raw", "MUTAG", node_features="labels")
    with pytest.raises(ValueError, match="`max_degree`"):
        load_gin(data_dir / "tu_gin", "MUTAG", max_degree=0)
    with pytest.raises(ValueError, match="`name` is required"):
        load_gin(data_dir / "tu_gin")


# --------------------------------------------------------------------------- malformed files

GIN_OK = "2\n3 0\n0 1 1\n1 2 0 2\n0 1 1\n2 1\n1 1 1\n1 1 0\n"


def _replace_line(text: str, line: int, new: str | None) -> str:
    lines = text.split("\n")
    if new is None:
        del lines[line - 1]
    else:
        lines[line - 1] = new
    return "\n".join(lines)


def _expect_error(call, path: Path, line: int | None, match: str):
    with pytest.raises(GraphFormatError, match=match) as info:
        call()
    err = info.value
    assert isinstance(err, ValueError)
    assert err.path == path and err.line == line
    assert str(path) in str(err)
    if line is not None:
        assert f"line {line}:" in str(err)
    return err


def test_gin_small_file_roundtrip(tmp_path):
    path = tmp_path / "TOY.txt"
    path.write_text(GIN_OK)
    ds = load_gin(path)
    assert ds.name == "TOY" and len(ds) == 2 and ds.labels.tolist() == [0, 1]
    assert _edge_set(ds.graphs[0].senders, ds.graphs[0].receivers) == {
        (0, 1),
        (1, 0),
        (1, 2),
        (2, 1),
    }
    assert ds.num_features == 2  # tags {0, 1}
    assert load_gin(tmp_path, "TOY").num_features == 2  # a directory works too
    with_features = tmp_path / "FEAT.txt"
    with_features.write_text("1\n2 5\n0 1 1 0.5 -2\n0 1 0 1e-3 4\n")
    ds = load_gin(with_features, node_features="attributes")
    np.testing.assert_array_equal(ds.graphs[0].node_features, np.float32([[0.5, -2], [1e-3, 4]]))
    assert ds.labels.tolist() == [0]


@pytest.mark.parametrize(
    ("line", "new", "error_line", "match"),
    [
        (1, "3", 1, "says 3 graphs but the file ends"),
        (1, "1", 6, "lines go on after the last one"),
        (1, "two", 1, "'two' is not an integer"),
        (1, "2 2", 1, "number of graphs alone"),
        (2, "3", 2, "expected the header 'n_nodes label' of graph 0"),
        (2, "3 x", 2, "'x' is not an integer"),
        (2, "4 0", 7, "graph 0, header at line 2, declares 4 nodes"),
        (6, "3 1", 6, "graph 1 declares 3 nodes but the file ends after 2 node lines"),
        (2, "0 0", 2, "at least 1 node"),
        (3, "0", 3, "truncated line"),
        (4, "1 3 0 2", 4, "neighbour count mismatch: n_neighbours is 3 but the line lists 2"),
        (4, "1 1 0 2", 4, "neighbour count mismatch or ragged features"),
        (4, "1 -1 0 2", 4, "neighbour count mismatch"),
        (3, "0 1 3", 3, "neighbour id 3 out of range, ids must lie in 0..2"),
        (7, "1 1 -1", 7, "neighbour id -1 out of range"),
        (3, "0 1 1.5", 3, "neighbour id: '1.5' is not an integer"),
        (5, "C 1 1", 5, "'C' is not an integer"),
        (4, "", 4, "empty line"),
    ],
)
def test_gin_malformed(tmp_path, line, new, error_line, match):
    path = tmp_path / "BAD.txt"
    path.write_text(_replace_line(GIN_OK, line, new))
    _expect_error(lambda: load_gin(path), path, error_line, match)


def test_gin_malformed_features(tmp_path):
    path = tmp_path / "BAD.txt"
    path.write_text("1\n2 5\n0 1 1 0.5\n0 1 0 nan\n")
    _expect_error(lambda: load_gin(path), path, 4, "'nan' is not a finite number")
    path.write_text("1\n2 5\n0 1 1 0.5\n0 1 0 x\n")
    _expect_error(lambda: load_gin(path), path, 4, "'x' is not a finite number")


def test_gin_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="MUTAG.txt.*shared/data/tu_gin.*powerful-gnns"):
        load_gin(tmp_path, "MUTAG")
    with pytest.raises(FileNotFoundError, match="GIN data directory not found: .*nowhere"):
        load_gin(tmp_path / "nowhere", "MUTAG")
    # A file path that does not exist is a missing file, not a directory without a name.
    with pytest.raises(FileNotFoundError, match="GIN data file not found: .*nope.MUTAG.txt"):
        load_gin(tmp_path / "nope" / "MUTAG.txt")


TU_OK = {
    "A": "1, 2\n2, 1\n2, 3\n3, 2\n4, 5\n5, 4\n",
    "graph_indicator": "1\n1\n1\n2\n2\n",
    "graph_labels": "1\n-1\n",
    "node_labels": "0\n1\n0\n2\n0\n",
    "node_attributes": "0.5, 1\n1, 2\n1.5, 3\n2, 4\n2.5, 5\n",
}


def _write_tu(tmp_path: Path, **changes) -> Path:
    folder = tmp_path / "TOY"
    folder.mkdir(exist_ok=True)
    for suffix, text in {**TU_OK, **changes}.items():
        if text is not None:
            (folder / f"TOY_{suffix}.txt").write_text(text)
    return folder


def test_tu_small_set(tmp_path):
    _write_tu(tmp_path)
    ds = load_tu(tmp_path, "TOY")
    assert ds.labels.tolist() == [1, 0]  # raw 1/-1 in sorted order: -1 -> 0, 1 -> 1
    assert ds.num_features == 3 and [g.num_nodes for g in ds.graphs] == [3, 2]
    np.testing.assert_array_equal(ds.graphs[1].node_features.argmax(1), [2, 0])
    attrs = load_tu(tmp_path / "TOY", "TOY", node_features="attributes")  # the folder itself
    np.testing.assert_array_equal(attrs.graphs[1].node_features, [[2, 4], [2.5, 5]])
    degree = load_tu(tmp_path, "TOY", node_features="degree", max_degree=1)
    assert degree.num_features == 2
    np.testing.assert_array_equal(degree.graphs[0].node_features.argmax(1), [1, 1, 1])


@pytest.mark.parametrize(
    ("suffix", "line", "new", "error_line", "match"),
    [
        ("A", 3, "2, 3, 4", 3, "expected an edge 'row, col' \\(2 values separated by ','\\)"),
        ("A", 3, "2; 3", 3, "expected an edge"),
        ("A", 3, "2,", 3, "expected an edge"),
        ("A", 2, "2, x", 2, "'x' is not an integer"),
        ("A", 5, "4, 6", 5, "refers to a node outside 1..5, the nodes listed in"),
        ("A", 5, "0, 4", 5, "refers to a node outside"),
        ("A", 5, "3, 4", 5, "joins graph 1 to graph 2"),
        ("graph_indicator", 5, "1", 5, "graph id 1 follows 2: the nodes of each graph"),
        ("graph_indicator", 4, "3", 4, "jumps from 1 to 3: .*graph 2 would have no nodes"),
        ("graph_indicator", 1, "2", 1, "the first graph id must be 1"),
        ("graph_indicator", 2, "1.0", 2, "'1.0' is not an integer"),
        ("graph_labels", 2, None, 2, "ends after 1 lines: TOY_graph_indicator.txt has 2"),
        ("graph_labels", 3, "1", 3, "extra line"),
        ("node_labels", 5, None, 5, "ends after 4 lines: TOY_graph_indicator.txt lists 5"),
        ("node_labels", 2, "1, 1", 2, "expected one node label"),
    ],
)
def test_tu_malformed(tmp_path, suffix, line, new, error_line, match):
    text = TU_OK[suffix]
    if line > len(text.splitlines()):
        text = text + new + "\n"
    else:
        text = _replace_line(text, line, new)
    folder = _write_tu(tmp_path, **{suffix: text})
    path = folder / f"TOY_{suffix}.txt"
    _expect_error(lambda: load_tu(tmp_path, "TOY"), path, error_line, match)


def test_tu_malformed_attributes(tmp_path):
    folder = _write_tu(tmp_path, node_attributes="0.5, 1\n1, 2\n1.5, x\n2, 4\n2.5, 5\n")
    path = folder / "TOY_node_attributes.txt"
    load = lambda: load_tu(tmp_path, "TOY", node_features="attributes")
    _expect_error(load, path, 3, "'x' is not a finite number")
    _write_tu(tmp_path, node_attributes="0.5, 1\n1, 2\n1.5\n2, 4\n2.5, 5\n")
    _expect_error(load, path, 3, "expected node attributes \\(2 values")


def test_tu_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.*shared/data/tu_raw.*chrsmrrs"):
        load_tu(tmp_path / "nowhere", "MUTAG")
    with pytest.raises(FileNotFoundError, match="TU data set folder for 'MUTAG'"):
        load_tu(tmp_path, "MUTAG")
    _write_tu(tmp_path, A=None)
    with pytest.raises(FileNotFoundError, match="TOY_A.txt"):
        load_tu(tmp_path, "TOY")
    _write_tu(tmp_path)
    (tmp_path / "TOY" / "TOY_node_labels.txt").unlink()
    with pytest.raises(FileNotFoundError, match="TOY_node_labels.txt"):
        load_tu(tmp_path, "TOY", node_features="tags")
    assert load_tu(tmp_path, "TOY").num_features == 3  # 'auto' falls back to degree 0..2


def _write_planetoid(root: Path, *, test_index=(507, 505, 508, 510), graph=None) -> dict:
    """A tiny Planetoid set: 505 allx rows (3 of them train), 4 test nodes with gaps."""
    rng = np.random.default_rng(0)
    parts = {
        "allx": scipy.sparse.csr_matrix(rng.integers(0, 2, (505, 4)).astype(np.float32)),
        "ally": np.eye(3, dtype=np.int32)[rng.integers(0, 3, 505)],
        "tx": scipy.sparse.csr_matrix(rng.integers(0, 2, (4, 4)).astype(np.float32) + 2),
        "ty": np.eye(3, dtype=np.int32)[[2, 1, 2, 1]],
        "graph": graph if graph is not None else {0: [1, 1, 0], 1: [2], 510: [505]},
    }
    parts["x"], parts["y"] = parts["allx"][:3], parts["ally"][:3]
    for name, value in parts.items():
        with open(root / f"ind.toy.{name}", "wb") as f:
            pickle.dump(value, f, protocol=2)
    (root / "ind.toy.test.index").write_text("".join(f"{i}\n" for i in test_index))
    return parts


def test_planetoid_small_set_with_gap(tmp_path):
    parts = _write_planetoid(tmp_path)
    ds = load_planetoid(tmp_path, "TOY")
    assert ds.num_nodes == 511 and ds.num_classes == 3
    tx = parts["tx"].toarray()
    for row, node in enumerate([507, 505, 508, 510]):  # tx row i is node test.index[i]
        np.testing.assert_array_equal(ds.node_features[node], tx[row])
        assert ds.labels[node] == parts["ty"][row].argmax()
    for node in (506, 509):  # in the test range, not in test.index: zero rows, label 0
        np.testing.assert_array_equal(ds.node_features[node], 0)
        assert ds.labels[node] == 0
    np.testing.assert_array_equal(ds.node_features[:505], parts["allx"].toarray())
    assert np.flatnonzero(ds.test_mask).tolist() == [505, 507, 508, 510]
    assert (ds.train_mask.sum(), ds.val_mask.sum()) == (3, 500)
    # Listed edges 0-1 (twice), 0-0 (self-loop), 1->2 and 510->505, one direction each.
    assert _edge_set(ds.senders, ds.receivers) == {
        (0, 1),
        (1, 0),
        (1, 2),
        (2, 1),
        (505, 510),
        (510, 505),
    }


@pytest.mark.parametrize(
    ("test_index", "error_line", "match"),
    [
        ((507, 505, "x", 510), 3, "'x' is not an integer"),
        ((507, 505, 508, 511), 4, "test node id 511 outside 505..510"),
        ((507, 504, 508, 510), 2, "test node id 504 outside"),
        ((507, 506, 508, 510), 2, "smallest test id is 506, expected 505"),
        ((507, 505, 507, 510), 3, "test node id 507 repeats"),
        ((507, 505, 508), 4, "the file ends early: expected 4 test node ids"),
        ((507, 505, 508, 510, 509), 5, "extra line"),
    ],
)
def test_planetoid_malformed_test_index(tmp_path, test_index, error_line, match):
    _write_planetoid(tmp_path, test_index=test_index)
    path = tmp_path / "ind.toy.test.index"
    _expect_error(lambda: load_planetoid(tmp_path, "toy"), path, error_line, match)


class _Payload:
    def __reduce__(self):
        return (os.getcwd, ())


def test_planetoid_malformed_pickles(tmp_path):
    _write_planetoid(tmp_path)
    path = tmp_path / "ind.toy.ty"
    path.write_bytes(b"not a pickle")
    _expect_error(lambda: load_planetoid(tmp_path, "toy"), path, None, "not a readable")
    path.write_bytes(pickle.dumps(_Payload(), protocol=2))
    _expect_error(lambda: load_planetoid(tmp_path, "toy"), path, None, "refusing to load")
    _write_planetoid(tmp_path, graph={0: [600]})
    _expect_error(
        lambda: load_planetoid(tmp_path, "toy"),
        tmp_path / "ind.toy.graph",
        None,
        "edge \\(0, 600\\) refers to a node outside 0..510",
    )


def test_planetoid_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.*shared/data/planetoid.*kimiyoung"):
        load_planetoid(tmp_path / "nowhere", "cora")
    _write_planetoid(tmp_path)
    (tmp_path / "ind.toy.ally").unlink()
    with pytest.raises(FileNotFoundError, match="ind.toy.ally"):
        load_planetoid(tmp_path, "toy")


def test_format_error_pickles_and_is_a_value_error(tmp_path):
    err = GraphFormatError(tmp_path / "f.txt", 3, "bad")
    assert isinstance(err, ValueError) and str(err) == f"{tmp_path / 'f.txt'}, line 3: bad"
    again = pickle.loads(pickle.dumps(err))
    assert (again.path, again.line, again.problem, str(again)) == (
        err.path,
        3,
        "bad",
        str(err),
    )
