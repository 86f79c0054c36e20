"""Graph-level MVGRL and MVGRL + m-Mix: the two-view batches carry both views exactly, each
view's encoder equals a dense NumPy transcription (MVGRL's ``torch.bmm(adj, X W)``), the
losses are the compositions the docstrings state, and short runs train and evaluate."""

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcl import graphs, losses, methods, mixers, training
from jaxcl.configs import mmix_graph
from jaxcl.data import Graph, GraphDataset
from jaxcl.methods._mvgrl_graph import ADJACENCY, DIFFUSION

REPO = Path(__file__).parents[1]
DATA = REPO.parent / "shared" / "data"


def _toy(seed=0, count=6, f=3):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        n = 3 + k % 4
        upper = np.triu(rng.random((n, n)) < 0.5, 1)
        upper[np.arange(n - 1), np.arange(1, n)] = True  # a path: connected
        s, r = np.nonzero(upper | upper.T)
        out.append(Graph(s, r, rng.random((n, f)).astype(np.float32), k % 2))
    labels = np.array([g.label for g in out])
    return GraphDataset("toy", tuple(out), labels, 2, f)


def _dense_ppr(g: Graph, alpha=0.2):
    n = g.num_nodes
    a = np.zeros((n, n))
    a[g.receivers, g.senders] = 1.0
    a_hat = a + np.eye(n)
    d = np.diag(a_hat.sum(1) ** -0.5)
    return alpha * np.linalg.inv(np.eye(n) - (1 - alpha) * d @ a_hat @ d), d @ a_hat @ d


def test_two_view_dataset_carries_the_adjacency_and_the_exact_diffusion():
    ds = _toy()
    two, weights = methods.two_view_dataset(ds, alpha=0.2)
    assert [g.label for g in two.graphs] == list(ds.labels)
    for g, t, w in zip(ds.graphs, two.graphs, weights, strict=True):
        n = g.num_nodes
        s_dense, _ = _dense_ppr(g)
        adj = np.zeros((n, n))
        adj[g.receivers, g.senders] = 1
        got_s, got_a = np.zeros((n, n)), np.zeros((n, n))
        got_s[t.receivers, t.senders] = w[:, DIFFUSION]
        got_a[t.receivers, t.senders] = w[:, ADJACENCY]
        np.testing.assert_allclose(got_s, s_dense, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got_a, adj)
        np.testing.assert_array_equal(t.node_features, g.node_features)


def _config(name, **hp):
    c = training.base_config("mutag", name, optimizer="adam")
    c.model.encoder_depth = 2
    c.model.encoder_width = 8
    c.method.update(hp)
    return c


def _batch(method, ds):
    two, weights = method.graph_dataset(ds)
    budget = graphs.PaddingBudget(n_node=64, n_edge=512, n_graph=8)
    return graphs.batch_graphs(two.graphs, budget, edge_weights=weights)


