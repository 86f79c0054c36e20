"""MVGRL + m-Mix at node level (method ``mvgrl_mmix``): the loss is the composition the
docstring states, each row's mixer is the one it names, gradients reach the extra
parameters, bad settings are named, every row's config validates, and a short run on Cora
trains and evaluates."""

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcl import evaluation, graphs, losses, methods, mixers, training
from jaxcl.configs import mmix_node
from jaxcl.data import NodeDataset
from jaxcl.methods._windows import node_windows

REPO = Path(__file__).parents[1]
DATA = REPO.parent / "shared" / "data"
ROWS = sorted(mmix_node.ROWS)


def _config(**hp):
    c = training.base_config("cora", "mvgrl_mmix", optimizer="adam_l2")
    c.model.encoder_depth = 1
    c.model.encoder_width = 8
    c.method.update(hp)
    return c


def _toy(seed=0, n=20, f=6):
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((n, n)) < 0.2, 1)
    s, r = np.nonzero(upper | upper.T)
    x = rng.random((n, f)).astype(np.float32)
    m = np.zeros(n, bool)
    return NodeDataset("toy", s, r, x, rng.integers(0, 3, n), 3, m, m, m)


def _setup(**hp):
    method = methods.MVGRLMix(_config(**hp))
    ds = _toy()
    model = method.build(methods.DataSpec("node", 6, 3), nnx.Rngs(0))
    inputs = method.node_inputs(ds, graphs.node_graph(ds))
    return method, model, inputs


@pytest.mark.parametrize(
    "partners, weight",
    [("wp", 0.5), ("op", 0.5), ("wp", -0.5)],  # < 0: graph script's sign
)
def test_loss_is_node_objective_of_mixed_view_plus_diversity(partners, weight):
    method, model, inputs = _setup(mixing="mp", partners=partners, diversity=weight)
    loss, metrics = method.loss(model, inputs, jax.random.key(0), {})
    z_a, z_b = model.embed(inputs)
    p_m, p_n = model.projections()
    edges = (
        dict(senders=inputs.graph.senders, receivers=inputs.graph.receivers)
        if partners == "wp"
        else {}
    )
    hard = model.g(mixers.mp_mix(z_a, p_m, p_n, **edges))
    want = losses.mmix_node_loss(hard, z_b) + weight * losses.mmix_diversity_loss(z_a, p_m, p_n)
    np.testing.assert_allclose(loss, want, rtol=1e-6)
    assert set(metrics) == {"loss", "contrast", "diversity_loss"}
    # evaluation: the mixed branch plus view b (Table 10), or the encoders' own sum
    np.testing.assert_allclose(method.features(model, inputs), hard + z_b, rtol=1e-6)
    method.hp.eval_features = "encoder"
    np.testing.assert_allclose(method.features(model, inputs), z_a + z_b, rtol=1e-6)


def test_cross_view_negatives_are_the_official_scripts_loss():
    method, model, inputs = _setup(mixing="mp", diversity=0.5, negatives="cross")
    loss, _ = method.loss(model, inputs, jax.random.key(0), {})
    z_a, z_b = model.embed(inputs)
    p_m, p_n = model.projections()
    edges = dict(senders=inputs.graph.senders, receivers=inputs.graph.receivers)
    u = np.asarray(model.g(mixers.mp_mix(z_a, p_m, p_n, **edges)), np.float64)
    v = np.asarray(z_b, np.float64)
    # The official node script: cosine logits between the views (tau = 1), cross entropy
    # over each row and each column against the diagonal, averaged.
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    logits = u @ v.T

    def xent(lg):
        return np.mean(np.log(np.exp(lg).sum(1)) - np.diag(lg))

    want = 0.5 * (xent(logits) + xent(logits.T))
    want += 0.5 * float(losses.mmix_diversity_loss(z_a, p_m, p_n))
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    both, _ = _setup(mixing="mp", diversity=0.5)[0].loss(model, inputs, jax.random.key(0), {})
    assert not np.isclose(loss, both)


@pytest.mark.parametrize("mixing", ["mp", "none"])
def test_pre_activation_mixes_inside_the_layer_as_the_official_script(mixing):
    # The official node script's GCN.forward with attn=True: PReLU(g(mix(A X W))), the
    # diversity loss on the projections of A X W.
    diversity = 0.5 if mixing == "mp" else 0.0
    method, model, inputs = _setup(mixing=mixing, diversity=diversity, mix_at="pre_activation")
    assert model.adjacency.activation is None and model.a_act is not None
    layer = model.adjacency.layers[0]
    layer.bias[...] = jnp.linspace(-0.5, 0.5, layer.bias.shape[0])  # a bias that shows
    z_pre, z_b = model.embed(inputs)
    graph = inputs.graph
    # A X W + b with the layer's own weights: MVGRL's GCN with its PReLU at slope 0 (a ReLU)
    ref = methods.MVGRL(_config()).build(methods.DataSpec("node", 6, 3), nnx.Rngs(1)).adjacency
    ref.layers[0].linear.kernel[...] = layer.linear.kernel[...]
    ref.layers[0].bias[...] = layer.bias[...]
    ref.prelu.negative_slope[...] = jnp.zeros_like(ref.prelu.negative_slope[...])
    np.testing.assert_allclose(jax.nn.relu(z_pre), ref(graph), rtol=1e-6, atol=1e-7)
    assert np.any(np.asarray(z_pre) < 0)  # no activation on the layer itself
    edges = dict(senders=graph.senders, receivers=graph.receivers)
    if mixing == "mp":
        p_m, p_n = model.projections()
        mixed = mixers.mp_mix(z_pre, p_m, p_n, **edges)
    else:
        mixed = z_pre
    hard = model.a_act(model.g(mixed))
    want = losses.mmix_node_loss(hard, z_b)
    if mixing == "mp":
        want += diversity * losses.mmix_diversity_loss(z_pre, p_m, p_n)
    loss, _ = method.loss(model, inputs, jax.random.key(0), {})
    np.testing.assert_allclose(loss, want, rtol=1e-6)
    np.testing.assert_allclose(method.features(model, inputs), hard + z_b, rtol=1e-6)
    method.hp.eval_features = "encoder"
    np.testing.assert_allclose(method.features(model, inputs), model.a_act(z_pre) + z_b, rtol=1e-6)
    # the default placement keeps the GCN's own PReLU and has no extra activation
    _, default_model, _ = _setup(mixing=mixing, diversity=diversity)
    assert default_model.adjacency.activation == "prelu" and default_model.a_act is None


