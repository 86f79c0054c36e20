"""PPI, the inductive multi-label node set: its reader (on hand-written files in the GraphSAGE
layout), the random graphs of its sizes, the multi-label classifier and micro-F1 against a
plain-loop reference and scikit-learn, GRACE's node windows, and the inductive node task end
to end on the GRACE and GRACE + mp-mix configs."""

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from sklearn.metrics import f1_score

from jaxcl import evaluation, graphs, losses, methods, mixers, training
from jaxcl.data import GraphFormatError, NodeDataset, load_ppi, synthetic_ppi
from jaxcl.evaluation._node_multilabel import micro_f1, micro_f1_counts

REPO = Path(__file__).parents[1]


# ---------------------------------------------------------------------------------- reader

# Three splits: (graph id per node, undirected links, features offset). The training split
# has two graphs (nodes 0-2: graph 1, nodes 3-4: graph 2), with a duplicate link (both
# directions), and a self-loop, which the reader drops.
SPLIT_GRAPHS = {
    "train": ([1, 1, 1, 2, 2], [(0, 1), (1, 0), (1, 2), (3, 4), (2, 2)]),
    "valid": ([3, 3], [(0, 1)]),
    "test": ([4, 4, 4], [(0, 2), (1, 2)]),
}


def _write_ppi(folder: Path, *, num_features=3, num_classes=4, splits=SPLIT_GRAPHS):
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    written = {}
    for split, (gid, links) in splits.items():
        n = len(gid)
        x = rng.normal(size=(n, num_features)).astype(np.float32)
        y = (rng.random((n, num_classes)) < 0.5).astype(np.int64)
        graph = {
            "directed": False,
            "multigraph": False,
            "graph": {},
            "nodes": [
                {"id": i, "test": split == "test", "val": split == "valid"} for i in range(n)
            ],
            "links": [{"source": s, "target": t} for s, t in links],
        }
        (folder / f"{split}_graph.json").write_text(json.dumps(graph))
        np.save(folder / f"{split}_feats.npy", x)
        np.save(folder / f"{split}_labels.npy", y)
        np.save(folder / f"{split}_graph_id.npy", np.asarray(gid))
        written[split] = (x, y)
    return written


def test_load_ppi_reads_the_graphsage_layout(tmp_path):
    written = _write_ppi(tmp_path / "ppi")
    ds = load_ppi(tmp_path / "ppi")
    assert ds.name == "ppi" and ds.multilabel and ds.num_classes == 4
    assert ds.num_nodes == 10 and ds.num_features == 3
    np.testing.assert_array_equal(
        ds.node_features, np.concatenate([written[s][0] for s in ("train", "valid", "test")])
    )
    np.testing.assert_array_equal(
        ds.labels, np.concatenate([written[s][1] for s in ("train", "valid", "test")])
    )
    assert ds.train_mask.tolist() == [True] * 5 + [False] * 5
    assert ds.val_mask.tolist() == [False] * 5 + [True] * 2 + [False] * 3
    assert ds.test_mask.tolist() == [False] * 7 + [True] * 3
    # undirected, once per direction, no self-loop; the splits' ids offset by 5 and 7
    undirected = [(0, 1), (1, 2), (3, 4), (5, 6), (7, 9), (8, 9)]
    want = sorted(undirected + [(b, a) for a, b in undirected])
    assert sorted(zip(ds.senders.tolist(), ds.receivers.tolist(), strict=True)) == want


def test_load_ppi_finds_pygs_raw_folder(tmp_path):
    _write_ppi(tmp_path / "PPI" / "raw")
    assert load_ppi(tmp_path / "PPI").num_nodes == 10


def test_load_ppi_missing_file_says_how_to_get_it(tmp_path):
    _write_ppi(tmp_path / "ppi")
    (tmp_path / "ppi" / "valid_labels.npy").unlink()
    with pytest.raises(FileNotFoundError, match=r"valid_labels\.npy.*ppi\.zip"):
        load_ppi(tmp_path / "ppi")


@pytest.mark.parametrize(
    "splits, match",
    [
        ({**SPLIT_GRAPHS, "train": ([1, 1, 1, 2, 2], [(2, 3)])}, "1 edges join nodes of different"),
        ({**SPLIT_GRAPHS, "test": ([4, 4, 4], [(0, 5)])}, r"outside 0\.\.2"),
    ],
)
def test_load_ppi_rejects_bad_graphs(tmp_path, splits, match):
    _write_ppi(tmp_path / "ppi", splits=splits)
    with pytest.raises(GraphFormatError, match=match):
        load_ppi(tmp_path / "ppi")


