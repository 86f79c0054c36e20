"""Graph-edit triplets (m-Mix Table 6): each triplet moves exactly the edges it says on the
anchor's induced subgraph; the WL kernel equals networkx's WL subtree hashes; the scores equal
their definitions; the graph task reports them after a short run."""

import importlib.util
import json
from pathlib import Path

import jax
import networkx as nx
import numpy as np
import pytest

from jaxcl import evaluation, methods, training
from jaxcl.configs import mmix_graph
from jaxcl.data import Graph, GraphDataset, edit_triplets, load_tu, synthetic_tu
from jaxcl.training import _graph_task

REPO = Path(__file__).parents[1]
DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="module")
def mutag() -> GraphDataset:
    if not (DATA / "tu_raw").is_dir():
        pytest.fail(f"benchmark data not found at {DATA} (../shared/data beside the checkout)")
    return load_tu(DATA / "tu_raw", "MUTAG")


def _edge_set(g: Graph) -> set:
    return {(s, r) for s, r in zip(g.senders.tolist(), g.receivers.tolist(), strict=True) if s < r}


def _graph(edges, n, features=None, label=0):
    s = [a for a, b in edges] + [b for a, b in edges]
    r = [b for a, b in edges] + [a for a, b in edges]
    x = np.ones((n, 1)) if features is None else features
    return Graph(np.array(s, np.int32), np.array(r, np.int32), x, label)


@pytest.mark.parametrize("num_nodes", [10, 15])
def test_triplets_move_exactly_the_edits_on_the_induced_subgraph(mutag, num_nodes):
    anchors, pos, neg, idx = edit_triplets(mutag, num_nodes, num_graphs=60, seed=3)
    assert len(anchors) == len(pos) == len(neg) == len(idx) == 60  # MUTAG: >= 10 nodes each
    assert len(set(idx.tolist())) == 60
    np.testing.assert_array_equal(anchors.labels, mutag.labels[idx])
    for k, i in enumerate(idx.tolist()):
        g = mutag.graphs[i]
        n = min(num_nodes, g.num_nodes)
        induced = {(s, r) for s, r in _edge_set(g) if r < n}
        a, p, q = anchors.graphs[k], pos.graphs[k], neg.graphs[k]
        assert _edge_set(a) == induced
        for h, edits in ((p, 1), (q, 2)):
            assert h.num_nodes == n and h.num_edges == a.num_edges
            np.testing.assert_array_equal(h.node_features, g.node_features[:n])
            assert len(_edge_set(a) - _edge_set(h)) == len(_edge_set(h) - _edge_set(a)) == edits
            assert h.label == g.label and h.senders.max() < n
            # both directions of every edge, once each
            assert sorted(zip(h.senders.tolist(), h.receivers.tolist(), strict=True)) == sorted(
                [(s, r) for s, r in _edge_set(h)] + [(r, s) for s, r in _edge_set(h)]
            )


