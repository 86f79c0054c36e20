"""GRACE and MVGRL: losses against NumPy transcriptions of the official code, views, MVGRL's
discriminator and corruption, the optimiser GRACE trains with, configs, and short runs on Cora."""

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcl import graphs, losses, methods, models, optim, training
from jaxcl.data import NodeDataset, load_planetoid
from jaxcl.methods._mvgrl import MVGRLInputs, corrupt, mvgrl_logits
from jaxcl.methods._windows import node_windows

REPO = Path(__file__).parents[1]
DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="module")
def data_dir() -> Path:
    if not (DATA / "planetoid").is_dir():
        pytest.fail(f"benchmark data not found at {DATA} (../shared/data beside the checkout)")
    return DATA


def _config(name, *, width=16, **hp):
    c = training.base_config("cora", name, optimizer="adam_l2")
    c.data.normalize_features = True
    c.model.encoder_depth = 1 if name == "mvgrl" else 2
    c.model.encoder_width = width
    if name != "mvgrl":
        c.model.head_width = c.model.embed_dim = width
        c.model.head_depth = 2
    c.method.update(hp)
    return c


def _spec(num_features, num_classes=3):
    return methods.DataSpec("node", num_features, num_classes)


def _toy_dataset(rng, num_nodes=30, num_features=12, p=0.2) -> NodeDataset:
    upper = np.triu(rng.random((num_nodes, num_nodes)) < p, 1)
    s, r = np.nonzero(upper | upper.T)
    x = rng.random((num_nodes, num_features)).astype(np.float32)
    m = np.zeros(num_nodes, bool)
    return NodeDataset("toy", s, r, x, rng.integers(0, 3, num_nodes), 3, m, m, m)


# ------------------------------------------------------------------------------------------
# GRACE


def _np_grace_loss(z1, z2, fc1, fc2, tau):
    """CRIPAC-DIG/GRACE model.py: ``Model.loss`` (projection, ``semi_loss`` both ways)."""

    def elu(x):
        return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))

    def projection(z):
        return elu(z @ fc1["kernel"] + fc1["bias"]) @ fc2["kernel"] + fc2["bias"]

    def sim(a, b):
        a = a / np.linalg.norm(a, axis=1, keepdims=True)
        b = b / np.linalg.norm(b, axis=1, keepdims=True)
        return a @ b.T

    def semi_loss(a, b):
        refl = np.exp(sim(a, a) / tau)
        between = np.exp(sim(a, b) / tau)
        return -np.log(np.diag(between) / (refl.sum(1) + between.sum(1) - np.diag(refl)))

    h1, h2 = projection(z1), projection(z2)
    return np.mean(0.5 * (semi_loss(h1, h2) + semi_loss(h2, h1)))


@pytest.mark.parametrize("tau", [0.5, 0.9])
def test_grace_loss_matches_numpy_transcription_of_grace_semi_loss(tau):
    method = methods.GRACE(_config("grace", temperature=tau))
    model = method.build(_spec(10), rngs=nnx.Rngs(0))
    rng = np.random.default_rng(0)
    z1, z2 = rng.normal(size=(2, 50, 16)).astype(np.float32)
    params = [
        {"kernel": np.asarray(layer.kernel[...], np.float64), "bias": np.asarray(layer.bias[...])}
        for layer in model.head.layers
    ]

    @jax.jit
    def loss(z1, z2):
        return method.contrastive_loss(model.head(z1), model.head(z2), jax.random.key(0))

    expected = _np_grace_loss(z1.astype(np.float64), z2.astype(np.float64), *params, tau)
    np.testing.assert_allclose(loss(z1, z2), expected, rtol=2e-5)


def test_grace_head_is_torch_initialised_elu_mlp():
    model = methods.GRACE(_config("grace", width=64)).build(_spec(10), rngs=nnx.Rngs(0))
    fc1, fc2 = model.head.layers
    assert fc1.kernel.shape == (64, 64) and fc2.kernel.shape == (64, 64)
    bound = 1 / np.sqrt(64)
    for p in (fc1.kernel[...], fc1.bias[...]):
        assert np.abs(p).max() <= bound and np.abs(p).max() > 0.9 * bound
    # ELU between the layers, nothing after the last one.
    z = jnp.asarray(np.random.default_rng(0).normal(size=(5, 64)), jnp.float32)
    ref = jax.nn.elu(fc1(z)) @ fc2.kernel[...] + fc2.bias[...]
    np.testing.assert_allclose(model.head(z), ref, rtol=1e-5, atol=1e-6)