@pytest.mark.parametrize(
    ("mixing", "mixer"),
    [
        ("mo", lambda z, m, key, e: mixers.mo_mix(z, self_weight=0.3, **e)),
        ("binary", lambda z, m, key, e: mixers.binary_mix(z, **e)),
        ("random", lambda z, m, key, e: mixers.random_mix(key, z, **e)),
        ("none", lambda z, m, key, e: z),  # the control: no mixing
    ],
)
def test_each_row_mixes_with_the_mixer_it_names(mixing, mixer):
    c = dict(self_weight=0.3) if mixing == "mo" else {}  # C: mo-mix's alone
    method, model, inputs = _setup(mixing=mixing, diversity=0.0, **c)
    key = jax.random.key(1)
    z_a, _ = model.embed(inputs)
    edges = dict(senders=inputs.graph.senders, receivers=inputs.graph.receivers)
    np.testing.assert_allclose(
        method.mix(model, z_a, inputs.graph, key), mixer(z_a, model, key, edges), rtol=1e-6
    )
    assert model.p_m is None and model.p_n is None  # only mp-mix has projections


@pytest.mark.parametrize("negatives", ["both", "cross"])
def test_windows_contrast_within_each_window_and_mix_over_the_whole_graph(negatives):
    method, model, inputs = _setup(
        mixing="mp", diversity=0.5, windows=3, window_size=7, negatives=negatives
    )
    key = jax.random.key(4)
    loss, metrics = method.loss(model, inputs, key, {})
    k_mix, k_windows = jax.random.split(key)
    ids = np.asarray(node_windows(k_windows, 20, 3, 7))
    z_a, z_b = model.embed(inputs)
    p_m, p_n = model.projections()
    edges = dict(senders=inputs.graph.senders, receivers=inputs.graph.receivers)
    hard = model.g(mixers.mp_mix(z_a, p_m, p_n, **edges))
    if negatives == "both":
        per_window = [losses.mmix_node_loss(hard[w], z_b[w]) for w in ids]
    else:
        per_window = [losses.infonce(hard[w], z_b[w], temperature=1.0, symmetric=True) for w in ids]
    np.testing.assert_allclose(metrics["contrast"], np.mean(per_window), rtol=1e-5)
    want = np.mean(per_window) + 0.5 * losses.mmix_diversity_loss(z_a, p_m, p_n)
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    # random-mix draws its weights from the key left after the windows' split
    method, model, inputs = _setup(mixing="random", diversity=0.0, windows=2, window_size=20)
    z_a, z_b = model.embed(inputs)
    hard = model.g(mixers.random_mix(k_mix, z_a, **edges))
    np.testing.assert_allclose(
        method.loss(model, inputs, key, {})[0], losses.mmix_node_loss(hard, z_b), rtol=1e-5
    )  # two windows of the whole graph: the whole graph's objective


@pytest.mark.parametrize(("partners", "mix_at"), [("wp", "output"), ("op", "pre_activation")])
def test_cut_windows_mix_and_contrast_each_window_as_its_own_sub_graph(partners, mix_at):
    # window_edges='cut', the official script's windows: each window encoded as its own
    # sub-graph (embed_window, checked against NumPy in test_node_methods.py), mixed among
    # the edges inside it only (-wp) or all of its nodes (-op), the objective within it, the
    # mean over windows, the diversity loss over all windows' rows
    hp = dict(mixing="mp", diversity=0.5, windows=3, window_size=9, window_edges="cut")
    method, model, inputs = _setup(partners=partners, mix_at=mix_at, **hp)
    key = jax.random.key(3)
    loss, metrics = method.loss(model, inputs, key, {})
    _, k_windows = jax.random.split(key)
    starts = np.asarray(node_windows(k_windows, 20, 3, 9))[:, 0]
    s, r = np.asarray(inputs.graph.senders), np.asarray(inputs.graph.receivers)
    p_m, p_n = model.projections()
    per_window, rows = [], []
    for start in starts:
        z_a, z_b = model.embed_window(inputs, jnp.asarray(start), 9)
        inside = (s >= start) & (s < start + 9) & (r >= start) & (r < start + 9)
        edges = dict(senders=s[inside] - start, receivers=r[inside] - start)
        assert 0 < inside.sum() < len(s)  # the windows cut some edges and keep others
        mixed = mixers.mp_mix(z_a, p_m, p_n, **(edges if partners == "wp" else {}))
        hard = model.g(mixed) if model.a_act is None else model.a_act(model.g(mixed))
        per_window.append(losses.mmix_node_loss(hard, z_b))
        rows.append(z_a)
    np.testing.assert_allclose(metrics["contrast"], np.mean(per_window), rtol=1e-5)
    div = losses.mmix_diversity_loss(jnp.concatenate(rows), p_m, p_n)
    np.testing.assert_allclose(loss, np.mean(per_window) + 0.5 * div, rtol=1e-5)
    keep = _setup(partners=partners, mix_at=mix_at, **{**hp, "window_edges": "keep"})[0]
    assert not np.isclose(keep.loss(model, inputs, key, {})[0], loss)


def test_mix_dropout_drops_mixing_weights_in_training_only():
    method, model, inputs = _setup(mixing="mp", diversity=0.0, mix_dropout=0.1)
    key = jax.random.key(5)
    loss, _ = method.loss(model, inputs, key, {})
    z_a, z_b = model.embed(inputs)
    p_m, p_n = model.projections()
    edges = dict(senders=inputs.graph.senders, receivers=inputs.graph.receivers)
    _, k_drop = jax.random.split(key)
    dropped = mixers.mp_mix(z_a, p_m, p_n, dropout=0.1, dropout_key=k_drop, **edges)
    np.testing.assert_allclose(loss, losses.mmix_node_loss(model.g(dropped), z_b), rtol=1e-6)
    plain = model.g(mixers.mp_mix(z_a, p_m, p_n, **edges))
    assert not np.isclose(loss, losses.mmix_node_loss(plain, z_b))
    np.testing.assert_allclose(method.features(model, inputs), plain + z_b, rtol=1e-6)
    with pytest.raises(ValueError, match=r"config.method.mix_dropout = 1.0: expected \[0, 1\)"):
        _setup(mix_dropout=1.0)
    with pytest.raises(ValueError, match=r"threshold = 1.5: expected a number in \[-1.0, 1.0\]"):
        _setup(partners="op", threshold=1.5)