def test_triplets_are_seeded_and_graphs_without_room_to_edit_are_skipped(mutag):
    one = edit_triplets(mutag, 12, num_graphs=20, seed=0)
    again = edit_triplets(mutag, 12, num_graphs=20, seed=0)
    other = edit_triplets(mutag, 12, num_graphs=20, seed=1)
    np.testing.assert_array_equal(one[3], again[3])
    for x, y in zip(one[:3], again[:3], strict=True):
        assert all(_edge_set(a) == _edge_set(b) for a, b in zip(x.graphs, y.graphs, strict=True))
    assert not np.array_equal(one[3], other[3])
    # more graphs than the set has: all of them
    assert len(edit_triplets(mutag, 10, num_graphs=5000)[3]) == len(mutag)
    # a triangle has no missing pair to add; a single edge has too few to move two
    ds = GraphDataset(
        "tiny",
        (_graph([(0, 1), (1, 2), (0, 2)], 3), _graph([(0, 1)], 4), _graph([(0, 1), (2, 3)], 4)),
        np.array([0, 0, 0]),
        num_classes=1,
        num_features=1,
    )
    anchors, _, neg, idx = edit_triplets(ds, 4)
    assert idx.tolist() == [2] and _edge_set(anchors.graphs[0]) == {(0, 1), (2, 3)}
    assert len(_edge_set(neg.graphs[0]) & {(0, 1), (2, 3)}) == 0  # both moved
    with pytest.raises(ValueError, match="none of the 1 drawn graphs of 'one'"):
        edit_triplets(GraphDataset("one", ds.graphs[:1], np.array([0]), 1, 1), 3)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_nodes=1), r"`num_nodes` must be an int >= 2, got 1"),
        (dict(num_nodes=10.0), r"`num_nodes` must be an int >= 2, got 10.0"),
        (dict(num_nodes=10, num_graphs=0), r"`num_graphs` must be an int >= 1, got 0"),
        (dict(num_nodes=10, positive_edits=-1), r"`positive_edits` must be an int >= 0"),
        (dict(num_nodes=10, negative_edits=1), r"`negative_edits` must be an int > posi"),
        (dict(num_nodes=10, negative_edits=True), r"`negative_edits` must be an int"),
    ],
)
def test_bad_edit_arguments_are_named(mutag, kwargs, message):
    with pytest.raises(ValueError, match=message):
        edit_triplets(mutag, **kwargs)


def _networkx_wl(g: Graph, iterations: int, features: bool = True) -> dict:
    """WL label counts through networkx's subtree hashes (initial label: the feature row,
    or one string for every node)."""
    h = nx.Graph()
    for v, row in enumerate(g.node_features):
        h.add_node(v, x=",".join(f"{t:g}" for t in row) if features else "c")
    h.add_edges_from(zip(g.senders.tolist(), g.receivers.tolist(), strict=True))
    hashes = nx.weisfeiler_lehman_subgraph_hashes(
        h, node_attr="x", iterations=iterations, include_initial_labels=True
    )
    counts: dict = {}
    for v in h.nodes:
        for depth, label in enumerate(hashes[v]):
            counts[(depth, label)] = counts.get((depth, label), 0) + 1
    return counts


def _kernel(a: dict, b: dict) -> float:
    dot = lambda x, y: sum(c * y.get(k, 0) for k, c in x.items())
    return dot(a, b) / np.sqrt(dot(a, a) * dot(b, b))


def test_wl_kernel_equals_networkx_subtree_hashes(mutag):
    anchors, pos, neg, _ = edit_triplets(mutag, 15, num_graphs=40, seed=5)
    for iterations in (1, 2, 5):
        for other in (pos, neg):
            ours = evaluation.wl_kernel_similarity(
                anchors.graphs, other.graphs, iterations=iterations
            )
            ref = [
                _kernel(_networkx_wl(a, iterations), _networkx_wl(b, iterations))
                for a, b in zip(anchors.graphs, other.graphs, strict=True)
            ]
            np.testing.assert_allclose(ours, ref, rtol=1e-12)
            assert ours.dtype == np.float64 and (ours <= 1 + 1e-12).all()
            # structure alone
            ours = evaluation.wl_kernel_similarity(
                anchors.graphs, other.graphs, iterations=iterations, initial="constant"
            )
            ref = [
                _kernel(*(_networkx_wl(g, iterations, features=False) for g in (a, b)))
                for a, b in zip(anchors.graphs, other.graphs, strict=True)
            ]
            np.testing.assert_allclose(ours, ref, rtol=1e-12)
    assert evaluation.discrete_labels(anchors.graphs)  # MUTAG's one-hot atom types
    coil = synthetic_tu("coil_del", scale=0.3)
    assert not evaluation.discrete_labels(coil.graphs[:5])  # point coordinates
    half = [
        Graph(g.senders, g.receivers, g.node_features * 0.5, g.label) for g in anchors.graphs[:3]
    ]
    assert not evaluation.discrete_labels(half)