def test_grace_views_drop_edges_and_mask_columns_at_their_rates(data_dir):
    ds = load_planetoid(data_dir / "planetoid", "cora")
    graph = graphs.node_graph(ds)
    method = methods.GRACE(_config("grace", p_e1=0.2, p_e2=0.5, p_f1=0.0, p_f2=0.3))
    (x1, m1), (x2, m2) = method.views(graph, jax.random.key(3))
    x = np.asarray(graph.nodes)
    np.testing.assert_array_equal(x1, x)  # p_f1 = 0
    assert m1.dtype == bool and m1.shape == graph.senders.shape
    assert abs(1 - m1.mean() - 0.2) < 0.02 and abs(1 - m2.mean() - 0.5) < 0.02
    # Directions dropped independently (PyG's dropout_adj): about 2 p (1 - p) of the
    # undirected pairs keep exactly one direction.
    s, r = np.asarray(graph.senders), np.asarray(graph.receivers)
    index = {(a, b): i for i, (a, b) in enumerate(zip(s, r, strict=True))}
    reverse = np.array([index[(b, a)] for a, b in zip(s, r, strict=True)])
    one_way = np.mean(np.asarray(m2) != np.asarray(m2)[reverse])
    assert abs(one_way - 0.5) < 0.03
    # Feature masking zeroes whole columns, the same for every node, about p_f2 of them.
    x2 = np.asarray(x2)
    masked = ~np.any(x2 != 0, axis=0) & np.any(x != 0, axis=0)
    assert abs(masked.mean() - 0.3) < 0.05
    np.testing.assert_array_equal(x2[:, ~masked], x[:, ~masked])
    # The two views are independent draws, and a new key gives new views.
    (_, m1b), _ = method.views(graph, jax.random.key(4))
    assert np.mean(np.asarray(m1) != np.asarray(m1b)) > 0.2


def test_grace_loss_encodes_the_two_views():
    ds = _toy_dataset(np.random.default_rng(0), num_nodes=40)
    graph = graphs.node_graph(ds)
    clean = methods.GRACE(_config("grace", p_e1=0.0, p_e2=0.0, p_f1=0.0, p_f2=0.0))
    model = clean.build(_spec(ds.num_features, ds.num_classes), rngs=nnx.Rngs(0))
    h = model(graph)
    loss, _ = clean.loss(model, graph, jax.random.key(0), {})
    np.testing.assert_allclose(loss, losses.nt_xent(h, h, temperature=0.5), rtol=1e-6)
    noisy = methods.GRACE(_config("grace", p_e1=0.3, p_e2=0.5, p_f1=0.2, p_f2=0.4))
    key = jax.random.key(1)
    (x1, m1), (x2, m2) = noisy.views(graph, jax.random.split(key)[0])
    h1 = model.head(model.encoder(graph._replace(nodes=x1), edge_mask=m1))
    h2 = model.head(model.encoder(graph._replace(nodes=x2), edge_mask=m2))
    want = losses.nt_xent(h1, h2, temperature=0.5)
    np.testing.assert_allclose(noisy.loss(model, graph, key, {})[0], want, rtol=1e-6)
    assert abs(float(want) - float(loss)) > 1e-4


def test_esco_grace_with_exact_kernel_and_lam_half_over_tau_is_symmetric_infonce():
    tau = 0.5
    cfg = _config(
        "grace_esco", rf_method="exact", lam=1 / (2 * tau), temperature=tau, esco_negatives="cross"
    )
    method = methods.GRACEESCo(cfg)
    rng = np.random.default_rng(1)
    h1, h2 = rng.normal(size=(2, 40, 8)).astype(np.float32)
    got = method.contrastive_loss(h1, h2, jax.random.key(0))
    want = losses.infonce(h1, h2, temperature=tau, symmetric=True)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    rff = methods.GRACEESCo(_config("grace_esco", rf_method="rff", num_features=256))
    assert np.isfinite(float(rff.contrastive_loss(h1, h2, jax.random.key(0))))
    # with GRACE's own negative set (both views, the anchor left out; the default): GRACE's
    cfg = _config("grace_esco", rf_method="exact", lam=1 / (2 * tau), temperature=tau)
    assert cfg.method.esco_negatives == "both"
    both = methods.GRACEESCo(cfg).contrastive_loss(h1, h2, jax.random.key(0))
    grace = methods.GRACE(_config("grace", temperature=tau)).contrastive_loss(h1, h2, None)
    np.testing.assert_allclose(both, grace, rtol=1e-5)


@pytest.mark.parametrize(
    "key, value",
    [("activation", "tanh"), ("esco_negatives", "both_ways"), ("rf_method", "fast"), ("p_e2", 1.5)],
)
def test_grace_rejects_bad_hyperparameters(key, value):
    with pytest.raises(ValueError, match=f"config.method.{key}"):
        methods.GRACEESCo(_config("grace_esco", **{key: value}))


# ------------------------------------------------------------------------------------------
# MVGRL


def test_mvgrl_dense_diffusion_is_the_exact_ppr_matrix():
    ds = _toy_dataset(np.random.default_rng(0))
    method = methods.MVGRL(_config("mvgrl"))
    inputs = method.node_inputs(ds, graphs.node_graph(ds))
    assert isinstance(inputs, MVGRLInputs)
    want = graphs.ppr_matrix(ds.senders, ds.receivers, ds.num_nodes, alpha=0.2)
    np.testing.assert_allclose(inputs.diffusion, want, rtol=1e-5, atol=1e-7)


def _mvgrl_citeseer_view(adjacency, alpha=0.2):
    """MVGRL's node/dataset.py Citeseer branch on a dense 0/1 adjacency, with NumPy and
    scikit-learn: the threshold of 1e-5 .. 1e-2 whose kept entries per node come closest to
    the mean degree, then MinMaxScaler over the columns."""
    from sklearn.preprocessing import MinMaxScaler

    diff = _dense_ppr(adjacency, alpha)
    n = adjacency.shape[0]
    epsilons = [1e-5, 1e-4, 1e-3, 1e-2]
    degree = adjacency.sum() / n
    eps = epsilons[int(np.argmin([abs(degree - (diff >= e).sum() / n) for e in epsilons]))]
    diff = np.where(diff < eps, 0.0, diff)
    return MinMaxScaler().fit_transform(diff), eps