def test_no_mixing_contrasts_g_of_the_adjacency_view_with_the_diffusion_view():
    method, model, inputs = _setup(mixing="none", diversity=0.0)
    loss, metrics = method.loss(model, inputs, jax.random.key(0), {})
    z_a, z_b = model.embed(inputs)
    np.testing.assert_allclose(loss, losses.mmix_node_loss(model.g(z_a), z_b), rtol=1e-6)
    assert set(metrics) == {"loss", "contrast"}
    np.testing.assert_allclose(method.features(model, inputs), model.g(z_a) + z_b, rtol=1e-6)


def test_gradients_reach_g_and_the_projections_even_without_the_diversity_loss():
    method, model, inputs = _setup(mixing="mp", diversity=0.0)
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)

    def loss(params):
        return method.loss(nnx.merge(graphdef, params, rest), inputs, jax.random.key(0), {})[0]

    grads = nnx.to_flat_state(jax.grad(loss)(params))
    norms = {"/".join(map(str, k)): float(jnp.linalg.norm(v[...])) for k, v in grads}
    for name in ("p_m/kernel", "p_n/kernel", "g_in/kernel", "g_out/kernel"):
        assert norms[name] > 0, (name, norms)


def test_op_threshold_changes_the_mix_and_wp_refuses_it():
    method, model, inputs = _setup(mixing="mo", diversity=0.0, partners="op", threshold=0.99)
    z_a, _ = model.embed(inputs)
    got = method.mix(model, z_a, inputs.graph, jax.random.key(0))
    np.testing.assert_allclose(got, mixers.mo_mix(z_a, threshold=0.99), rtol=1e-6)
    assert not np.allclose(got, mixers.mo_mix(z_a))
    # -wp mixes neighbours only: a threshold or a block size there used to be ignored silently.
    for hp in ({"threshold": 0.5}, {"block_size": 256}):
        with pytest.raises(ValueError, match="act only over all nodes"):
            _setup(mixing="mo", diversity=0.0, partners="wp", **hp)


@pytest.mark.parametrize("mixing", ["mo", "mp"])
def test_mix_temperature_divides_the_mixing_logits(mixing):
    method, model, inputs = _setup(mixing=mixing, diversity=0.0, mix_temperature=0.25)
    z_a, _ = model.embed(inputs)
    edges = dict(senders=inputs.graph.senders, receivers=inputs.graph.receivers)
    if mixing == "mo":
        want = mixers.mo_mix(z_a, self_weight=0.2, temperature=0.25, **edges)
        plain = mixers.mo_mix(z_a, self_weight=0.2, **edges)
    else:
        want = mixers.mp_mix(z_a, *model.projections(), temperature=0.25, **edges)
        plain = mixers.mp_mix(z_a, *model.projections(), **edges)
    got = method.mix(model, z_a, inputs.graph, jax.random.key(0))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not np.allclose(got, plain, rtol=1e-4)  # the temperature changes the mix


@pytest.mark.parametrize("self_loop_weight", [1.0, 2.0])
def test_propagate_mixes_with_the_adjacency_views_normalised_matrix(self_loop_weight):
    # z_hat = D^-1/2 (A + w I) D^-1/2 z, against a dense NumPy matrix; with diversity the
    # model has the projections and the loss adds Eq. 6 (the script as first published)
    method, model, inputs = _setup(
        mixing="propagate", diversity=0.5, self_loop_weight=self_loop_weight
    )
    z_a, z_b = model.embed(inputs)
    g = inputs.graph
    n = z_a.shape[0]
    a = np.zeros((n, n))
    a[np.asarray(g.receivers), np.asarray(g.senders)] = 1.0
    a += self_loop_weight * np.eye(n)
    d = 1.0 / np.sqrt(a.sum(1))
    want = (d[:, None] * a * d[None, :]) @ np.asarray(z_a, np.float64)
    np.testing.assert_allclose(method.mix(model, z_a, g, jax.random.key(0)), want, rtol=2e-5)
    loss, metrics = method.loss(model, inputs, jax.random.key(0), {})
    p_m, p_n = model.projections()
    ref = losses.mmix_node_loss(model.g(jnp.asarray(want, jnp.float32)), z_b)
    ref += 0.5 * losses.mmix_diversity_loss(z_a, p_m, p_n)
    np.testing.assert_allclose(loss, ref, rtol=1e-5)
    assert "diversity_loss" in metrics
    # without the diversity loss: no projections
    _, plain, _ = _setup(mixing="propagate", diversity=0.0)
    assert plain.p_m is None


def test_propagate_in_cut_windows_mixes_with_the_windows_block_of_the_whole_graphs_matrix():
    # window_edges='cut': each window's encoder propagates with its block of the whole
    # graph's P = D^-1/2 (A + I) D^-1/2 (degrees not recomputed, embed_window), and so does
    # the mixing: PReLU(g(P_w (P_w X W + b))), the official script as first published
    hp = dict(windows=2, window_size=9, window_edges="cut", mix_at="pre_activation")
    # (a low temperature: the loss sharp enough to tell the two matrices apart)
    method, model, inputs = _setup(mixing="propagate", diversity=0.0, temperature=0.05, **hp)
    key = jax.random.key(4)
    g = inputs.graph
    n = g.nodes.shape[0]
    a = np.eye(n)
    a[np.asarray(g.receivers), np.asarray(g.senders)] = 1.0
    d = 1.0 / np.sqrt(a.sum(1))
    p = (d[:, None] * a * d[None, :]).astype(np.float32)
    starts = np.asarray(node_windows(jax.random.split(key)[1], n, 2, 9))[:, 0]

    @nnx.jit
    def both(model):  # one compiled program: eager, the windows' ops are slow on CPU
        per_window = []
        for start in starts:
            z_a, z_b = model.embed_window(inputs, jnp.asarray(start), 9)
            block = p[start : start + 9, start : start + 9]
            hard = model.a_act(model.g(block @ z_a))
            per_window.append(losses.mmix_node_loss(hard, z_b, temperature=0.05))
        return method.loss(model, inputs, key, {})[0], jnp.mean(jnp.stack(per_window))

    loss, want = both(model)
    inside = (np.arange(n) >= starts[0]) & (np.arange(n) < starts[0] + 9)
    assert a[inside][:, ~inside].any()  # the window cuts edges: its own degrees would differ
    np.testing.assert_allclose(loss, want, rtol=1e-5)