def test_load_ppi_rejects_labels_that_are_not_0_or_1(tmp_path):
    _write_ppi(tmp_path / "ppi")
    np.save(tmp_path / "ppi" / "test_labels.npy", np.full((3, 4), 2))
    with pytest.raises(GraphFormatError, match="labels must be 0 or 1"):
        load_ppi(tmp_path / "ppi")


def test_synthetic_ppi_has_ppis_sizes_and_disjoint_graphs():
    ds = synthetic_ppi(seed=1)
    assert (ds.num_nodes, ds.num_features, ds.num_classes) == (56944, 50, 121)
    assert [int(m.sum()) for m in (ds.train_mask, ds.val_mask, ds.test_mask)] == [
        44906, 6514, 5524
    ]  # fmt: skip
    # PyG's mean degree of the training graphs: 1,226,368 directed edges on 44,906 nodes
    train = ds.subgraph(ds.train_mask)
    assert abs(train.num_edges - 1226368) < 200
    # 24 graphs stored one after another: every edge stays inside its graph
    sizes = [2246] * 6 + [2245] * 14  # 44,906 over 20 training graphs, the first 6 larger
    sizes += [3257, 3257, 2762, 2762]
    graph_of = np.repeat(np.arange(24), sizes)
    assert len(graph_of) == ds.num_nodes
    assert np.all(graph_of[ds.senders] == graph_of[ds.receivers])
    assert not np.any(ds.senders == ds.receivers)
    np.testing.assert_array_equal(ds.labels, synthetic_ppi(seed=1).labels)
    assert 0.29 < ds.labels.mean() < 0.31


def test_synthetic_ppi_scale_and_errors():
    small = synthetic_ppi(scale=0.05)
    assert small.num_nodes == 20 * 112 + 2 * 163 + 2 * 138
    for bad in (0, 1.5, True, "0.1"):
        with pytest.raises(ValueError, match="synthetic_ppi: `scale` must be a number in"):
            synthetic_ppi(scale=bad)


def test_node_dataset_multilabel_checks_and_subgraph():
    m = np.array([True, True, False])
    y = np.array([[1, 0], [0, 0], [1, 1]])
    ds = NodeDataset("t", [0, 1, 1, 2], [1, 0, 2, 1], np.eye(3), y, 2, m, ~m, ~m)
    assert ds.multilabel
    with pytest.raises(ValueError, match="2 columns for num_classes=3"):
        NodeDataset("t", [0], [1], np.eye(3), y, 3, m, ~m, ~m)
    with pytest.raises(ValueError, match="only 0 and 1"):
        NodeDataset("t", [0], [1], np.eye(3), 2 * y, 2, m, ~m, ~m)
    sub = ds.subgraph(~m)
    assert sub.num_nodes == 1 and sub.num_edges == 0 and sub.labels.tolist() == [[1, 1]]
    with pytest.raises(ValueError, match=r"boolean array of shape \(3,\)"):
        ds.subgraph([1, 0, 1])


# ----------------------------------------------------------------- multi-label classifier


def _multilabel_data(n=900, dim=16, classes=5, seed=0, noise=1.0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    w = rng.normal(size=(dim, classes))
    y = (x @ w + noise * rng.normal(size=(n, classes)) > 0.5).astype(np.int32)
    masks = [np.arange(n) % 10 < 2, np.arange(n) % 10 == 2, np.arange(n) % 10 > 2]
    return x, y, masks


def _multilabel_reference(x, y, masks, *, steps, lr, eval_every, seed):
    """Plain Python loop: Adam on the mean BCE, micro-F1 by scikit-learn, first best val."""
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-6)
    tr, va, te = (np.flatnonzero(m) for m in masks)
    c = y.shape[1]
    params = {
        "kernel": jax.nn.initializers.glorot_uniform()(jax.random.key(seed), (x.shape[1], c)),
        "bias": jnp.zeros(c),
    }
    tx = optax.adam(lr)
    state = tx.init(params)
    xt, yt = jnp.asarray(x[tr]), jnp.asarray(y[tr], jnp.float32)

    @jax.jit
    def step(params, state):
        def loss(p):
            return optax.sigmoid_binary_cross_entropy(xt @ p["kernel"] + p["bias"], yt).mean()

        updates, state = tx.update(jax.grad(loss)(params), state)
        return optax.apply_updates(params, updates), state

    def f1(params, rows):
        pred = x[rows] @ np.asarray(params["kernel"]) + np.asarray(params["bias"]) > 0
        return f1_score(y[rows], pred.astype(int), average="micro", zero_division=0)

    best, history = (-1.0, None, 0), []
    for t in range(1, steps + 1):
        params, state = step(params, state)
        if t % eval_every == 0 or t == steps:
            val, test = f1(params, va), f1(params, te)
            history.append(test)
            if val > best[0]:
                best = (val, test, t)
    return best, history