def _dense_ppr(adjacency, alpha):
    a = adjacency + np.eye(adjacency.shape[0])
    d = np.diag(a.sum(1) ** -0.5)
    return alpha * np.linalg.inv(np.eye(a.shape[0]) - (1 - alpha) * d @ a @ d)


@pytest.mark.parametrize("p", [0.05, 0.2])
def test_mvgrl_citeseer_preprocessing_matches_a_numpy_sklearn_reference(p):
    ds = _toy_dataset(np.random.default_rng(3), num_nodes=60, p=p)
    adjacency = np.zeros((ds.num_nodes, ds.num_nodes))
    adjacency[ds.receivers, ds.senders] = 1.0
    want, want_eps = _mvgrl_citeseer_view(adjacency)
    method = methods.MVGRL(_config("mvgrl", ppr_match_degree=True, ppr_minmax=True))
    got = method.node_inputs(ds, graphs.node_graph(ds)).diffusion
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got.max() == pytest.approx(1.0) and (got >= 0).all()
    # the threshold alone, then the scaling alone
    only_eps = methods.MVGRL(_config("mvgrl", ppr_match_degree=True))
    kept = only_eps.node_inputs(ds, graphs.node_graph(ds)).diffusion
    exact = _dense_ppr(adjacency, 0.2)
    np.testing.assert_allclose(kept, np.where(exact < want_eps, 0, exact), rtol=1e-5, atol=1e-7)
    assert graphs.degree_matched_eps(
        graphs.ppr_diffusion(ds.senders, ds.receivers, ds.num_nodes, eps=0.0),
        ds.num_nodes,
        adjacency.sum() / ds.num_nodes,
    ) == pytest.approx(want_eps)
    only_minmax = methods.MVGRL(_config("mvgrl", ppr_minmax=True))
    scaled = only_minmax.node_inputs(ds, graphs.node_graph(ds)).diffusion
    span = exact.max(0) - exact.min(0)  # every entry is stored where the graph is connected
    np.testing.assert_allclose(scaled, (exact - exact.min(0)) / span, rtol=1e-4, atol=1e-6)


def test_minmax_columns_of_a_fully_stored_column_uses_its_own_minimum():
    # column 0 stores both rows (min 0.2), column 1 only one (min 0, unstored), column 2 a
    # constant: scikit-learn's MinMaxScaler on the dense matrix
    from sklearn.preprocessing import MinMaxScaler

    d = graphs.Diffusion(
        np.array([0, 0, 0, 1, 2, 2, 2]),
        np.array([0, 1, 2, 1, 0, 1, 2]),
        np.array([0.6, 0.2, 0.4, 0.5, 3, 3, 3.0]),
    )
    dense = np.zeros((3, 3))
    dense[d.receivers, d.senders] = d.weights
    got = graphs.minmax_columns(d, 3)
    out = np.zeros((3, 3))
    out[got.receivers, got.senders] = got.weights
    np.testing.assert_allclose(out, MinMaxScaler().fit_transform(dense), atol=1e-7)


def test_mvgrl_rejects_a_threshold_beside_the_degree_matched_one():
    with pytest.raises(ValueError, match=r"ppr_eps = 0.0001 with ppr_match_degree = True"):
        methods.MVGRL(_config("mvgrl", ppr_match_degree=True, ppr_eps=1e-4))


def test_diffusion_helpers_reject_bad_arguments():
    d = graphs.Diffusion(np.array([0, 1]), np.array([0, 1]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="`candidates` must be positive"):
        graphs.degree_matched_eps(d, 2, 1.0, candidates=(0.0,))
    with pytest.raises(ValueError, match="`mean_degree` must be a number >= 0"):
        graphs.degree_matched_eps(d, 2, -1.0)
    with pytest.raises(ValueError, match="`candidates` must be positive"):
        graphs.degree_matched_eps(d, 2, 1.0, candidates=(True,))
    # NumPy scalars are numbers like any other (np.float32 thresholds were refused).
    many = np.array([1e-3, 0.6], np.float32)
    eps = [graphs.degree_matched_eps(d, 2, m, tuple(many)) for m in (np.int64(0), np.float32(1))]
    assert eps == pytest.approx([0.6, 1e-3])
    with pytest.raises(ValueError, match="sender ids must lie in"):
        graphs.minmax_columns(d, 1)
    with pytest.raises(ValueError, match="`num_nodes` must be a positive int, got 0"):
        graphs.minmax_columns(d, 0)
    # the exact diffusion these settings need is computed up to DENSE_DIFFUSION_LIMIT nodes
    n = graphs.DENSE_DIFFUSION_LIMIT + 1
    m = np.zeros(n, bool)
    big = NodeDataset("big", np.array([0]), np.array([1]), np.ones((n, 2), np.float32),
                      np.zeros(n, np.int64), 3, m, m, m)  # fmt: skip
    method = methods.MVGRL(_config("mvgrl", ppr_minmax=True))
    with pytest.raises(ValueError, match=f"need the exact diffusion.*'big' has {n}"):
        method.node_inputs(big, None)


def test_mvgrl_sparse_and_dense_diffusion_give_the_same_embeddings():
    ds = _toy_dataset(np.random.default_rng(1))
    outs = []
    for diffusion in ("dense", "sparse"):
        method = methods.MVGRL(_config("mvgrl", diffusion=diffusion, ppr_eps=1e-3))
        model = method.build(_spec(ds.num_features), rngs=nnx.Rngs(0))
        inputs = method.node_inputs(ds, graphs.node_graph(ds))
        outs.append(
            (method.features(model, inputs), method.loss(model, inputs, jax.random.key(2), {})[0])
        )
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-5)