@pytest.mark.parametrize(
    ("hp", "message"),
    [
        (
            dict(mixing="gat"),
            r"config.method.mixing = 'gat'.*\['random', 'binary', 'mo', 'mp', 'none', "
            r"'propagate'\]",
        ),
        (dict(mixing="propagate", partners="op"), r"'propagate' weighs.*got 'op' and 0.0"),
        (dict(mixing="propagate", mix_dropout=0.1), r"'propagate' weighs.*got 'wp' and 0.1"),
        (dict(partners="knn"), r"config.method.partners = 'knn'"),
        (dict(mixing="mo", diversity=1.0), r"diversity = 1.0.*mixing='mo'"),
        (dict(mixing="random", diversity=-1.0), r"diversity = -1.0.*mixing='random'"),
        (dict(self_weight=1.5), r"self_weight = 1.5"),
        (dict(temperature=0.0), r"temperature = 0.0"),
        (dict(block_size=-1), r"block_size = -1"),
        (dict(eval_features="both"), r"eval_features = 'both'"),
        (dict(negatives="intra"), r"negatives = 'intra'"),
        (dict(mix_at="input"), r"mix_at = 'input'"),
        (dict(mix_temperature=0.0), r"mix_temperature = 0.0: expected a number in \(0.0, inf\)"),
    ],
)
def test_bad_settings_are_named(hp, message):
    with pytest.raises(ValueError, match=message):
        methods.MVGRLMix(_config(**hp))


@pytest.mark.parametrize(
    ("name", "data", "key", "hp"),
    [
        ("mvgrl_mmix", "cora", "threshold", dict(mixing="random", partners="op")),
        ("mvgrl_mmix", "cora", "threshold", dict(mixing="none", partners="op")),
        ("mvgrl_mmix", "cora", "self_weight", dict(mixing="mp")),
        ("mvgrl_mmix", "cora", "self_weight", dict(mixing="propagate")),
        ("mvgrl_mmix", "cora", "mix_temperature", dict(mixing="random")),
        ("mvgrl_mmix", "cora", "mix_temperature", dict(mixing="binary")),
        ("mvgrl_mmix", "cora", "mix_dropout", dict(mixing="none")),
        ("mvgrl_mmix", "cora", "block_size", dict(mixing="none", partners="op")),
        ("grace_mmix", "cora", "self_weight", dict(mixing="mp")),
        ("mvgrl_graph_mmix", "mutag", "self_weight", dict(mixing="random")),
        ("simclr_mmix", "cifar10", "self_weight", dict(mixing="binary", threshold=-1.0)),
    ],
)
def test_keys_the_mixing_ignores_are_refused_away_from_their_defaults(name, data, key, hp):
    # each of these used to be read and ignored: the run would not be the one asked for
    c = training.base_config(data, name, optimizer="adam")
    c.method.update(hp)
    if "diversity" in c.method:
        c.method.diversity = 0.0
    value = 64 if key == "block_size" else 0.5
    c.method[key] = value
    with pytest.raises(
        ValueError, match=rf"config.method.{key} = {value}: mixing='{c.method.mixing}'"
    ):
        methods.get(name)(c)
    c.method[key] = methods.get(name).defaults[key]  # at the default: accepted
    methods.get(name)(c)


def test_pre_activation_needs_one_gcn_layer():
    c = _config(mix_at="pre_activation")
    c.model.encoder_depth = 2
    with pytest.raises(ValueError, match=r"mix_at = 'pre_activation'.*encoder_depth = 1, got 2"):
        methods.MVGRLMix(c)