def test_micro_f1_equals_scikit_learns():
    rng = np.random.default_rng(3)
    logits, y = rng.normal(size=(50, 7)), (rng.random((50, 7)) < 0.3).astype(int)
    want = f1_score(y, (logits > 0).astype(int), average="micro")
    got = float(micro_f1(micro_f1_counts(jnp.asarray(logits), jnp.asarray(y))))
    assert got == pytest.approx(want, abs=1e-6)
    assert float(micro_f1(micro_f1_counts(-jnp.ones((3, 2)), jnp.zeros((3, 2))))) == 0.0


def test_multilabel_classifier_matches_the_plain_loop_and_selects_on_validation():
    # few training rows, label noise: the validation micro-F1 peaks before the last step
    x, y, masks = _multilabel_data(noise=1.5, seed=4)
    kw = dict(steps=400, eval_every=10)
    out = evaluation.node_multilabel_logistic_regression_runs(
        x, y, *masks, seeds=[2, 9], learning_rate=0.05, **kw
    )
    for k, seed in enumerate((2, 9)):
        (val, test, step), history = _multilabel_reference(x, y, masks, lr=0.05, seed=seed, **kw)
        assert out["best_step"][k] == step
        np.testing.assert_allclose(
            [out["val_micro_f1"][k], out["test_micro_f1"][k]], [val, test], atol=1e-6
        )
    assert min(out["best_step"]) < 400  # the selection is doing something here


def test_multilabel_classifier_learns_separable_labels():
    x, y, masks = _multilabel_data(noise=0.0, seed=1)
    out = evaluation.node_multilabel_logistic_regression_runs(x, y, *masks, seeds=[0], steps=500)
    assert out["test_micro_f1"][0] > 0.9


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(y=np.zeros((900,), np.int32)), r"`y` must be \[n, num_classes\] 0/1 labels"),
        (dict(y=np.full((900, 5), 2)), r"`y` must hold only 0 and 1, found 2 at \[0, 0\]"),
        (dict(y=np.zeros((900, 0))), r"`y` must have at least one class column, got shape"),
        (dict(seeds=[]), "`seeds` is empty"),
        (dict(val_mask=np.arange(900) % 10 < 3), "`train_mask` and `val_mask` overlap in 180"),
        (dict(normalize="max"), "normalize"),
    ],
)
def test_multilabel_classifier_errors(change, match):
    x, y, masks = _multilabel_data()
    kw = dict(zip(("train_mask", "val_mask", "test_mask"), masks, strict=True))
    kw.update(y=y, seeds=[0], normalize="l2")
    kw.update(change)
    with pytest.raises(ValueError, match="node_multilabel_logistic_regression_runs: .*" + match):
        evaluation.node_multilabel_logistic_regression_runs(x, steps=5, **kw)


# ------------------------------------------------------------------------ GRACE's windows


def _grace(name="grace", **hp):
    c = training.base_config("cora", name, optimizer="adam_l2")
    c.model.encoder_depth = 1
    c.model.encoder_width = c.model.head_width = c.model.embed_dim = 8
    c.method.update(sparse_layout="off", **hp)
    method = methods.get(name)(c)
    full = synthetic_ppi(scale=0.02, seed=0)
    ds = full.subgraph(full.train_mask)
    model = method.build(methods.DataSpec("node", 50, 121), nnx.Rngs(0))
    return method, model, graphs.node_graph(ds)


@pytest.mark.parametrize("name", ["grace", "grace_mmix"])
def test_grace_windows_score_each_window_on_its_own(name):
    hp = dict(mixing="mp", diversity=0.0) if name == "grace_mmix" else {}
    method, model, graph = _grace(name, windows=3, window_size=40, **hp)
    key = jax.random.key(5)
    loss, _ = method.loss(model, graph, key, {})
    # by hand: the same views, windows and mixing key, one nt_xent per window
    k_views, k_rest = jax.random.split(key)
    z1, z2, m1, _ = method.encode_views(model, graph, k_views)
    k_rest, k_windows = jax.random.split(k_rest)
    ids = np.asarray(jax.random.randint(k_windows, (3,), 0, graph.nodes.shape[0] - 40 + 1))
    if name == "grace_mmix":  # mp-mix over the whole graph's kept edges, before the windows
        edges = dict(senders=graph.senders, receivers=graph.receivers, edge_mask=m1)
        z1 = mixers.mp_mix(z1, *model.projections(), **edges)
    per_window = [
        losses.nt_xent(model.head(z1[s : s + 40]), model.head(z2[s : s + 40]), temperature=0.5)
        for s in ids
    ]
    np.testing.assert_allclose(float(loss), float(np.mean(per_window)), rtol=1e-5)