def test_mvgrl_discriminator_logits_and_loss_match_numpy():
    ds = _toy_dataset(np.random.default_rng(2))
    method = methods.MVGRL(_config("mvgrl", width=8))
    model = method.build(_spec(ds.num_features), rngs=nnx.Rngs(0))
    inputs = method.node_inputs(ds, graphs.node_graph(ds))
    key = jax.random.key(5)
    positive, negative = mvgrl_logits(model, inputs, key)
    n = ds.num_nodes
    assert positive.shape == (2 * n,) and negative.shape == (2 * n,)

    h1, h2 = (np.asarray(h, np.float64) for h in model.embed(inputs))
    shuffled = np.asarray(corrupt(key, jnp.asarray(ds.node_features)))
    h3, h4 = (np.asarray(h, np.float64) for h in model.embed(inputs, jnp.asarray(shuffled)))
    w = np.asarray(model.discriminator.kernel[...], np.float64)
    b = float(model.discriminator.bias[...])

    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    c1, c2 = sigmoid(h1.mean(0)), sigmoid(h2.mean(0))
    # DGI/MVGRL Discriminator: f_k(h2, c1), f_k(h1, c2) | f_k(h4, c1), f_k(h3, c2).
    pos = np.concatenate([h2 @ w @ c1, h1 @ w @ c2]) + b
    neg = np.concatenate([h4 @ w @ c1, h3 @ w @ c2]) + b
    np.testing.assert_allclose(positive, pos, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(negative, neg, rtol=1e-4, atol=1e-6)
    logits = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(2 * n), np.zeros(2 * n)])
    bce = np.mean(np.logaddexp(0, logits) - labels * logits)  # BCEWithLogitsLoss
    loss, metrics = method.loss(model, inputs, key, {})
    assert np.isfinite(float(loss))
    np.testing.assert_allclose(loss, bce, rtol=1e-5)
    np.testing.assert_allclose(method.features(model, inputs), h1 + h2, rtol=1e-5, atol=1e-6)
    grads = nnx.grad(lambda m: method.loss(m, inputs, key, {})[0])(model)
    assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grads))


def test_node_windows_are_runs_of_consecutive_ids_inside_the_graph():
    ids = np.asarray(node_windows(jax.random.key(0), 30, 500, 7))
    assert ids.shape == (500, 7)
    np.testing.assert_array_equal(ids - ids[:, :1], np.broadcast_to(np.arange(7), (500, 7)))
    starts = ids[:, 0]
    assert starts.min() == 0 and starts.max() == 30 - 7  # every start 0 .. N - size is drawn
    np.testing.assert_array_equal(ids, node_windows(jax.random.key(0), 30, 500, 7))
    assert node_windows(jax.random.key(0), 30, 3, 30).tolist() == [list(range(30))] * 3
    with pytest.raises(ValueError, match=r"config.method.window_size = 31: expected 1 .. 30"):
        node_windows(jax.random.key(0), 30, 2, 31)


def test_mvgrl_windows_score_each_window_with_its_own_summaries():
    ds = _toy_dataset(np.random.default_rng(3))
    method = methods.MVGRL(_config("mvgrl", width=8, windows=3, window_size=6))
    model = method.build(_spec(ds.num_features), rngs=nnx.Rngs(0))
    inputs = method.node_inputs(ds, graphs.node_graph(ds))
    key = jax.random.key(7)
    loss, _ = method.loss(model, inputs, key, {})
    k_corrupt, k_windows = jax.random.split(key)
    ids = np.asarray(node_windows(k_windows, ds.num_nodes, 3, 6))
    # The reference: the whole graph's embeddings (clean and corrupted), then per window
    # the summaries of its nodes and the bilinear scores of its nodes, BCE over all windows.
    h1, h2 = (np.asarray(h, np.float64) for h in model.embed(inputs))
    x = corrupt(k_corrupt, jnp.asarray(ds.node_features))
    h3, h4 = (np.asarray(h, np.float64) for h in model.embed(inputs, x))
    w = np.asarray(model.discriminator.kernel[...], np.float64)
    b = float(model.discriminator.bias[...])
    terms = []
    for win in ids:
        c1, c2 = (1 / (1 + np.exp(-h[win].mean(0))) for h in (h1, h2))
        pos = np.concatenate([h2[win] @ w @ c1, h1[win] @ w @ c2]) + b
        neg = np.concatenate([h4[win] @ w @ c1, h3[win] @ w @ c2]) + b
        terms.append(0.5 * np.mean(np.logaddexp(0, -pos)) + 0.5 * np.mean(np.logaddexp(0, neg)))
    np.testing.assert_allclose(loss, np.mean(terms), rtol=1e-5)
    # windows = 0 is the whole graph with the key as before
    whole = methods.MVGRL(_config("mvgrl", width=8))
    np.testing.assert_allclose(
        whole.loss(model, inputs, key, {})[0],
        np.mean(np.logaddexp(0, -np.asarray(mvgrl_logits(model, inputs, key)[0]))) / 2
        + np.mean(np.logaddexp(0, np.asarray(mvgrl_logits(model, inputs, key)[1]))) / 2,
        rtol=1e-5,
    )
    too_big = methods.MVGRL(_config("mvgrl", width=8, windows=2, window_size=ds.num_nodes + 1))
    with pytest.raises(ValueError, match="config.method.window_size"):
        too_big.loss(model, inputs, key, {})