def test_wl_kernel_by_hand_and_under_relabelling():
    path = _graph([(0, 1), (1, 2)], 3)
    triangle = _graph([(0, 1), (1, 2), (0, 2)], 3)
    # one refinement: path {a: 3, end: 2, middle: 1}, triangle {a: 3, middle: 3}
    sim = evaluation.wl_kernel_similarity([path], [triangle], iterations=1)
    np.testing.assert_allclose(sim, [12 / np.sqrt(14 * 18)])
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (8, 1)).astype(np.float32)
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (1, 6)]
    perm = rng.permutation(8)
    relabelled = _graph([(perm[a], perm[b]) for a, b in edges], 8, x[np.argsort(perm)])
    np.testing.assert_allclose(
        evaluation.wl_kernel_similarity([_graph(edges, 8, x)], [relabelled]), [1.0]
    )
    with pytest.raises(ValueError, match="must pair up, got 1 and 2"):
        evaluation.wl_kernel_similarity([path], [path, path])
    with pytest.raises(ValueError, match="iterations"):
        evaluation.wl_kernel_similarity([path], [path], iterations=0)
    with pytest.raises(ValueError, match="initial"):
        evaluation.wl_kernel_similarity([path], [path], initial="degree")
    with pytest.raises(ValueError, match=r"`graphs_b\[1\]` has no nodes"):
        evaluation.wl_kernel_similarity([path, path], [path, _graph([], 0)])
    # a feature row's dtype and the sign of its zeros do not change its label
    signed = _graph(edges, 8, np.where(x == 0, -0.0, x).astype(np.float64))
    np.testing.assert_allclose(
        evaluation.wl_kernel_similarity([_graph(edges, 8, x)], [signed]), [1.0]
    )