def test_grace_without_windows_is_the_whole_graph_loss():
    method, model, graph = _grace()
    key = jax.random.key(1)
    loss, _ = method.loss(model, graph, key, {})
    k_views, k_loss = jax.random.split(key)
    z1, z2, _, _ = method.encode_views(model, graph, k_views)
    want = method.contrastive_loss(model.head(z1), model.head(z2), k_loss)
    assert float(loss) == float(want)


@pytest.mark.parametrize("key, value", [("windows", -1), ("window_size", 0), ("window_size", -3)])
def test_grace_window_settings_are_checked(key, value):
    c = training.base_config("cora", "grace", optimizer="adam_l2")
    c.method[key] = value
    with pytest.raises(ValueError, match=f"config.method.{key} = {value!r}: expected an integer"):
        methods.get("grace")(c)


# -------------------------------------------------------------------- the inductive task


def _experiment(path, arg):
    spec = importlib.util.spec_from_file_location("cfg", REPO / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


@pytest.mark.parametrize(
    "path, arg, method",
    [
        ("experiments/grace/ppi.py", "quick", "grace"),
        ("experiments/mmix/grace_mp.py", "ppi,quick", "grace_mmix"),
    ],
)
def test_ppi_configs_pretrain_on_the_training_graphs_and_report_micro_f1(
    tmp_path, path, arg, method
):
    c = _experiment(path, arg)
    training.validate(c)
    assert (c.data.name, c.data.synthetic, c.eval.node_split) == ("ppi", True, "public")
    c.train.epochs = 2
    results = training.train_and_evaluate(c, str(tmp_path))
    assert results["method"] == method and results["steps"] == 2
    assert np.isfinite(results["final_loss"])
    assert 0.0 <= results["test_micro_f1"] <= 1.0 and "test_top1" not in results
    task = training.make_task(c, methods.get(method)(c), training.make_mesh(1))
    train_nodes = int(task.ds.train_mask.sum())
    assert task.graph.nodes.shape[0] == train_nodes < task.ds.num_nodes  # inductive
    assert task.eval_graph.nodes.shape[0] == task.ds.num_nodes
    assert "multi-label" in task.describe() and f"{train_nodes} training-graph" in task.describe()


def test_full_ppi_configs_follow_the_stated_setup():
    for path, arg in (("experiments/grace/ppi.py", None), ("experiments/mmix/grace_mp.py", "ppi")):
        c = _experiment(path, arg)
        training.validate(c)
        m = c.method
        assert (m.p_e1, m.p_e2, m.p_f1, m.p_f2) == (0.3, 0.4, 0.1, 0.0)
        assert (m.windows, m.window_size, c.train.epochs, c.optim.lr) == (4, 2000, 1000, 1e-3)
        assert (c.data.synthetic_scale, c.data.normalize_features) == (1.0, False)


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(node_split="random"), "config.eval.node_split = 'random': ppi is split by graph"),
        (dict(node_clustering=True), "config.eval.node_clustering = True: ppi's nodes have"),
    ],
)
def test_ppi_task_refuses_what_it_cannot_score(change, match):
    c = _experiment("experiments/grace/ppi.py", "quick")
    c.eval.update(change)
    with pytest.raises(training.ConfigError, match=match):
        training.make_task(c, methods.get("grace")(c), training.make_mesh(1))


def test_ppi_reads_its_files_when_not_synthetic(tmp_path):
    _write_ppi(tmp_path / "ppi", num_features=50, num_classes=121)
    c = _experiment("experiments/grace/ppi.py", "quick")
    c.data.update(synthetic=False, data_dir=str(tmp_path))
    c.method.window_size = 3
    task = training.make_task(c, methods.get("grace")(c), training.make_mesh(1))
    assert task.ds.name == "ppi" and task.graph.nodes.shape[0] == 5


def test_sweep_table_shows_micro_f1():
    table = training.format_table(
        {"r": {"method": "grace", "test_micro_f1": 0.5, "final_loss": 1.0, "pretrain_seconds": 2}}
    )
    assert "| r | grace | micro-F1 50.0 | - |" in table