def _np_prelu(x, slope):
    return np.where(x > 0, x, np.asarray(slope) * x)


def _np_window_embeddings(model, inputs, x, start, size, loop=1.0):
    """NumPy: MVGRL's code's window, the rows and columns ``start .. start + size`` of the
    whole graph's ``D^-1/2 (A + loop I) D^-1/2`` and of ``S`` (not renormalised), one GCN
    layer per view on the window's features ``x[window]``."""
    g = inputs.graph
    n = g.nodes.shape[0]
    a = loop * np.eye(n)
    np.add.at(a, (np.asarray(g.receivers), np.asarray(g.senders)), 1.0)
    d = 1 / np.sqrt(a.sum(1))
    w = slice(start, start + size)
    p = (d[:, None] * a * d[None, :])[w, w]
    s = np.asarray(inputs.diffusion, np.float64)[w, w]
    xw = np.asarray(x, np.float64)[w]
    la, lb = model.adjacency.layers[0], model.diffusion.layers[0]
    h_adj = _np_prelu(
        p @ xw @ np.asarray(la.linear.kernel[...]) + np.asarray(la.bias[...]),
        model.adjacency.prelu.negative_slope[...],
    )
    h_diff = _np_prelu(
        s @ xw @ np.asarray(lb.linear.kernel[...]) + np.asarray(lb.bias[...]),
        model.diffusion.prelus[0].negative_slope[...],
    )
    return h_adj, h_diff


def test_mvgrl_cut_windows_encode_each_window_as_the_codes_sub_graph():
    ds = _toy_dataset(np.random.default_rng(5))
    method = methods.MVGRL(_config("mvgrl", width=8, windows=3, window_size=11, window_edges="cut"))
    model = method.build(_spec(ds.num_features), rngs=nnx.Rngs(0))
    inputs = method.node_inputs(ds, graphs.node_graph(ds))
    x = np.asarray(inputs.graph.nodes)
    for start in (0, 7, ds.num_nodes - 11):
        got = model.embed_window(inputs, jnp.asarray(start), 11)
        for g, want in zip(got, _np_window_embeddings(model, inputs, x, start, 11), strict=True):
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
    # The loss: each window scored on its own sub-graph, the negatives its rows shuffled by
    # one permutation shared by the windows (the code's shuf_fts)
    key = jax.random.key(2)
    loss, _ = method.loss(model, inputs, key, {})
    k_corrupt, k_windows = jax.random.split(key)
    starts = np.asarray(node_windows(k_windows, ds.num_nodes, 3, 11))[:, 0]
    perm = np.asarray(jax.random.permutation(k_corrupt, 11))
    w = np.asarray(model.discriminator.kernel[...], np.float64)
    b = float(model.discriminator.bias[...])
    terms = []
    for start in starts:
        shuffled = x.copy()
        shuffled[start : start + 11] = x[start + perm]
        h1, h2 = _np_window_embeddings(model, inputs, x, start, 11)
        h3, h4 = _np_window_embeddings(model, inputs, shuffled, start, 11)
        c1, c2 = (1 / (1 + np.exp(-h.mean(0))) for h in (h1, h2))
        pos = np.concatenate([h2 @ w @ c1, h1 @ w @ c2]) + b
        neg = np.concatenate([h4 @ w @ c1, h3 @ w @ c2]) + b
        terms.append(0.5 * np.mean(np.logaddexp(0, -pos)) + 0.5 * np.mean(np.logaddexp(0, neg)))
    np.testing.assert_allclose(loss, np.mean(terms), rtol=1e-5)
    # the same windows with the edges kept give another loss
    keep = methods.MVGRL(_config("mvgrl", width=8, windows=3, window_size=11))
    assert not np.isclose(keep.loss(model, inputs, key, {})[0], loss)