def test_scores_equal_their_definitions():
    rng = np.random.default_rng(0)
    pos = rng.normal(size=50).round(1)  # rounded: ties across and within the two sets
    neg = rng.normal(size=50).round(1) - 0.3
    r = evaluation.similarity_scores(pos, neg)
    # AUC as the Mann-Whitney statistic: P(pos > neg) + P(pos == neg) / 2 over all pairs
    wins = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    np.testing.assert_allclose(r["pair_auc"], wins)
    assert r["triplet_acc"] == np.mean(pos > neg)
    assert evaluation.similarity_scores([1.0, 2.0], [1.0, 2.0]) == {
        "triplet_acc": 0.0,  # ties are not counted as right
        "pair_auc": 0.5,
    }
    a = rng.normal(size=(30, 4))
    p, n = a + 0.1 * rng.normal(size=a.shape), rng.normal(size=a.shape)
    cos = lambda u, v: (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    assert evaluation.edit_triplet_scores(a, p, n) == evaluation.similarity_scores(
        cos(a, p), cos(a, n)
    )
    # cosine: the scale of an embedding does not matter
    assert evaluation.edit_triplet_scores(3 * a, p, 0.5 * n) == evaluation.edit_triplet_scores(
        a, p, n
    )
    with pytest.raises(ValueError, match=r"must be \[n, dim\] of one shape"):
        evaluation.edit_triplet_scores(a, p, n[:5])
    with pytest.raises(ValueError, match="non-empty"):
        evaluation.similarity_scores([], [])
    with pytest.raises(ValueError, match="`positive_sim` holds nan at index 1"):
        evaluation.similarity_scores([0.0, np.nan], [0.0, 0.0])
    with pytest.raises(
        ValueError, match="edit_triplet_scores: `positives` holds NaN or inf in row 2"
    ):
        evaluation.edit_triplet_scores(a, np.where(np.arange(30)[:, None] == 2, np.inf, p), n)
    with pytest.raises(ValueError, match="`negatives` row 4 is all zeros"):
        evaluation.edit_triplet_scores(a, p, np.where(np.arange(30)[:, None] == 4, 0.0, n))


def _mmix_config(row, arg):
    path = REPO / "experiments" / "mmix" / f"graph_{row}.py"
    spec = importlib.util.spec_from_file_location("cfg", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


@pytest.mark.parametrize("value", [(1,), (10, 2.5), (True,), (10, -3)])
def test_bad_edit_sizes_are_named(value):
    c = _mmix_config("mp", "mutag,quick")
    c.eval.edit_nodes = value
    with pytest.raises(training.ConfigError, match="config.eval.edit_nodes"):
        training.validate(c)


def test_graph_task_reports_edit_scores_after_a_short_run(tmp_path, monkeypatch):
    c = _mmix_config("mp", "mutag,quick")
    # What the embedding function is given: the data set and the six triplet sets in one
    # padded shape, so it compiles once (each used to bring its own ladder: 9 compiles).
    shapes = set()
    embeddings = _graph_task.GraphClassificationTask.embeddings

    def recording(self, features_fn, batcher=None):
        def features(batch):
            shapes.add(jax.tree.map(np.shape, batch))
            return features_fn(batch)

        return embeddings(self, features, batcher)

    monkeypatch.setattr(_graph_task.GraphClassificationTask, "embeddings", recording)
    # the task's own features (atom labels and degrees): WL labels nodes by those rows
    mutag = load_tu(DATA / "tu_raw", "MUTAG", node_features=c.data.node_features)
    assert c.data.node_features == "tags+degree" and evaluation.discrete_labels(mutag.graphs)
    c.data.data_dir = str(DATA)
    c.train.epochs = 1
    c.eval.edit_nodes = (10, 15)
    c.eval.edit_graphs = 40
    results = training.train_and_evaluate(c, str(tmp_path))
    for n in (10, 15):
        key = f"edit_n{n}"
        assert results[f"{key}_triplets"] == 40
        for score in ("triplet_acc", "pair_auc", "wl_triplet_acc", "wl_pair_auc"):
            assert 0.0 <= results[f"{key}_{score}"] <= 1.0
        # the kernel baseline is the one computed directly on the same triplets
        anchors, pos, neg, _ = edit_triplets(mutag, n, num_graphs=40, seed=c.seed)
        wl = evaluation.similarity_scores(
            evaluation.wl_kernel_similarity(anchors.graphs, pos.graphs),
            evaluation.wl_kernel_similarity(anchors.graphs, neg.graphs),
        )
        assert results[f"{key}_wl_triplet_acc"] == wl["triplet_acc"]
        assert results[f"{key}_wl_pair_auc"] == wl["pair_auc"]
    assert "edit_n20_triplet_acc" not in results
    assert len(shapes) == 1, shapes


def test_graph_views_leave_the_method_as_the_training_set_made_it(mutag):
    c = _mmix_config("mp", "mutag,quick")
    method = methods.get(c.method.name)(c)
    method.graph_dataset(mutag)
    before = method.max_nodes
    views, weights = method.graph_views(edit_triplets(mutag, 10, num_graphs=10)[0])
    assert method.max_nodes == before == max(g.num_nodes for g in mutag.graphs)
    assert len(views.graphs) == 10 and weights is not None


def test_synthetic_coil_del_is_delaunay_graphs_of_its_size():
    """COIL-DEL's published sizes (3,900 graphs, 21.54 nodes, 100 classes); each graph a
    triangulation of its nodes' coordinates (3 n - 3 - hull edges) that holds their Gabriel
    graph (edges whose diameter circle is empty, brute force), as Delaunay's does."""
    from scipy.spatial import ConvexHull

    ds = synthetic_tu("coil_del", seed=2)
    nodes = np.array([g.num_nodes for g in ds.graphs])
    edges = np.array([g.num_edges for g in ds.graphs]) // 2
    assert (len(ds), ds.num_classes, ds.num_features) == (3900, 100, 2)
    assert nodes.sum() == round(3900 * 21.54) and nodes.min() >= 3
    np.testing.assert_allclose(edges.mean(), 54.24, rtol=0.02)  # TU's, not fitted
    assert np.bincount(ds.labels).tolist() == [39] * 100
    for g in ds.graphs[:200]:
        x = g.node_features.astype(np.float64)
        assert len(_edge_set(g)) == 3 * g.num_nodes - 3 - len(ConvexHull(x).vertices)
        mid = (x[:, None] + x[None]) / 2
        radius2 = ((x[:, None] - x[None]) ** 2).sum(-1) / 4
        inside = ((x[None, None] - mid[:, :, None]) ** 2).sum(-1) < radius2[..., None] - 1e-12
        gabriel = {(a, b) for a, b in zip(*np.nonzero(~inside.any(-1)), strict=True) if a < b}
        assert gabriel <= _edge_set(g)
    small = synthetic_tu("coil_del", seed=2, scale=0.3)
    assert len(small) == 1170 and small.num_nodes == round(1170 * 21.54)
    with pytest.raises(ValueError, match="fewer than the 1000"):
        synthetic_tu("coil_del", scale=0.2)


def test_coil_del_rows_score_table_6_on_synthetic_graphs_unless_told_otherwise():
    for row in mmix_graph.ROWS:
        for variant, scale in (("", 1.0), (",cpu", 0.3), (",quick", 0.3)):
            c = _mmix_config(row, "coil_del" + variant)
            training.validate(c)
            assert (c.data.synthetic, c.data.synthetic_scale) == (True, scale)
            assert (c.data.graph_format, c.data.node_features) == ("tu", "attributes")
            assert tuple(c.eval.edit_nodes) == (10, 15, 20, 50) and c.eval.edit_graphs == 1000
            assert c.eval.graph_protocol == "linear"
    c = _mmix_config("mp", "coil_del")
    c.data.graph_format = "gin"
    with pytest.raises(training.ConfigError, match="'tu' for coil_del"):
        training.validate(c)
    c = _mmix_config("mp", "coil_del")
    c.data.node_features = "degree"
    with pytest.raises(training.ConfigError, match="are the points' coordinates"):
        training.train_and_evaluate(c, "/nonexistent")


def test_edit_table_summarises_runs_and_writes_its_plot(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "edit_table", REPO / "experiments/mmix/edit_table.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def run(offset):
        keys = ("triplet_acc", "pair_auc", "wl_triplet_acc", "wl_pair_auc")
        return {f"edit_n{n}_{k}": offset + n / 100 for n in (10, 20) for k in keys}

    for name, runs in (("a", [run(0.1), run(0.3)]), ("b", [run(0.0)])):
        (tmp_path / name).mkdir()
        results = {"runs": runs} if len(runs) > 1 else runs[0]
        (tmp_path / name / "results.json").write_text(json.dumps(results))
    out = tmp_path / "out"
    module.main(["--run", f"A={tmp_path / 'a'}", "--run", f"B={tmp_path / 'b'}", "--out", str(out)])
    table = json.loads((out / "edit_table.json").read_text())["rows"]
    cell = table["A"]["20"]["pair_auc"]
    np.testing.assert_allclose([cell["mean"], cell["std"]], [0.4, np.std([0.3, 0.5], ddof=1)])
    assert table["B"]["10"]["triplet_acc"] == {"mean": 0.1, "std": 0.0, "per_run": [0.1]}
    assert table["WL kernel"]["10"]["pair_auc"]["mean"] == pytest.approx(0.3)  # from --run A
    assert (out / "edit_table.png").stat().st_size > 10_000
    with pytest.raises(SystemExit, match="no edit scores"):
        module.main(["--run", f"C={_write(tmp_path / 'c', {'test_top1': 0.5})}", "--out", str(out)])


def _write(folder, results):
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(results))
    return folder