def _experiment(row, arg, kind="node"):
    path = REPO / "experiments" / "mmix" / f"{kind}_{row}.py"
    # (kind "grace": experiments/mmix/grace_mp.py)
    spec = importlib.util.spec_from_file_location("cfg", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


@pytest.mark.parametrize("row", ROWS)
def test_every_row_config_validates_with_the_papers_setup(row):
    for arg in ("cora", "citeseer,op", "cora,quick"):
        c = _experiment(row, arg)
        training.validate(c)
        methods.MVGRLMix(c)
    c = _experiment(row, "citeseer")
    assert (c.optim.name, c.optim.lr, c.model.encoder_depth, c.method.temperature) == (
        "adam_l2",
        3e-4,
        1,
        1.0,
    )
    assert c.method.partners == "wp" and _experiment(row, "cora,op").method.partners == "op"
    assert c.method.mixing == mmix_node.ROWS[row]["mixing"]
    assert c.method.diversity == (1.0 if row == "mp" else 0.0)


def test_short_run_on_cora_trains_and_evaluates(tmp_path):
    if not (DATA / "planetoid").is_dir():
        pytest.fail(f"benchmark data not found at {DATA} (../shared/data beside the checkout)")
    c = _experiment("mp", "cora,quick")
    c.data.data_dir = str(DATA)
    c.train.epochs = 3
    c.eval.node_classifier_runs = 3
    c.eval.node_every_epochs = 3
    results = training.train_and_evaluate(c, str(tmp_path))
    assert results["test_top1_std_over_classifiers"] >= 0.0
    # The final score is the last epoch's evaluation (not run twice), the mean of one
    # classifier per seed (seed, seed + 1000, ...) on the trained model's embeddings.
    (last,) = json.loads((tmp_path / "eval_history.json").read_text())
    assert last["epoch"] == 3 and last["node_test_acc"] == results["test_top1"]
    run, state = training.load_run(c, str(tmp_path))
    with jax.set_mesh(run.mesh):
        x = np.asarray(run.method.features(run.model(state), run.task.graph))
    ds = run.task.ds
    # MVGRL's classifier: 300 Adam steps on the raw embeddings, the last step's accuracy
    mvgrl = dict(steps=300, eval_every=300, normalize=None, weight_decay=0.0)
    masks = (ds.train_mask, ds.val_mask, ds.test_mask)
    one = [
        evaluation.node_logistic_regression(x, ds.labels, *masks, num_classes=7, seed=s, **mvgrl)
        for s in (c.seed, c.seed + 1000, c.seed + 2000)
    ]
    assert all(r["best_step"] == 300 for r in one)
    one = [r["test_acc"] for r in one]
    assert results["test_top1"] == pytest.approx(np.mean(one), abs=1e-12)
    assert results["steps"] == 3 and np.isfinite(results["final_loss"])
    assert 0.0 < results["test_top1"] <= 1.0
    assert -1.0 <= results["cluster_nmi"] <= 1.0 and -1.0 <= results["cluster_ari"] <= 1.0
    assert json.loads((tmp_path / "results.json").read_text())["method"] == "mvgrl_mmix"


def test_node_evaluation_keys_are_validated():
    c = _experiment("mp", "cora")
    assert (c.eval.node_classifier_runs, c.eval.node_clustering) == (50, True)
    assert (c.eval.node_classifier_steps, c.eval.node_classifier_eval_every) == (300, 300)
    assert c.eval.node_classifier_normalize == "none"
    assert c.eval.node_classifier_weight_decay == 0.0
    assert _experiment("mp", "citeseer").eval.node_classifier_weight_decay == 0.01
    # MVGRL's code's Citeseer view for every Citeseer row, the plain PPR on Cora
    for row in ("random", "binary", "mo", "mp_nodiv", "mp"):
        cite, cora = _experiment(row, "citeseer").method, _experiment(row, "cora").method
        assert cite.ppr_match_degree and cite.ppr_minmax, row
        assert not (cora.ppr_match_degree or cora.ppr_minmax), row
    from jaxcl.configs import mvgrl_node

    assert mvgrl_node.make("citeseer").method.ppr_minmax
    assert not mvgrl_node.make("cora").method.ppr_match_degree
    for key, value in [
        ("node_classifier_runs", 0),
        ("node_classifier_steps", 0),
        ("node_classifier_eval_every", -1),
        ("node_classifier_normalize", "unit"),
        ("node_classifier_weight_decay", -0.1),
    ]:
        bad = _experiment("mp", "cora")
        bad.eval[key] = value
        with pytest.raises(training.ConfigError, match=f"eval.{key}"):
            training.validate(bad)


@pytest.mark.parametrize("mixing", ["mo", "binary"])
def test_simclr_mmix_loss_is_nt_xent_of_the_mixed_first_view(mixing):
    from jaxcl.methods._images import simclr_views

    c = _image_experiment("mo_op" if mixing == "mo" else "binary", "cpu")
    c.model.base_width = 4
    c.model.head_width = c.model.embed_dim = 8
    if mixing == "mo":  # (the row's 0.95 leaves this untrained model's rows no partner:
        c.method.threshold = 0.0  # nothing would be mixed; at 0 some rows have partners)
    method = methods.get(c.method.name)(c)
    model = method.build(methods.DataSpec("image", 0, 10, (28, 28, 1)), nnx.Rngs(0))
    x = jnp.asarray(np.random.default_rng(0).integers(0, 255, (6, 28, 28, 1)), jnp.uint8)
    key = jax.random.key(3)

    @nnx.jit
    def both(model, x):  # one compiled program: eager ResNet ops are slow on CPU
        loss, _ = method.loss(model, methods.Batch(x, jnp.zeros(6, jnp.int32)), key, {})
        a, b = simclr_views(key, x, method.hp)
        z_a, z_b = jnp.split(model(jnp.concatenate([a, b])), 2)

        def mix(z):
            if mixing == "mo":
                return mixers.mo_mix(z, self_weight=0.2, threshold=0.0)
            return mixers.binary_mix(z)

        def loss_of(hard):
            return losses.nt_xent(hard, z_b, temperature=c.method.temperature)

        # The unit embeddings are mixed (the paper's analysis, the official code).
        return loss, loss_of(mix(losses.l2_normalize(z_a))), loss_of(mix(z_a))

    loss, want, unnormalised = both(model, x)
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    assert abs(float(unnormalised) - float(want)) > 1e-4 * abs(float(want)), (unnormalised, want)


def _image_experiment(row, arg):
    return _experiment(row, arg, kind="image")


def test_image_rows_follow_the_official_setup():
    for row in ("simclr", "binary", "mo_op"):
        for arg in (None, "cifar100", "cpu"):
            training.validate(_image_experiment(row, arg))
    c = _image_experiment("mo_op", "cifar10")
    assert (c.model.resnet_depth, c.train.epochs, c.optim.name, c.optim.lr) == (
        18,
        500,
        "adam",
        1e-3,
    )
    assert (c.method.temperature, c.method.threshold, c.method.self_weight) == (0.4, 0.95, 0.2)
    with pytest.raises(ValueError, match="threshold = 1.5"):
        c.method.threshold = 1.5
        methods.SimCLRMix(c)


def test_grace_mmix_mixes_the_first_view_over_its_kept_edges():
    c = _experiment("mp", "cora,quick", kind="grace")
    assert (c.method.name, c.method.mixing, c.method.diversity) == ("grace_mmix", "mp", 1.0)
    assert c.method.p_e1 == 0.2 and c.optim.lr == 1e-4  # GRACE's Cora row (ESCo Table 4)
    c.method.sparse_layout = "off"
    c.model.encoder_width = c.model.head_width = c.model.embed_dim = 8
    method = methods.get("grace_mmix")(c)
    ds = _toy()
    model = method.build(methods.DataSpec("node", 6, 3), nnx.Rngs(0))
    graph = method.node_inputs(ds, graphs.node_graph(ds))
    key = jax.random.key(2)
    loss, metrics = method.loss(model, graph, key, {})
    k_views, k_mix = jax.random.split(key)
    (x1, m1), (x2, m2) = method.views(graph, k_views)
    z1 = model.encoder(graph._replace(nodes=x1), edge_mask=m1)
    z2 = model.encoder(graph._replace(nodes=x2), edge_mask=m2)
    p_m, p_n = model.projections()
    kept = np.asarray(m1)
    hard = mixers.mp_mix(z1, p_m, p_n, senders=graph.senders[kept], receivers=graph.receivers[kept])
    want = losses.nt_xent(model.head(hard), model.head(z2), temperature=c.method.temperature)
    want = want + losses.mmix_diversity_loss(z1, p_m, p_n)
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    assert set(metrics) == {"loss", "contrast", "diversity_loss"}


@pytest.mark.parametrize("row", ROWS)
def test_pubmed_rows_run_on_a_random_graph_of_its_size(row):
    c = _experiment(row, "pubmed")
    training.validate(c)
    assert (c.data.synthetic, c.data.synthetic_scale) == (True, 1.0)
    assert (c.method.diffusion, c.method.ppr_eps) == ("sparse", 1e-4)  # no dense 19717^2 PPR
    assert _experiment(row, "pubmed,quick").data.synthetic_scale == 0.1
    for bad in (0.0, 1.5):
        c.data.synthetic_scale = bad
        with pytest.raises(training.ConfigError, match=f"config.data.synthetic_scale = {bad}"):
            training.validate(c)


@pytest.mark.parametrize(
    "path, arg, method",
    [
        ("experiments/mmix/node_mp.py", "pubmed,quick", "mvgrl_mmix"),
        ("experiments/mvgrl/pubmed.py", "quick", "mvgrl"),
        ("experiments/mmix/grace_mp.py", "dblp,quick", "grace_mmix"),
    ],
)
def test_pubmed_and_dblp_configs_train_on_a_tenth_of_the_synthetic_graph(
    tmp_path, path, arg, method
):
    spec = importlib.util.spec_from_file_location("cfg", REPO / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    c = module.get_config(arg)
    c.train.epochs = 2
    c.repeats = 1
    c.eval.node_classifier_runs = min(c.eval.node_classifier_runs, 2)
    results = training.train_and_evaluate(c, str(tmp_path))
    assert results["method"] == method and results["steps"] == 2
    assert np.isfinite(results["final_loss"]) and 0.0 <= results["test_top1"] <= 1.0
    name = "dblp" if "dblp" in arg else "pubmed"
    assert json.loads((tmp_path / "results.json").read_text())["data"] == name
    task = training.make_task(c, methods.get(method)(c), training.make_mesh(1))
    # a tenth of 19,717 / 17,716 nodes and of 44,324 / 52,867 undirected edges
    want = {"pubmed": (1972, 2 * 4432), "dblp": (1772, 2 * 5287)}[name]
    assert (task.ds.num_nodes, task.ds.num_edges) == want


def test_grace_dblp_follows_graces_config_and_has_no_esco_lambda():
    c = _experiment("mp", "dblp", kind="grace")
    training.validate(c)
    assert (c.data.synthetic, c.train.epochs, c.optim.lr, c.model.encoder_width) == (
        True, 1000, 1e-3, 256
    )  # fmt: skip
    m = c.method
    assert (m.p_e1, m.p_e2, m.p_f1, m.p_f2, m.temperature) == (0.1, 0.4, 0.1, 0.0, 0.7)
    from jaxcl.configs import grace_node

    with pytest.raises(ValueError, match="dblp: no ESCo lambda for 'rff'"):
        grace_node.make("dblp", "rff")


def test_dblp_without_synthetic_names_the_key(tmp_path):
    c = _experiment("mp", "dblp,quick", kind="grace")
    c.data.synthetic = False
    with pytest.raises(training.ConfigError, match="config.data.synthetic=True"):
        training.train_and_evaluate(c, str(tmp_path))


def _node_curves(name="node_curves"):
    spec = importlib.util.spec_from_file_location(name, REPO / f"experiments/mmix/{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_node_table_takes_runs_own_results(tmp_path, capsys):
    def run(name, seed, acc, epochs=200, data="cora"):
        workdir = tmp_path / name
        workdir.mkdir()
        (workdir / "config.json").write_text(
            json.dumps({"seed": seed, "data": {"name": data}, "train": {"epochs": epochs}})
        )
        result = {"test_top1": acc, "cluster_nmi": 0.5, "cluster_ari": 0.4}
        (workdir / "results.json").write_text(json.dumps(result))
        return str(workdir)

    table = _node_curves("node_table")
    runs = [f"mp={run('a', 0, 0.82)}", f"mp={run('b', 1, 0.84)}", f"mvgrl={run('c', 0, 0.8, 300)}"]
    table.main(["--data", "cora", "--runs", *runs, "--out", str(tmp_path / "out")])
    out = json.loads((tmp_path / "out" / "node_table_cora.json").read_text())["rows"]
    assert out["mp"]["seeds"] == [0, 1] and out["mp"]["test_acc"] == pytest.approx([82.0, 84.0])
    assert out["mvgrl"]["nmi"] == [0.5] and out["mvgrl"]["mean"] == pytest.approx(80.0)
    assert "| + mp-mix | 85.9 ± 0.3 | 83.0 ± 1.4 | 2 (0, 1) |" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="a run of cora for 300 epochs; expected cora for 200"):
        table.main(["--data", "cora", "--runs", runs[2].replace("mvgrl=", "mp=")])
    with pytest.raises(SystemExit, match="expected citeseer for 200"):
        table.main(["--data", "citeseer", "--runs", runs[0]])
    with pytest.raises(SystemExit, match="seed 0 found twice"):
        table.main(["--data", "cora", "--runs", runs[0], runs[0], "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="expected row=workdir holding results.json"):
        table.main(["--data", "cora", "--runs", f"mp={tmp_path}"])


def test_node_table_takes_each_rows_epoch_from_every_seed(tmp_path, capsys):
    def curves(seed, rows, clustering=False):
        out = {}
        for row, (epochs, accs) in rows.items():
            out[row] = {"seed": seed, "protocols": {"mvgrl": {"epochs": epochs, "test_acc": accs}}}
            if clustering:
                out[row]["clustering"] = {"epochs": epochs, "nmi": [0.5] * len(epochs),
                                          "ari": [0.25 + seed / 10] * len(epochs)}  # fmt: skip
        path = tmp_path / f"s{seed}.json"
        path.write_text(json.dumps({"data": "cora", "rows": out}))
        return str(path)

    files = [
        curves(0, {"mp": ([100, 200], [80.0, 82.0]), "mvgrl": ([100, 200, 300], [1, 2, 83.0])}),
        curves(1, {"mp": ([100, 200], [80.0, 84.0]), "none": ([200], [81.0])}, clustering=True),
        curves(2, {"mp": ([100], [70.0])}),  # no checkpoint at 200: left out
    ]
    table = _node_curves("node_table")
    table.main(["--data", "cora", "--jsons", *files, "--out", str(tmp_path / "out")])
    out = json.loads((tmp_path / "out" / "node_table_cora.json").read_text())["rows"]
    assert list(out) == ["mvgrl", "none", "mp"]  # the paper's order, the control after MVGRL
    assert out["mp"]["seeds"] == [0, 1] and out["mp"]["test_acc"] == [82.0, 84.0]
    assert out["mp"]["mean"] == 83.0 and out["mp"]["std"] == pytest.approx(np.sqrt(2))
    assert out["mvgrl"]["test_acc"] == [83.0] and out["mvgrl"]["std"] == 0.0  # epoch 300
    assert out["mp"]["ari"] == [pytest.approx(0.35)] and out["mvgrl"]["nmi"] == []
    printed = capsys.readouterr().out
    assert (
        "| + mp-mix | 85.9 ± 0.3 | 83.0 ± 1.4 | 2 (0, 1) | 82.00, 84.00 | 0.500 / 0.350 (1) |"
        in printed
    )
    assert (tmp_path / "out" / "node_table_cora.png").stat().st_size > 5_000
    assert "s2.json: mp (seed 2) left out: no checkpoint at epoch 200" in printed
    with pytest.raises(SystemExit, match=r"s0.json: curves of cora, not of --data citeseer"):
        table.main(["--data", "citeseer", "--jsons", *files, "--out", str(tmp_path / "c")])
    table.main(
        ["--data", "cora", "--jsons", *files, "--out", str(tmp_path / "o"), "--epoch", "mp=100"]
    )
    mp = json.loads((tmp_path / "o" / "node_table_cora.json").read_text())["rows"]["mp"]
    assert mp["test_acc"] == [80.0, 80.0, 70.0]
    with pytest.raises(SystemExit, match="seed 0 found twice"):
        table.main(["--data", "cora", "--jsons", files[0], files[0], "--out", str(tmp_path)])
    rerun = curves(0, {"mp": ([200], [81.5])})  # the same seed again: --first keeps it
    table.main(["--data", "cora", "--jsons", rerun, *files, "--out", str(tmp_path), "--first"])
    mp = json.loads((tmp_path / "node_table_cora.json").read_text())["rows"]["mp"]
    assert mp["seeds"] == [0, 1] and mp["test_acc"] == [81.5, 84.0]
    with pytest.raises(SystemExit, match="--epoch 'mp'"):
        table.main(["--data", "cora", "--jsons", files[0], "--epoch", "mp"])


def test_node_table_picks_the_best_checkpoint_on_test_up_to_the_rows_epoch(tmp_path, capsys):
    # the official node script's curve read at its maximum: best mean, or best max over the
    # classifiers, among the checkpoints up to the row's epoch (not after it)
    def curves(seed, epochs, mean, best):
        p = {"epochs": epochs, "test_acc": mean, "test_acc_max_over_classifiers": best}
        rows = {"mp": {"seed": seed, "protocols": {"mvgrl": p}}}
        path = tmp_path / f"s{seed}.json"
        path.write_text(json.dumps({"data": "cora", "rows": rows}))
        return str(path)

    files = [
        curves(0, [10, 20, 200, 210], [81.0, 83.0, 82.0, 90.0], [84.0, 83.5, 85.0, 95.0]),
        curves(1, [10, 200], [84.0, 84.0], [86.0, 86.0]),  # tied: the earliest
    ]
    table = _node_curves("node_table")
    for pick, accs, at in [
        ("last", [82.0, 84.0], [200, 200]),
        ("best", [83.0, 84.0], [20, 10]),
        ("best_max", [85.0, 86.0], [200, 10]),
    ]:
        out_dir = tmp_path / pick
        table.main(["--data", "cora", "--jsons", *files, "--out", str(out_dir), "--pick", pick])
        out = json.loads((out_dir / "node_table_cora.json").read_text())
        assert out["pick"] == pick
        assert out["rows"]["mp"]["test_acc"] == accs and out["rows"]["mp"]["picked_epochs"] == at
    assert "83.00, 84.00 (epochs 20, 10)" in capsys.readouterr().out
    # argparse exits with status 2 and writes its message to stderr
    with pytest.raises(SystemExit) as refused:  # not a choice
        table.main(["--data", "cora", "--jsons", *files, "--pick", "first"])
    assert refused.value.code == 2
    assert "argument --pick: invalid choice: 'first'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # runs hold only their last epoch's result
        table.main(["--data", "cora", "--runs", f"mp={tmp_path}", "--pick", "best"])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "--runs with --pick best: runs hold their last epoch's result" in err


def test_node_curves_early_stopping_is_mvgrls_rule():
    early_stop = _node_curves().early_stop
    # MVGRL's loop: a loss below the best resets the wait; `patience` epochs without one stop.
    losses = np.array([5.0, 4.0, 4.5, 4.2, 3.9, 4.0, 4.1, 3.95, 3.8])
    assert early_stop(losses, patience=2) == (4, 2)
    assert early_stop(losses, patience=3) == (8, 5)
    assert early_stop(losses, patience=4) == (9, 9)  # never stops: the last epoch, its best


def test_node_curves_scores_every_checkpoint_with_both_classifiers(tmp_path):
    if not (DATA / "planetoid").is_dir():
        pytest.fail(f"benchmark data not found at {DATA} (../shared/data beside the checkout)")
    c = _experiment("mp", "cora,quick")
    c.data.data_dir = str(DATA)
    c.train.epochs = 4
    c.train.log_every_steps = 1
    c.train.checkpoint_every_steps = 2
    c.eval.node_classifier_runs = 3
    run_dir = tmp_path / "mp"
    results = training.train_and_evaluate(c, str(run_dir))
    module = _node_curves()
    out = tmp_path / "out"
    module.main(["--data", "cora", "--runs", f"mp={run_dir}", "--out", str(out), "--classifiers=3"])
    out = json.loads((out / "node_curves_cora.json").read_text())
    row = out["rows"]["mp"]
    assert set(row["protocols"]) == {"mvgrl", "grace"}
    mvgrl, grace = row["protocols"]["mvgrl"], row["protocols"]["grace"]
    assert mvgrl["epochs"] == grace["epochs"] == [2, 4]
    # The configs' classifier is MVGRL's: the last checkpoint's score is the run's result.
    assert mvgrl["test_acc"][-1] == pytest.approx(100 * results["test_top1"], abs=1e-9)
    assert (mvgrl["steps"], grace["steps"]) == (300, 5000)
    assert mvgrl["test_acc"] != grace["test_acc"]
    assert out["paper"]["mp"] == 85.9 and row["lr"] == c.optim.lr
    assert set(row["early_stopping"]) == {"20", "30"}
    assert row["early_stopping"]["20"] == [4, int(np.argmin(module.logged_losses(run_dir)[1])) + 1]
    assert (tmp_path / "out" / "node_curves_cora.png").stat().st_size > 10_000
    for lo, mean, hi in zip(
        mvgrl["test_acc_min_over_classifiers"], mvgrl["test_acc"],
        mvgrl["test_acc_max_over_classifiers"], strict=True,
    ):  # fmt: skip
        assert lo <= mean <= hi and lo < hi  # 3 classifiers from different initialisations
    # One classifier and the clustering: the last checkpoint's k-means is the run's own.
    module.main([
        "--data", "cora", "--runs", f"mp={run_dir}", "--out", str(tmp_path / "out"),
        "--classifiers=3", "--protocols", "mvgrl", "--clustering", "--tag", "_k",
    ])  # fmt: skip
    row = json.loads((tmp_path / "out" / "node_curves_cora_k.json").read_text())["rows"]["mp"]
    assert set(row["protocols"]) == {"mvgrl"}
    assert row["protocols"]["mvgrl"]["test_acc"] == mvgrl["test_acc"]
    assert row["clustering"]["epochs"] == [2, 4]
    assert row["clustering"]["nmi"][-1] == pytest.approx(results["cluster_nmi"], abs=1e-6)
    assert row["clustering"]["ari"][-1] == pytest.approx(results["cluster_ari"], abs=1e-6)
    assert (tmp_path / "out" / "node_curves_cora_k.png").stat().st_size > 10_000
    # A run whose loss was not logged every epoch cannot say where early stopping stops.
    c.train.log_every_steps = 2
    training.train_and_evaluate(c, str(tmp_path / "every2"))
    with pytest.raises(SystemExit, match="not logged every epoch"):
        module.main(["--data", "cora", "--runs", f"mp={tmp_path / 'every2'}"])


def test_mixing_weights_recomputes_each_mixers_weights_from_a_trained_run(tmp_path, capsys):
    if not (DATA / "planetoid").is_dir():
        pytest.fail(f"benchmark data not found at {DATA} (../shared/data beside the checkout)")
    workdirs = []
    for row in ("mp", "mo"):
        c = _experiment(row, "cora,quick")
        c.data.data_dir = str(DATA)
        c.train.epochs = 1
        c.eval.node_classifier_runs = 1
        training.train_and_evaluate(c, str(tmp_path / row))
        workdirs.append(f"{row}={tmp_path / row}")
    script = _node_curves("mixing_weights")
    # main() raises unless the weights it recomputes give each mixer's own output
    script.main(["--data", "cora", "--runs", *workdirs, "--out", str(tmp_path / "out")])
    table = json.loads((tmp_path / "out" / "mixing_weights_cora.json").read_text())
    assert table["mo"]["corr_logit_cos"] == pytest.approx(1.0, abs=1e-9)  # mo's logit: cos
    assert table["mo"]["self_weight"] == pytest.approx(0.2)  # C, for nodes with neighbours
    for row in ("mp", "mo"):
        t = table[row]
        assert 0.0 < t["entropy_ratio"] <= 1.0 + 1e-9 and t["check_rel_err"] < 1e-4
        assert 0.0 <= t["same_label_weight"] <= 1.0 and 0.0 <= t["same_label_share"] <= 1.0
    assert -1.0 <= table["mp"]["cos_pm_minus_pn"] <= 1.0 and "cos_pm_minus_pn" not in table["mo"]
    assert (tmp_path / "out" / "mixing_weights_cora.png").is_file()


def test_mixing_weights_summary_on_a_hand_made_star():
    # node 0 with neighbours 1 (same label, weight 0.5) and 2 (other label, 0.3), self 0.2
    script = _node_curves("mixing_weights")
    w = dict(
        z=np.zeros((3, 2)),
        senders=np.array([1, 2]),
        receivers=np.array([0, 0]),
        edge_logit=np.array([1.0, 0.0]),
        edge_cos=np.array([0.5, -0.5]),
        w_edge=np.array([0.5, 0.3]),
        w_self=np.array([0.2, 1.0, 1.0]),
        check_rel_err=0.0,
        mix_temperature=1.0,
    )
    t = script.summarize(w, np.array([0, 0, 1]))
    entropy = -(0.5 * np.log(0.5) + 0.3 * np.log(0.3) + 0.2 * np.log(0.2))
    assert t["entropy_ratio"] == pytest.approx(entropy / np.log(3))
    # against uniform neighbours beside the fixed self weight (0.4, 0.4, 0.2), not log 3
    uniform = -(2 * 0.4 * np.log(0.4) + 0.2 * np.log(0.2))
    assert t["entropy_ratio_to_uniform"] == pytest.approx(entropy / uniform)
    assert t["mix_temperature"] == 1.0
    assert t["logit_range"] == pytest.approx(1.0) and t["self_weight"] == pytest.approx(0.2)
    assert t["same_label_weight"] == pytest.approx(0.5 / 0.8)
    assert t["same_label_share"] == pytest.approx(0.5)
    assert t["corr_logit_cos"] == pytest.approx(1.0)