def test_mvgrl_self_loop_weight_normalises_a_plus_w_i_as_the_code():
    # MVGRL's code: normalize_adj(adj + sp.eye(n)), whose normalize_adj adds I again
    ds = _toy_dataset(np.random.default_rng(8))
    method = methods.MVGRL(_config("mvgrl", width=8, self_loop_weight=2.0))
    model = method.build(_spec(ds.num_features), rngs=nnx.Rngs(0))
    inputs = method.node_inputs(ds, graphs.node_graph(ds))
    x = np.asarray(inputs.graph.nodes)
    want = _np_window_embeddings(model, inputs, x, 0, ds.num_nodes, loop=2.0)
    for got, ref in zip(model.embed(inputs), want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    plain = _np_window_embeddings(model, inputs, x, 0, ds.num_nodes)[0]
    assert not np.allclose(model.embed(inputs)[0], plain, atol=1e-3)
    with pytest.raises(ValueError, match=r"config.method.self_loop_weight = 0.0: expected"):
        methods.MVGRL(_config("mvgrl", self_loop_weight=0.0))
    with pytest.raises(ValueError, match=r"add_self_loops.*-1.0"):
        graphs.gcn_normalization(jnp.array([0]), jnp.array([1]), 2, add_self_loops=-1.0)
    # Edge arrays of another length than `senders` (they broadcast, or failed unnamed).
    ids = jnp.array([0, 1])
    for name, kwargs in [
        ("receivers", {"receivers": jnp.array([1, 0, 0])}),
        ("edge_weight", {"edge_weight": jnp.ones(3)}),
        ("edge_weight", {"edge_weight": jnp.ones((2, 1))}),
        ("edge_mask", {"edge_mask": jnp.ones(3, bool)}),
    ]:
        with pytest.raises(ValueError, match=f"`{name}` must have the shape of `senders` \\(2,\\)"):
            graphs.gcn_normalization(ids, **{"receivers": ids[::-1], "num_nodes": 2, **kwargs})


def test_gcn_edge_cut_propagates_with_a_sub_matrix_of_the_whole_graphs_normalisation():
    ds = _toy_dataset(np.random.default_rng(6), num_features=5)
    graph = graphs.node_graph(ds)
    gcn = models.GCN(5, (6, 4), activation="relu", rngs=nnx.Rngs(1))
    s, r = np.asarray(graph.senders), np.asarray(graph.receivers)
    inside = np.zeros(ds.num_nodes, bool)
    inside[4:17] = True
    cut = ~(inside[s] & inside[r])
    assert cut.any() and not cut.all()
    got = np.asarray(gcn(graph, edge_cut=jnp.asarray(cut)))[inside]
    a = np.eye(ds.num_nodes)
    np.add.at(a, (r, s), 1.0)
    d = 1 / np.sqrt(a.sum(1))
    p = (d[:, None] * a * d[None, :])[np.ix_(inside, inside)]  # degrees of the whole graph
    h = np.asarray(graph.nodes, np.float64)[inside]
    for layer in gcn.layers:
        h = p @ h @ np.asarray(layer.linear.kernel[...]) + np.asarray(layer.bias[...])
        h = np.maximum(h, 0)
    np.testing.assert_allclose(got, h, rtol=1e-5, atol=1e-6)


def test_mvgrl_rejects_cut_windows_without_windows_and_unknown_window_edges():
    with pytest.raises(ValueError, match="'cut'.*expected config.method.windows > 0"):
        methods.MVGRL(_config("mvgrl", window_edges="cut"))
    with pytest.raises(ValueError, match="window_edges"):
        methods.MVGRL(_config("mvgrl", windows=2, window_edges="drop"))


@pytest.mark.parametrize("key, value", [("windows", -1), ("window_size", 0), ("window_size", -3)])
def test_mvgrl_rejects_bad_windows(key, value):
    with pytest.raises(ValueError, match=f"config.method.{key} = {value!r}"):
        methods.MVGRL(_config("mvgrl", **{key: value}))


def test_mvgrl_bilinear_discriminator_shapes_and_init():
    model = methods.MVGRL(_config("mvgrl", width=512)).build(_spec(7), rngs=nnx.Rngs(0))
    w = np.asarray(model.discriminator.kernel[...])
    assert w.shape == (512, 512) and float(model.discriminator.bias[...]) == 0.0
    bound = np.sqrt(6 / (512 * 512 + 512))  # xavier_uniform_ of torch's [1, 512, 512] weight
    assert bound * 0.99 < np.abs(w).max() <= bound
    h, c = jnp.ones((5, 512)), jnp.ones((512,))
    assert model.discriminator(h, c).shape == (5,)


def test_corruption_is_a_permutation_of_rows():
    x = jnp.arange(60.0).reshape(20, 3)
    y = np.asarray(corrupt(jax.random.key(0), x))
    assert y.shape == x.shape and not np.array_equal(y, x)
    order = np.argsort(y[:, 0])
    np.testing.assert_array_equal(y[order], x)
    assert not np.array_equal(y, np.asarray(corrupt(jax.random.key(1), x)))


@pytest.mark.parametrize("key, value", [("diffusion", "heat"), ("alpha", 0.0)])
def test_mvgrl_rejects_bad_hyperparameters(key, value):
    with pytest.raises(ValueError, match=f"config.method.{key}"):
        methods.MVGRL(_config("mvgrl", **{key: value}))


@pytest.mark.parametrize(
    "name, data, key, value",
    [
        ("grace", "cora", "temperature", float("nan")),  # passed the bare `<= 0` check
        ("grace_esco", "cora", "lam", -1.0),  # ESCo's keys were checked at the first step
        ("grace_esco", "cora", "lam", float("inf")),
        ("grace_esco", "cora", "num_features", 0),
        ("esco_simclr", "cifar10", "num_features", -3),
        ("esco_pairs", "esco_synthetic", "lam", float("nan")),
        ("esco_pairs", "esco_synthetic", "temperature", 0.0),
    ],
)
def test_bad_values_are_refused_when_built(name, data, key, value):
    c = training.base_config(data, name, optimizer="adam")
    c.method[key] = value
    with pytest.raises(ValueError, match=rf"config.method.{key} = {value!r}: expected .*{name}"):
        methods.get(name)(c)


def test_mvgrl_sparse_diffusion_needs_a_threshold():
    with pytest.raises(ValueError, match="ppr_eps"):
        methods.MVGRL(_config("mvgrl", diffusion="sparse", ppr_eps=0.0))


def test_mvgrl_sparse_diffusion_takes_the_degree_matched_threshold_instead():
    # ppr_match_degree thresholds the exact S itself: sparse with ppr_eps = 0 (the only
    # ppr_eps match-degree accepts) keeps as edges exactly the dense view's kept entries
    ds = _toy_dataset(np.random.default_rng(3), num_nodes=60, p=0.05)
    graph = graphs.node_graph(ds)
    dense = methods.MVGRL(_config("mvgrl", ppr_match_degree=True)).node_inputs(ds, graph)
    method = methods.MVGRL(_config("mvgrl", width=8, diffusion="sparse", ppr_match_degree=True))
    inputs = method.node_inputs(ds, graph)
    d = inputs.diffusion
    got = np.zeros_like(dense.diffusion)
    got[np.asarray(d.receivers), np.asarray(d.senders)] = np.asarray(d.edges).reshape(-1)
    np.testing.assert_allclose(got, dense.diffusion, rtol=1e-6)
    exact = graphs.ppr_diffusion(ds.senders, ds.receivers, ds.num_nodes, eps=0.0)
    assert 0 < np.asarray(d.senders).size < exact.senders.size  # thresholded: not all pairs
    model = method.build(_spec(ds.num_features), rngs=nnx.Rngs(0))
    layer, x = model.diffusion.layers[0], np.asarray(inputs.graph.nodes, np.float64)
    want = dense.diffusion @ x @ np.asarray(layer.linear.kernel[...]) + np.asarray(layer.bias[...])
    want = _np_prelu(want, model.diffusion.prelu.negative_slope[...])
    # the sparse view propagates along exactly those entries
    np.testing.assert_allclose(model.embed(inputs)[1], want, rtol=1e-4, atol=1e-6)
    for hp in (dict(ppr_eps=float("nan")), dict(self_loop_weight=float("inf"))):
        with pytest.raises(ValueError, match=f"config.method.{next(iter(hp))} = (nan|inf)"):
            methods.MVGRL(_config("mvgrl", **hp))


# ------------------------------------------------------------------------------------------
# Optimiser and schedule of GRACE / MVGRL (torch Adam with L2, constant learning rate)


def _torch_adam_l2(params, grads_seq, lr, wd, b1=0.9, b2=0.999, eps=1e-8):
    """torch.optim.Adam(lr, weight_decay=wd) step by step (its documented algorithm)."""
    p = {k: v.astype(np.float64) for k, v in params.items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(x) for k, x in p.items()}
    for t, grads in enumerate(grads_seq, start=1):
        for k in p:
            g = grads[k] + wd * p[k]
            m[k] = b1 * m[k] + (1 - b1) * g
            v[k] = b2 * v[k] + (1 - b2) * g * g
            m_hat, v_hat = m[k] / (1 - b1**t), v[k] / (1 - b2**t)
            p[k] = p[k] - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p


def test_adam_l2_is_torch_adam_with_weight_decay_on_every_parameter():
    rng = np.random.default_rng(0)
    params = {"kernel": rng.normal(size=(3, 2)), "bias": rng.normal(size=(2,))}
    params = {k: v.astype(np.float32) for k, v in params.items()}
    grads_seq = [
        {k: rng.normal(size=v.shape).astype(np.float32) for k, v in params.items()}
        for _ in range(4)
    ]
    lr, wd = 0.01, 0.1
    sched = optim.make_schedule("constant", peak=lr, total_steps=4, warmup_steps=0)
    tx = optim.make_optimizer("adam_l2", sched, weight_decay=wd)
    p = jax.tree.map(jnp.asarray, params)
    state = tx.init(p)
    for grads in grads_seq:
        updates, state = tx.update(jax.tree.map(jnp.asarray, grads), state, p)
        p = jax.tree.map(lambda a, u: a + u, p, updates)
    want = _torch_adam_l2(params, grads_seq, lr, wd)
    for k in params:
        np.testing.assert_allclose(p[k], want[k], rtol=1e-5, atol=1e-6)
    # The bias decays too (unlike "adam", which is AdamW on kernels only).
    adamw = optim.make_optimizer("adam", sched, weight_decay=wd)
    zero = jax.tree.map(jnp.zeros_like, p)
    assert float(jnp.abs(tx.update(zero, tx.init(p), p)[0]["bias"]).min()) > 0
    assert float(jnp.abs(adamw.update(zero, adamw.init(p), p)[0]["bias"]).max()) == 0


def test_constant_schedule_with_and_without_warmup():
    flat = optim.make_schedule("constant", peak=0.3, total_steps=100, warmup_steps=0)
    assert [float(flat(s)) for s in (0, 50, 100)] == pytest.approx([0.3] * 3)
    warm = optim.make_schedule("constant", peak=0.3, total_steps=100, warmup_steps=10)
    assert float(warm(0)) == 0 and float(warm(5)) == pytest.approx(0.15)
    assert float(warm(10)) == pytest.approx(0.3) and float(warm(99)) == pytest.approx(0.3)
    # A warm-up as long as the run is cut, as the cosine schedule's, to reach the peak.
    short = optim.make_schedule("constant", peak=1.0, total_steps=5, warmup_steps=10)
    assert [float(short(s)) for s in range(5)] == pytest.approx([0, 0.25, 0.5, 0.75, 1])
    assert float(optim.make_schedule("constant", peak=1.0, total_steps=1, warmup_steps=3)(0)) == 1
    with pytest.raises(ValueError, match="schedule"):
        optim.make_schedule("step", peak=0.3, total_steps=100, warmup_steps=0)


# ------------------------------------------------------------------------------------------
# Configs and end-to-end runs


def _experiment(path, arg=None):
    spec = importlib.util.spec_from_file_location("cfg", REPO / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


@pytest.mark.parametrize(
    "path, arg",
    [
        ("experiments/grace/cora.py", None),
        ("experiments/grace/cora.py", "quick"),
        ("experiments/grace/cora.py", "sorf"),
        ("experiments/grace/citeseer.py", None),
        ("experiments/grace/citeseer.py", "rff"),
        ("experiments/grace/pubmed.py", None),
        ("experiments/grace/pubmed.py", "rff"),
        ("experiments/grace/pubmed.py", "sorf,quick"),
        ("experiments/mvgrl/cora.py", None),
        ("experiments/mvgrl/cora.py", "quick"),
    ],
)
def test_experiment_configs_validate(path, arg):
    c = _experiment(path, arg)
    training.validate(c)


def test_grace_configs_hold_esco_table_4():
    cora, citeseer, pubmed = (
        _experiment(f"experiments/grace/{name}.py") for name in ("cora", "citeseer", "pubmed")
    )
    got = [
        (
            c.train.epochs,
            c.optim.lr,
            c.optim.weight_decay,
            c.model.encoder_width,
            c.model.head_width,
            c.method.p_e1,
            c.method.p_e2,
            c.method.p_f1,
            c.method.p_f2,
            c.method.temperature,
        )
        for c in (cora, citeseer, pubmed)
    ]
    assert got == [
        (400, 1e-4, 1e-5, 512, 512, 0.2, 0.3, 0.3, 0.3, 0.5),
        (200, 1e-3, 1e-5, 256, 256, 0.2, 0.0, 0.3, 0.2, 0.9),
        (1500, 1e-4, 1e-5, 256, 256, 0.4, 0.1, 0.0, 0.2, 0.7),
    ]
    assert pubmed.data.synthetic and not cora.data.synthetic  # Pubmed's files are not here
    for loss in ("rff", "sorf"):
        esco = _experiment("experiments/grace/pubmed.py", loss)
        assert (esco.method.lam, esco.method.num_features) == (1.5, 1024)
    esco = _experiment("experiments/grace/cora.py", "sorf")
    assert (esco.method.name, esco.method.rf_method, esco.method.lam) == ("grace_esco", "sorf", 1.2)


@pytest.mark.parametrize("name", ["grace", "mvgrl"])
def test_short_run_on_cora_trains_and_evaluates(tmp_path, data_dir, name):
    c = _config(name, width=16)
    c.data.data_dir = str(data_dir)
    c.optim.schedule = "constant"
    c.optim.lr = 1e-3
    c.optim.weight_decay = 1e-5
    c.optim.warmup_epochs = 0.0
    c.train.epochs = 3
    c.train.log_every_steps = 1
    results = training.train_and_evaluate(c, str(tmp_path))
    assert results["steps"] == 3 and np.isfinite(results["final_loss"])
    assert 0.0 < results["test_top1"] <= 1.0
    assert json.loads((tmp_path / "results.json").read_text())["method"] == name


def test_synthetic_graph_run_needs_no_files(tmp_path):
    c = _experiment("experiments/grace/citeseer.py", "rff,quick")
    c.data.synthetic = True
    c.data.data_dir = str(tmp_path / "nowhere")  # not read
    c.model.encoder_width = c.model.head_width = c.model.embed_dim = 16
    c.train.epochs = 2
    results = training.train_and_evaluate(c, str(tmp_path / "run"))
    assert results["steps"] == 2 and np.isfinite(results["final_loss"])


def test_configs_find_the_shared_data_beside_the_checkout(monkeypatch, data_dir):
    monkeypatch.delenv("JAXCL_DATA_DIR", raising=False)
    c = _experiment("experiments/grace/citeseer.py")
    assert Path(c.data.data_dir).resolve() == data_dir.resolve()
    monkeypatch.setenv("JAXCL_DATA_DIR", "/somewhere/else")
    assert _experiment("experiments/mvgrl/cora.py").data.data_dir == ""  # the trainer reads it