def test_each_view_encoder_is_mvgrls_dense_gcn():
    """Per graph: PReLU(P X W + b) per layer with P the normalised adjacency or S; graph
    embedding = the per-layer sums, concatenated (MVGRL's GCN.forward)."""
    ds = _toy(1)
    method = methods.MVGRLGraph(_config("mvgrl_graph"))
    model = method.build(methods.DataSpec("graph", 3, 2), nnx.Rngs(0))
    batch = _batch(method, ds)
    real = np.asarray(graphs.padding_masks(batch).nodes)
    for encoder, which in ((model.adjacency, 1), (model.diffusion, 0)):
        nodes, pooled = encoder(batch)
        start = 0
        for k, g in enumerate(ds.graphs):
            s_dense, a_norm = _dense_ppr(g)
            p = (s_dense, a_norm)[which]
            h, sums = g.node_features.astype(np.float64), []
            for layer in encoder.layers:
                lin = layer.layers[0]
                w = np.asarray(lin.linear.kernel[...])
                b = np.asarray(lin.bias[...])
                slope = float(np.asarray(layer.prelu.negative_slope[...]))
                h = p @ (h @ w) + b
                h = np.where(h > 0, h, slope * h)
                sums.append(h.sum(0))
            n = g.num_nodes
            np.testing.assert_allclose(nodes[start : start + n], h, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(pooled[k], np.concatenate(sums), rtol=1e-4, atol=1e-5)
            start += n
        assert not np.asarray(nodes)[~real].any()  # padding rows are zero


def test_mvgrl_graph_loss_is_local_global_jsd_both_ways():
    ds = _toy(2)
    method = methods.MVGRLGraph(_config("mvgrl_graph"))
    model = method.build(methods.DataSpec("graph", 3, 2), nnx.Rngs(0))
    batch = _batch(method, ds)
    loss, _ = method.loss(model, batch, jax.random.key(0), {})
    real = graphs.padding_masks(batch)
    ids = graphs.node_graph_ids(batch)
    (na, ga), (nb, gb) = model.adjacency(batch), model.diffusion(batch)
    kw = dict(node_mask=real.nodes, graph_mask=real.graphs)
    want = losses.local_global_jsd(
        model.node_head(na), model.graph_head(gb), ids, **kw
    ) + losses.local_global_jsd(model.node_head(nb), model.graph_head(ga), ids, **kw)
    np.testing.assert_allclose(loss, want, rtol=1e-6)
    feats = method.features(model, batch)
    np.testing.assert_allclose(feats, model.graph_head(ga) + model.graph_head(gb), rtol=1e-6)


def _official_local_global(l_enc, g_enc, counts, max_nodes):
    """MVGRL's ``local_global_loss_`` ('JSD') transcribed: rows ``idx * max_nodes + m`` and
    beyond are masked against their own graph only."""
    num_graphs, num_nodes = g_enc.shape[0], l_enc.shape[0]
    batch = np.repeat(np.arange(num_graphs), max_nodes)
    pos_mask, neg_mask = np.zeros((num_nodes, num_graphs)), np.ones((num_nodes, num_graphs))
    pos_mask[np.arange(num_nodes), batch], neg_mask[np.arange(num_nodes), batch] = 1.0, 0.0
    msk = np.ones((num_nodes, num_graphs))
    for idx, m in enumerate(counts):
        msk[idx * max_nodes + m : idx * max_nodes + max_nodes, idx] = 0.0
    res = l_enc @ g_enc.T * msk
    sp = lambda x: np.logaddexp(0.0, x)  # noqa: E731
    e_pos = (np.log(2) - sp(-(res * pos_mask))).sum() / num_nodes
    q = res * neg_mask
    e_neg = (sp(-q) + q - np.log(2)).sum() / (num_nodes * (num_graphs - 1))
    return e_neg - e_pos


def test_dense_padding_is_mvgrls_code_on_its_padded_dense_batches():
    """dense_padding=True: readout, loss and features equal MVGRL's code run on dense batches
    with every graph padded by zero rows to the data set's largest graph (biases made non-zero,
    so that the padded rows' PReLU(b) matters); without the option the loss differs."""
    ds = _toy(4)
    method = methods.MVGRLGraph(_config("mvgrl_graph", dense_padding=True))
    model = method.build(methods.DataSpec("graph", 3, 2), nnx.Rngs(0))
    rng = np.random.default_rng(0)
    for encoder in (model.adjacency, model.diffusion):
        for layer in encoder.layers:
            bias = layer.layers[0].bias
            bias[...] = jnp.asarray(rng.normal(size=bias.shape), jnp.float32)
    batch = _batch(method, ds)
    big = max(g.num_nodes for g in ds.graphs)
    assert method.max_nodes == big and len({g.num_nodes for g in ds.graphs}) > 1

    def dense_view(encoder, which):  # [graphs, big, width] last states, [graphs, sum widths]
        states, readouts = [], []
        for g in ds.graphs:
            n = g.num_nodes
            p = np.zeros((big, big))
            p[:n, :n] = _dense_ppr(g)[which]
            h = np.zeros((big, g.node_features.shape[1]))
            h[:n] = g.node_features
            sums = []
            for layer in encoder.layers:
                lin = layer.layers[0]
                h = p @ (h @ np.asarray(lin.linear.kernel[...])) + np.asarray(lin.bias[...])
                h = np.where(h > 0, h, float(np.asarray(layer.prelu.negative_slope[...])) * h)
                sums.append(h.sum(0))
            states.append(h)
            readouts.append(np.concatenate(sums))
        return np.stack(states), np.stack(readouts)

    (la, ga), (lb, gb) = dense_view(model.adjacency, 1), dense_view(model.diffusion, 0)
    head = lambda f, x: np.asarray(f(jnp.asarray(x, jnp.float32)), np.float64)  # noqa: E731
    counts = [g.num_nodes for g in ds.graphs]
    want = _official_local_global(
        head(model.node_head, la.reshape(-1, la.shape[-1])), head(model.graph_head, gb), counts, big
    ) + _official_local_global(
        head(model.node_head, lb.reshape(-1, lb.shape[-1])), head(model.graph_head, ga), counts, big
    )
    loss, _ = method.loss(model, batch, jax.random.key(0), {})
    np.testing.assert_allclose(loss, want, rtol=1e-4)
    got = np.asarray(method.features(model, batch))[: len(ds.graphs)]
    feats = head(model.graph_head, ga) + head(model.graph_head, gb)
    np.testing.assert_allclose(got, feats, rtol=1e-4, atol=1e-4)
    method.hp.dense_padding = False
    plain, _ = method.loss(model, batch, jax.random.key(0), {})
    assert abs(float(plain) - float(want)) > 1e-3
    unset = methods.MVGRLGraph(_config("mvgrl_graph", dense_padding=True))
    with pytest.raises(ValueError, match="needs the data set's largest graph"):
        unset.loss(model, batch, jax.random.key(0), {})


@pytest.mark.parametrize("objective", ["both", "node", "graph"])
def test_mmix_graph_loss_is_eq_9_with_neighbour_mixing(objective):
    ds = _toy(3)
    diversity = 0.0 if objective == "graph" else 0.5  # J_graph alone: no J_node to hold L_div
    method = methods.MVGRLGraphMix(
        _config("mvgrl_graph_mmix", mixing="mp", diversity=diversity, objective=objective)
    )
    model = method.build(methods.DataSpec("graph", 3, 2), nnx.Rngs(0))
    batch = _batch(method, ds)
    loss, metrics = method.loss(model, batch, jax.random.key(0), {})
    real = graphs.padding_masks(batch)
    (za, ha), (zb, hb) = model.adjacency(batch), model.diffusion(batch)
    p_m, p_n = model.mix.p_m.kernel[...], model.mix.p_n.kernel[...]
    # neighbours only: the adjacency edges, never the diffusion's extra pairs
    adj_edges = np.asarray(batch.edges[:, ADJACENCY] > 0)
    hard = mixers.mp_mix(
        za,
        p_m,
        p_n,
        senders=np.asarray(batch.senders)[adj_edges],
        receivers=np.asarray(batch.receivers)[adj_edges],
        where=real.nodes,
    )
    j_node = losses.mmix_node_loss_per_graph(
        model.mix.g(hard),
        zb,
        graphs.node_graph_ids(batch),
        num_graphs=8,
        node_mask=real.nodes,
    )
    pool = lambda h: graphs.pool_nodes(batch, h, node_mask=real.nodes)  # noqa: E731
    j_graph = losses.mmix_graph_loss(pool(model.mix.g(hard)), pool(zb), where=real.graphs)
    # Eq. 6 inside each graph's J_node (Eq. 9): each graph's mean, then the mean over graphs
    q, k = (np.asarray(losses.l2_normalize(za @ p)) for p in (p_m, p_n))
    d = -np.sum((q - k) ** 2, axis=1)
    ids, nodes = np.asarray(graphs.node_graph_ids(batch)), np.asarray(real.nodes)
    div = np.mean([d[nodes & (ids == g)].mean() for g in np.unique(ids[nodes])])
    assert abs(div - d[nodes].mean()) > 1e-4  # the graphs' sizes differ: not the node mean
    want = {"both": j_node + j_graph, "node": j_node, "graph": j_graph}[objective]
    want = want + diversity * div
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    assert ("node_contrast" in metrics) == (objective != "graph")
    # evaluation: the attentive branch's and view b's node sums, or MVGRL's layer sums
    want = pool(model.mix.g(hard)) + pool(zb)
    np.testing.assert_allclose(method.features(model, batch), want, rtol=1e-5, atol=1e-6)
    method.hp.eval_features = "encoder"
    np.testing.assert_allclose(method.features(model, batch), ha + hb, rtol=1e-6)


@pytest.mark.parametrize(
    ("name", "hp"),
    [
        ("mvgrl_graph", {}),
        ("mvgrl_graph_mmix", dict(mixing="mp", diversity=0.5)),
        ("mvgrl_graph_mmix", dict(mixing="mo", diversity=0.0)),
    ],
)
def test_sparse_layout_on_and_off_give_the_same_loss_gradients_and_features(name, hp):
    """``sparse_layout='on'``: the GCNs and the mixing through jitted slab patterns; ``'off'``:
    per-edge gathers and segment sums. One function either way."""
    ds = _toy(5)
    results = {}
    for layout in ("on", "off"):
        method = methods.get(name)(_config(name, sparse_layout=layout, **hp))
        assert method.slabs == (layout == "on")
        model = method.build(methods.DataSpec("graph", 3, 2), nnx.Rngs(0))
        graphdef, params = nnx.split(model)
        batch = _batch(method, ds)

        def loss(params, batch, method=method, graphdef=graphdef):
            return method.loss(nnx.merge(graphdef, params), batch, jax.random.key(1), {})[0]

        value, grads = jax.jit(jax.value_and_grad(loss))(params, batch)
        results[layout] = value, grads, method.features(model, batch)
    (v_on, g_on, f_on), (v_off, g_off, f_off) = results["on"], results["off"]
    np.testing.assert_allclose(v_on, v_off, rtol=1e-5)
    for a, b in zip(jax.tree.leaves(g_on), jax.tree.leaves(g_off), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * max(np.abs(b).max(), 1.0))
    np.testing.assert_allclose(f_on, f_off, rtol=1e-5, atol=1e-5)
    auto = methods.get(name)(_config(name, **hp))
    assert auto.slabs == (jax.default_backend() == "cpu")


def test_stacked_batches_are_refused_with_a_clear_message():
    ds = _toy(4)
    method = methods.MVGRLGraphMix(_config("mvgrl_graph_mmix"))
    model = method.build(methods.DataSpec("graph", 3, 2), nnx.Rngs(0))
    batch = _batch(method, ds)
    stacked = jax.tree.map(lambda x: jnp.stack([x, x]), batch)
    with pytest.raises(ValueError, match="one device for now"):
        method.loss(model, stacked, jax.random.key(0), {})


@pytest.mark.parametrize(
    ("hp", "message"),
    [
        (dict(objective="nodes"), r"objective = 'nodes'"),
        (dict(mixing="mo", diversity=1.0), r"diversity = 1.0.*mixing='mo'"),
        (dict(alpha=0.0), r"alpha = 0.0"),
        (dict(sparse_layout="slabs"), r"sparse_layout = 'slabs'"),
        (dict(objective="graph", diversity=1.0), r"diversity = 1.0.*objective='graph'"),
    ],
)
def test_bad_settings_are_named(hp, message):
    with pytest.raises(ValueError, match=message):
        methods.MVGRLGraphMix(_config("mvgrl_graph_mmix", **hp))


def _experiment(row, arg):
    path = REPO / "experiments" / "mmix" / f"graph_{row}.py"
    spec = importlib.util.spec_from_file_location("cfg", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


@pytest.mark.parametrize("row", sorted(mmix_graph.ROWS))
def test_every_graph_row_config_validates(row):
    for arg in mmix_graph.DATASETS:
        for variant in ("", ",cpu", ",quick"):
            c = _experiment(row, arg + variant)
            training.validate(c)
            methods.get(c.method.name)(c)
    c = _experiment(row, "imdb_binary")
    assert c.data.node_features == "degree" and c.eval.graph_protocol == "svm"
    # MVGRL's graph/dataset.py: atom labels and degrees side by side where a set has labels
    assert _experiment(row, "mutag").data.node_features == "tags+degree"
    assert _experiment(row, "ptc_mr").data.node_features == "tags+degree"
    if row != "mvgrl":
        assert (c.model.encoder_depth, c.optim.lr, c.method.temperature) == (1, 3e-4, 1.0)


@pytest.mark.parametrize("row,data", [("mvgrl", "mutag"), ("mp", "ptc_mr")])
def test_short_run_trains_and_evaluates(tmp_path, row, data):
    """MUTAG from TU's files; PTC_MR from GIN's PTC without its hydrogens, then the degrees
    of what is left appended (node_features 'tags+degree')."""
    if not (DATA / "tu_raw").is_dir():
        pytest.fail(f"benchmark data not found at {DATA} (../shared/data beside the checkout)")
    c = _experiment(row, f"{data},quick")
    c.data.data_dir = str(DATA)
    c.train.epochs = 1
    results = training.train_and_evaluate(c, str(tmp_path))
    assert np.isfinite(results["final_loss"]) and 0.4 < results["test_top1"] <= 1.0


def test_reddit_binary_rows_run_on_synthetic_graphs_unless_told_otherwise():
    """No REDDIT-BINARY files here: every row reads synthetic_tu's graphs, at full size for
    the paper's setup, a fifth with cpu, a twentieth with quick; one-hot degrees uncapped."""
    for row in mmix_graph.ROWS:
        for variant, scale in (("", 1.0), (",cpu", 0.2), (",quick", 0.05)):
            c = _experiment(row, "reddit_binary" + variant)
            assert (c.data.synthetic, c.data.synthetic_scale) == (True, scale)
            assert c.data.node_features == "degree" and c.data.drop_node_tag == -1
    paper = _experiment("mp", "reddit_binary")
    assert (paper.train.batch_size, paper.train.epochs, paper.repeats) == (256, 200, 5)
    assert not _experiment("mp", "imdb_binary").data.synthetic
    assert "REDDITBINARY" in mmix_graph.__doc__ and "88.7 ± 0.4" in mmix_graph.__doc__


@pytest.mark.parametrize("row", ["mvgrl", "mp"])
def test_short_run_on_synthetic_reddit_binary_trains_and_evaluates(tmp_path, row):
    c = _experiment(row, "reddit_binary,quick")
    results = training.train_and_evaluate(c, str(tmp_path))
    assert np.isfinite(results["final_loss"]) and 0.0 <= results["test_top1"] <= 1.0
    assert results["evaluated_epochs"] == [c.train.epochs]


def test_the_accuracy_curve_is_reported_beside_the_result_not_in_it(tmp_path, monkeypatch):
    """eval.curve_every_epochs = 2 over 3 epochs: scored after epochs 1 and 3 (m-Mix's
    script's cadence, its 0-based 0, 10, ...); test_top1 is still the last epoch's alone, the
    curve and its maximum come beside it. With folds_per_epoch each evaluation gets its own
    outer folds (without it, the seed's folds every time)."""
    seeds = []
    svm = training._graph_task.evaluation.svm_kfold_accuracy

    def recording(x, y, *, seed, **kw):
        seeds.append(seed)
        return svm(x, y, seed=seed, **kw)

    monkeypatch.setattr(training._graph_task.evaluation, "svm_kfold_accuracy", recording)
    c = _experiment("mp", "reddit_binary,quick")
    c.train.epochs = 3
    c.eval.curve_every_epochs = 2
    c.eval.folds_per_epoch = True
    r = training.train_and_evaluate(c, str(tmp_path / "a"))
    assert r["curve_epochs"] == [1, 3] and len(r["curve_top1"]) == 2
    assert r["evaluated_epochs"] == [3] and r["per_epoch_top1"] == [r["curve_top1"][1]]
    assert r["test_top1"] == r["curve_top1"][1]
    best = int(np.argmax(r["curve_top1"]))
    assert r["curve_max_top1"] == r["curve_top1"][best]
    assert r["curve_max_epoch"] == r["curve_epochs"][best]
    assert len(seeds) == 2 and seeds[0] != seeds[1] and c.seed not in seeds
    c.eval.folds_per_epoch = False
    r2 = training.train_and_evaluate(c, str(tmp_path / "b"))
    assert seeds[2:] == [c.seed, c.seed] and r2["curve_epochs"] == [1, 3]


def test_the_curve_is_off_by_default_and_its_setting_is_checked():
    c = _experiment("mp", "mutag,cpu")
    assert c.eval.curve_every_epochs == 0 and c.eval.folds_per_epoch is False
    c.eval.curve_every_epochs = -1
    with pytest.raises(training.ConfigError, match=r"eval.curve_every_epochs"):
        training.validate(c)


def _graph_curves(name="graph_curves"):
    path = REPO / "experiments" / "mmix" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_graph_curves_tables_the_last_epoch_beside_the_curves_maximum(tmp_path, capsys):
    """Two pretrainings of mp-mix in seed_<k>/ with a summary above them (repeats = 3 runs of
    jaxcl.main), one of MVGRL on its own: the last epoch is the row's number, the curve's
    maximum is beside it."""

    def run(workdir, seed, curve, data="mutag"):
        workdir.mkdir(parents=True)
        (workdir / "config.json").write_text(
            json.dumps({"seed": seed, "data": {"name": data}, "train": {"epochs": 21}})
        )
        best = int(np.argmax(curve))
        return {
            "test_top1": curve[-1], "curve_epochs": [1, 11, 21], "curve_top1": curve,
            "curve_max_top1": curve[best], "curve_max_epoch": [1, 11, 21][best],
        }  # fmt: skip

    mp = tmp_path / "mp"
    runs = [run(mp / "seed_3", 3, [0.9, 0.92, 0.86]), run(mp / "seed_4", 4, [0.88, 0.85, 0.84])]
    (mp / "results.json").write_text(json.dumps({"test_top1": 0.85, "runs": runs}))
    mvgrl = tmp_path / "mvgrl"  # repeats = 1: the run's own results, in the workdir itself
    one = run(mvgrl, 0, [0.8, 0.83, 0.82])
    (mvgrl / "results.json").write_text(json.dumps(one))
    curves = _graph_curves()
    out = tmp_path / "out"
    curves.main(["--data", "mutag", "--runs", f"mp={mp}", f"mvgrl={mvgrl}", "--out", str(out)])
    rows = json.loads((out / "graph_curves_mutag.json").read_text())["rows"]
    assert list(rows) == ["mvgrl", "mp"]  # the paper's order
    assert rows["mp"]["seeds"] == [3, 4] and rows["mp"]["last"] == pytest.approx([86.0, 84.0])
    assert rows["mp"]["max"] == pytest.approx([92.0, 88.0]) and rows["mp"]["max_epoch"] == [11, 1]
    assert rows["mvgrl"]["seeds"] == [0] and rows["mvgrl"]["max"] == pytest.approx([83.0])
    printed = capsys.readouterr().out
    assert "| + mp-mix | 92.0 ± 0.5 | 85.0 ± 1.4 | 90.0 ± 2.8 | 11, 1 | 89.0 ± 1.4 |" in printed
    assert (out / "graph_curves_mutag.png").stat().st_size > 5_000
    with pytest.raises(SystemExit, match="a run of mutag, not ptc_mr"):
        curves.main(["--data", "ptc_mr", "--runs", f"mp={mp}", "--out", str(out)])
    with pytest.raises(SystemExit, match="given twice"):
        curves.main(["--data", "mutag", "--runs", f"mp={mp}", f"mp={mp}", "--out", str(out)])
    (mvgrl / "results.json").write_text(json.dumps({"test_top1": 0.8}))
    with pytest.raises(SystemExit, match="carry no curve"):
        curves.main(["--data", "mutag", "--runs", f"mvgrl={mvgrl}", "--out", str(out)])


def test_fold_draws_average_the_protocol_over_consecutive_fold_seeds(tmp_path, monkeypatch):
    """eval.fold_draws = 3: each evaluation cross-validates on fold seeds s, s + 1, s + 2 (s
    its own) and reports the mean of the three estimates, their sample std, and the std over
    all their folds."""
    calls = []
    svm = training._graph_task.evaluation.svm_kfold_accuracy

    def recording(x, y, *, seed, **kw):
        calls.append((seed, svm(x, y, seed=seed, **kw)))
        return calls[-1][1]

    monkeypatch.setattr(training._graph_task.evaluation, "svm_kfold_accuracy", recording)
    c = _experiment("mp", "reddit_binary,quick")
    c.seed = 4
    c.train.epochs = 1
    c.eval.fold_draws = 3
    r = training.train_and_evaluate(c, str(tmp_path))
    assert [s for s, _ in calls] == [4, 5, 6]
    means = [out["mean"] for _, out in calls]
    assert len(set(means)) > 1, "three draws of the folds should not all agree"
    assert r["test_top1"] == pytest.approx(np.mean(means), abs=1e-12)
    entry = json.loads((tmp_path / "eval_history.json").read_text())[-1]
    assert entry["cv_top1_draw_std"] == pytest.approx(np.std(means, ddof=1), abs=1e-12)
    folds = np.concatenate([out["per_fold"] for _, out in calls])
    assert entry["cv_top1_std"] == pytest.approx(np.std(folds), abs=1e-12)
    # each draw's estimate, in the history and in the results (for fold_draws_table.py)
    assert entry["cv_top1_draws"] == pytest.approx(means, abs=1e-12)
    assert r["per_epoch_fold_draw_top1"] == [entry["cv_top1_draws"]]
    c.eval.fold_draws = 0
    with pytest.raises(training.ConfigError, match=r"eval.fold_draws = 0"):
        training.validate(c)


def test_fold_draws_table_averages_each_pretrainings_draws_then_over_pretrainings(tmp_path):
    """rescore_svm.py JSONs of two rows (or a run's results.json): per pretraining the mean of
    its draws, then mean and sample std over pretrainings; rows without draws are named."""

    def rescored(path, draws):
        rows = [
            {"workdir": f"w{k}", "liblinear": {"over_fold_seeds": {"means": d}}}
            for k, d in enumerate(draws)
        ]
        path.write_text(json.dumps({"rows": rows}))
        return str(path)

    table = _graph_curves("fold_draws_table")
    a = rescored(tmp_path / "a.json", [[0.80, 0.90], [0.70, 0.80], [0.90, 0.90]])
    b = rescored(tmp_path / "b.json", [[0.60, 0.62, 0.64]])
    out = tmp_path / "out"
    r = table.main(["--data", "mutag", "--rows", f"mvgrl={a}", f"mp={b}", "--out", str(out)])
    mvgrl = r["rows"]["mvgrl"]
    assert mvgrl["per_pretraining"] == pytest.approx([85.0, 75.0, 90.0])
    assert mvgrl["mean"] == pytest.approx(250 / 3)
    assert mvgrl["std"] == pytest.approx(np.std([85.0, 75.0, 90.0], ddof=1))
    assert mvgrl["single_draw_range"] == pytest.approx([70.0, 90.0])
    assert tuple(mvgrl["paper"]) == mmix_graph.PAPER_ACCURACY["mutag"]["mvgrl"]
    assert r["rows"]["mp"]["std"] == 0.0 and r["rows"]["mp"]["mean"] == pytest.approx(62.0)
    assert (out / "fold_draws_mutag.json").exists() and (out / "fold_draws_mutag.png").exists()
    # a run's own results.json (eval.fold_draws > 1): its pretrainings' draws under "runs"
    run = tmp_path / "run.json"
    run.write_text(
        json.dumps({"runs": [{"per_epoch_fold_draw_top1": [d]} for d in ([0.8, 0.9], [0.7, 0.8])]})
    )
    from_run = table.main(["--data", "mutag", "--rows", f"mo={run}", "--out", str(out)])
    assert from_run["rows"]["mo"]["per_pretraining"] == pytest.approx([85.0, 75.0])
    assert from_run["rows"]["mo"]["solver"] is None  # no config.json beside it: not known
    # A run's rows are labelled with the solver its config used, not --solver's default.
    for k in (0, 1):
        (tmp_path / f"seed_{k}").mkdir()
        (tmp_path / f"seed_{k}" / "config.json").write_text(
            json.dumps({"eval": {"svm_solver": "newton"}})
        )
    mixed = table.main(
        ["--data", "mutag", "--rows", f"mo={run}", f"mp={b}", "--out", str(out), "--tag", "_s"]
    )
    assert mixed["rows"]["mo"]["solver"] == "newton"
    assert mixed["rows"]["mp"]["solver"] == "liblinear"
    assert mixed["solver"] == "per row"
    # variants of one row side by side, each labelled and against the row's paper number
    rows = [f"mp/width 32={run}", f"mp/width 512={b}", "--tag", "_w"]
    variants = table.main(["--data", "mutag", "--rows", *rows, "--out", str(out)])["rows"]
    assert [v["label"] for v in variants.values()] == [
        "+ mp-mix (width 32)",
        "+ mp-mix (width 512)",
    ]
    assert variants["mp/width 512"]["paper"] == variants["mp/width 32"]["paper"]
    assert (out / "fold_draws_mutag_w.png").exists()
    with pytest.raises(SystemExit, match="once each"):
        table.main(["--data", "mutag", "--rows", f"mp={b}", f"mp={b}", "--out", str(out)])
    lone = tmp_path / "lone.json"
    lone.write_text(json.dumps({"runs": [{"test_top1": 0.8}]}))
    with pytest.raises(SystemExit, match="has no fold draws"):
        table.main(["--data", "mutag", "--rows", f"mo={lone}", "--out", str(out)])
    single = tmp_path / "single.json"
    single.write_text(json.dumps({"rows": [{"workdir": "w", "liblinear": {"mean": 0.8}}]}))
    with pytest.raises(SystemExit, match="has no liblinear fold draws"):
        table.main(["--data", "mutag", "--rows", f"mp={single}", "--out", str(out)])
    with pytest.raises(SystemExit, match="expected ROW=JSON"):
        table.main(["--data", "mutag", "--rows", f"gin={a}", "--out", str(out)])


def test_fold_draw_seeds_are_consecutive_and_stay_below_two_to_the_32():
    """A per-epoch fold seed (SeedSequence's uint32) may sit just below 2**32: its draws wrap
    to 0, 1, ... rather than reach a seed liblinear rejects."""
    from jaxcl.training._graph_task import draw_seeds

    assert draw_seeds(4, 3) == [4, 5, 6]
    assert draw_seeds(2**32 - 2, 4) == [2**32 - 2, 2**32 - 1, 0, 1]
    assert draw_seeds(7, 1) == [7]
