"""ESCo's synthetic study: the data generator, the paired-views task and ``esco_pairs``."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from flax import nnx

from jaxcl import data as data_lib
from jaxcl import losses, methods, training
from jaxcl.configs import esco_synthetic as cfg_lib

REPO = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def small():
    return data_lib.esco_synthetic(600, num_features=48, seed=3)


def test_generator_shapes_dtypes_and_determinism(small):
    again = data_lib.esco_synthetic(600, num_features=48, seed=3)
    other = data_lib.esco_synthetic(600, num_features=48, seed=4)
    for name in ("x", "x_a", "x_b"):
        arr = getattr(small, name)
        assert arr.shape == (600, 48) and arr.dtype == np.float32
        np.testing.assert_array_equal(arr, getattr(again, name))
        assert not np.allclose(arr, getattr(other, name))
    assert small.y.dtype == np.int32 and small.num_classes == 8 and small.num_features == 48
    np.testing.assert_array_equal(small.y, again.y)


def test_standardized_over_the_three_arrays(small):
    stacked = np.concatenate([small.x, small.x_a, small.x_b])
    np.testing.assert_allclose(stacked.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(stacked.std(axis=0), 1, atol=1e-4)
    raw = data_lib.esco_synthetic(600, num_features=48, seed=3, standardize=False)
    # Softmax after the last layer: rows of the raw features are probability vectors.
    np.testing.assert_allclose(raw.x.sum(axis=1), 1, atol=1e-5)
    assert (raw.x > 0).all()
    # Standardising (in float64, before the cast) is a per-column affine map, the same for x
    # and its views; the raw float32 features lose some of their tiny spread to rounding.
    for col in (0, 17, 47):
        assert np.corrcoef(small.x[:, col], raw.x[:, col])[0, 1] > 0.999
        assert np.corrcoef(small.x_b[:, col], raw.x_b[:, col])[0, 1] > 0.999


def test_views_share_the_hidden_vector_and_only_it(small):
    """x, x^A and x^B of one example share h; their rows correlate far more with each other
    than with another example's rows, and x^A with x^B as much as each with x."""

    def row_corr(a, b):
        a = a - a.mean(axis=1, keepdims=True)
        b = b - b.mean(axis=1, keepdims=True)
        return np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)

    same = row_corr(small.x_a, small.x_b).mean()
    other = row_corr(small.x_a, np.roll(small.x_b, 1, axis=0)).mean()
    with_x = row_corr(small.x, small.x_a).mean()
    assert same > other + 0.2, (same, other)
    assert abs(same - with_x) < 0.05, (same, with_x)


def test_label_activation_readings_in_the_docstring():
    """The docstring's reason for ReLU in the label MLP: softmax there leaves 2 of 8 classes
    (478 and 3522 examples with seed 0); ReLU uses all 8."""
    relu = np.bincount(data_lib.esco_synthetic().y, minlength=8)
    soft = np.bincount(data_lib.esco_synthetic(label_activation="softmax").y, minlength=8)
    assert (relu > 0).all()
    assert sorted(soft[soft > 0]) == [478, 3522]


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"num_samples": 0}, "num_samples = 0: expected an integer >= 1"),
        ({"num_classes": 1}, "num_classes = 1"),
        ({"num_features": True}, "num_features = True"),
        ({"activation": "gelu"}, r"activation = 'gelu': expected one of \['softmax'"),
        ({"label_activation": "elu"}, "label_activation = 'elu'"),
        ({"seed": -1}, "seed = -1"),
    ],
)
def test_generator_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        data_lib.esco_synthetic(**{"num_samples": 10, **kw})


def _quick(row="simclr", **method):
    c = cfg_lib.make(row, "quick")
    with c.unlocked():
        c.method.update(method)
    return c


def test_simclr_row_is_nt_xent_on_the_encoder_outputs():
    """The SimCLR row (exact kernel, lam = 1 / (2 tau), both negative sets) is NT-Xent."""
    c = _quick(temperature=0.7, lam=1 / 1.4)
    method = methods.get("esco_pairs")(c)
    spec = methods.DataSpec("paired", 64, 8)
    model = method.build(spec, nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(1), (16, 2, 64))
    loss, _ = method.loss(model, methods.Batch(x=x, y=np.zeros(16, np.int32)), None, {})
    z_a, z_b = model(x[:, 0]), model(x[:, 1])
    np.testing.assert_allclose(loss, losses.nt_xent(z_a, z_b, temperature=0.7), rtol=1e-5)


@pytest.mark.parametrize("redraw", [True, False])
def test_redraw_features_false_keeps_one_draw_for_the_run(redraw):
    """Afresh each step (default): two step keys give two estimates, the run's seed does not
    matter. Kept: one estimate whatever the step's key, another one for another run seed."""
    c = _quick("rff", redraw_features=redraw)
    method = methods.get("esco_pairs")(c)
    model = method.build(methods.DataSpec("paired", 64, 8), nnx.Rngs(0))
    batch = methods.Batch(x=jax.random.normal(jax.random.key(1), (16, 2, 64)), y=None)
    l1, l2 = (method.loss(model, batch, jax.random.key(k), {})[0] for k in (2, 3))
    with c.unlocked():
        c.seed += 1
    l3 = methods.get("esco_pairs")(c).loss(model, batch, jax.random.key(2), {})[0]
    assert (float(l1) == float(l2)) is not redraw  # the step's key matters only when redrawn
    assert (float(l3) == float(l1)) is redraw  # the run's seed matters only when kept


def test_redraw_features_must_be_a_bool():
    with pytest.raises(TypeError, match="'redraw_features'.* cannot be casted to .*bool"):
        _quick("rff", redraw_features=1)


def test_esco_pairs_rejects_a_batch_without_two_views():
    method = methods.get("esco_pairs")(_quick())
    model = method.build(methods.DataSpec("paired", 64, 8), nnx.Rngs(0))
    with pytest.raises(ValueError, match=r"expected \[batch, 2, features\]"):
        method.loss(model, methods.Batch(x=np.zeros((4, 64)), y=np.zeros(4)), None, {})


def test_esco_pairs_bad_hyperparameter_names_the_key():
    with pytest.raises(ValueError, match="config.method.rf_method = 'nystrom'"):
        methods.get("esco_pairs")(_quick(rf_method="nystrom"))


@pytest.mark.parametrize("row", ["sorf", "none"])
def test_rows_train_and_evaluate_by_cross_validation(row, tmp_path):
    r = training.train_and_evaluate(_quick(row), str(tmp_path))
    assert 0.0 <= r["test_top1"] <= 1.0 and r["test_top1"] > 1.5 / 8  # above chance
    assert 0.0 <= r["fold_std"] < 0.2
    assert -1.0 <= r["mean_cosine"] <= 1.0 and 0.0 <= r["view_sq_distance"] <= 4.0
    if row != "none":
        assert r["evaluated_epochs"] == [1, 2] and len(r["per_epoch_top1"]) == 2
        assert np.isfinite(r["final_loss"])


def test_data_standardize_key_reaches_the_generator():
    """The configs train on the raw softmax features; ``data.standardize=True`` on columns
    standardised over x and its views."""
    from jaxcl.training import _paired_task

    c = _quick()
    raw = _paired_task.load_dataset(c.data)
    np.testing.assert_allclose(raw.x_a.sum(axis=1), 1, atol=1e-5)  # probability vectors
    with c.unlocked():
        c.data.standardize = True
    standardized = _paired_task.load_dataset(c.data)
    stacked = np.concatenate([standardized.x, standardized.x_a, standardized.x_b])
    np.testing.assert_allclose(stacked.std(axis=0), 1, atol=1e-4)


def test_hidden_activation_key_reaches_the_generator_and_spreads_the_features():
    """Softmax after every layer leaves the examples ~3e-6 apart (relative), too close for
    float32 gradients; ReLU hidden layers with a softmax output spread them by ~7%."""
    from jaxcl.training import _paired_task

    c = _quick()
    with c.unlocked():
        c.data.update(standardize=False, hidden_activation="softmax")
    softmax_everywhere = _paired_task.load_dataset(c.data)
    with c.unlocked():
        c.data.hidden_activation = "relu"
    relu_hidden = _paired_task.load_dataset(c.data)
    np.testing.assert_allclose(relu_hidden.x_a.sum(axis=1), 1, atol=1e-5)  # still softmax
    np.testing.assert_array_equal(relu_hidden.y, softmax_everywhere.y)  # the same labels
    assert _paired_task.relative_spread(softmax_everywhere.x) < 1e-4
    assert _paired_task.relative_spread(relu_hidden.x) > 1e-2
    # The generator's default (None) is the output activation after every layer.
    explicit = data_lib.esco_synthetic(64, num_features=32, hidden_activation="softmax")
    np.testing.assert_array_equal(data_lib.esco_synthetic(64, num_features=32).x, explicit.x)
    with pytest.raises(ValueError, match="hidden_activation = 'gelu'"):
        data_lib.esco_synthetic(8, hidden_activation="gelu")
    with c.unlocked():
        c.data.hidden_activation = "gelu"
    with pytest.raises(training.ConfigError, match="config.data.hidden_activation = 'gelu'"):
        training.train_and_evaluate(c, "/nonexistent")


def test_degenerate_features_are_warned_about(monkeypatch):
    from jaxcl.training import _paired_task

    warnings = []
    monkeypatch.setattr(_paired_task.logging, "warning", lambda *a: warnings.append(a[0] % a[1:]))
    for hidden in ("softmax", "relu"):
        c = _quick()
        with c.unlocked():
            c.data.update(standardize=False, hidden_activation=hidden)
        method = methods.get("esco_pairs")(c)
        _paired_task.PairedTask(c, method, training.make_mesh())
    assert len(warnings) == 1 and "rounding noise" in warnings[0]  # only softmax everywhere
    assert "config.data.standardize=True" in warnings[0]


def test_embedding_geometry_against_pairwise_numpy():
    from jaxcl.training import _paired_task

    rng = np.random.default_rng(0)
    f, f_a, f_b = (rng.normal(size=(50, 6)) + 0.3 for _ in range(3))
    g = _paired_task.embedding_geometry(f, f_a, f_b)
    u = f / np.linalg.norm(f, axis=1, keepdims=True)
    cosines = u @ u.T
    off_diagonal = cosines[~np.eye(50, dtype=bool)]
    np.testing.assert_allclose(g["mean_cosine"], off_diagonal.mean(), rtol=1e-12)
    u_a, u_b = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in (f_a, f_b))
    expected = np.mean([np.sum((a - b) ** 2) for a, b in zip(u_a, u_b, strict=True)])
    np.testing.assert_allclose(g["view_sq_distance"], expected, rtol=1e-12)
    # One direction for every example (lengths differ): collapsed; identical views: 0 apart.
    scaled = np.outer(rng.uniform(1, 2, 50), rng.normal(size=6))
    g = _paired_task.embedding_geometry(scaled, f_a, f_a)
    assert g["mean_cosine"] == pytest.approx(1.0, abs=1e-12) and g["view_sq_distance"] == 0
    # All-zero outputs have no direction: left out, and none left is NaN (warned about).
    half = np.concatenate([scaled[:25], np.zeros((25, 6))])
    assert _paired_task.embedding_geometry(half, f_a, f_b)["mean_cosine"] == pytest.approx(1.0)
    assert np.isnan(_paired_task.embedding_geometry(0 * f, f_a, f_b)["mean_cosine"])


def test_a_collapsed_encoder_is_reported_and_warned_about(monkeypatch):
    """ESCo's rows at lam >= 1 collapse on the ReLU reading (every output one direction);
    the cross-validated probe still scores them, so the task says so beside the score."""
    from jaxcl.training import _paired_task

    warnings = []
    monkeypatch.setattr(_paired_task.logging, "warning", lambda *a: warnings.append(a[0] % a[1:]))
    c = _quick()
    task = _paired_task.PairedTask(c, methods.get("esco_pairs")(c), training.make_mesh())
    direction = jax.numpy.linspace(1.0, 2.0, 16)

    def collapsed(x):  # one direction, lengths and a 1e-4 wobble from the input
        return direction * (1 + x[:, :1]) + 1e-4 * x[:, :16]

    scores = task.evaluate(collapsed, epoch=3)
    assert scores["mean_cosine"] > 0.999 and scores["view_sq_distance"] < 1e-6
    assert len(warnings) == 1 and "epoch 3: the encoder has collapsed" in warnings[0]
    centre = task.ds.x[:, :16].mean(axis=0)  # columns centred: spread over the sphere
    scores = task.evaluate(lambda x: x[:, :16] - centre, epoch=4)
    assert abs(scores["mean_cosine"]) < 0.05 and scores["view_sq_distance"] > 1e-3
    assert len(warnings) == 1
    # A history from before the keys (a rerun of an older workdir): the last epoch evaluated
    # again rather than a KeyError.
    epochs = c.train.epochs
    old = [{"epoch": epochs, "cv_top1": 0.5, "cv_top1_std": 0.0}]
    final = task.final(lambda x: x[:, :16] - centre, None, old)
    assert final["mean_cosine"] == pytest.approx(scores["mean_cosine"])


def test_gradient_check_finds_float32_noise_only_on_softmax_everywhere_raw(tmp_path):
    """The script's claim, on the quick sizes: in float32 the gradient is rounding noise on
    the unscaled softmax-after-every-layer data and close to float64 on the other readings."""
    script = REPO / "experiments" / "esco" / "synthetic_gradient_check.py"
    out = subprocess.run(  # a process of its own: the script switches on float64
        [sys.executable, str(script), "--variant", "quick", "--batch", "32",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    rows = json.loads((tmp_path / "synthetic_gradient_check.json").read_text())["rows"]
    assert len(rows) == 9
    for r in rows:
        if r["reading"] == "softmax after every layer, raw":
            assert r["relative_error"] > 1 and abs(r["cosine"]) < 0.5, r
            assert r["relative_spread"] < 1e-4
        else:
            # SORF's float64 pass differs from float32's by up to ~5e-2 (cosine > 0.998)
            assert r["relative_error"] < 0.2 and r["cosine"] > 0.99, r


def test_batch_larger_than_the_data_is_a_config_error(tmp_path):
    c = _quick()
    with c.unlocked():
        c.train.batch_size = 1024
    with pytest.raises(training.ConfigError, match="config.train.batch_size = 1024"):
        training.train_and_evaluate(c, str(tmp_path))


def test_paper_and_cpu_configs():
    paper, cpu = cfg_lib.make("sorf"), cfg_lib.make("rff", "cpu")
    # App. C: Adam 1e-5, no weight decay, 1500 epochs, tau = 1, D = 2048, 512-d embedding.
    assert (paper.optim.name, paper.optim.lr, paper.optim.weight_decay) == ("adam", 1e-5, 0.0)
    assert (paper.train.epochs, paper.method.temperature, paper.method.num_features) == (
        1500,
        1.0,
        2048,
    )
    assert (paper.method.rf_method, paper.method.lam, cpu.method.lam) == ("sorf", 1.5, 1.6)
    assert (paper.model.encoder_width, paper.model.encoder_out_dim) == (1024, 512)
    assert paper.data.num_samples == cpu.data.num_samples == 4000
    # App. B.1's softmax as the output activation (ReLU hidden layers), fed as it is.
    assert paper.data.standardize is False and cpu.data.standardize is False
    assert paper.data.hidden_activation == cpu.data.hidden_activation == "relu"
    assert cpu.train.epochs == 100
    with pytest.raises(ValueError, match="unknown row 'moco'"):
        cfg_lib.make("moco")


def test_lambda_sweep_script_runs_and_plots(tmp_path, monkeypatch):
    script = REPO / "experiments" / "esco" / "synthetic_lambda_sweep.py"
    out = subprocess.run(
        [sys.executable, str(script), "--variant", "quick", "--lams", "0.5,1.5",
         "--rows", "rff", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "lambda_sweep.png").stat().st_size > 1000
    record = json.loads((tmp_path / "lambda_sweep.json").read_text())
    assert [(p["row"], p["lam"]) for p in record["points"]] == [("rff", 0.5), ("rff", 1.5)]
    assert record["features"] == "raw"
    assert all(0 < p["top1_mean"] <= 100 for p in record["points"])
    for p in record["points"]:  # the encoder's geometry beside each point
        assert len(p["mean_cosine"]) == len(p["final_loss"]) == len(p["collapsed"]) == 1
        assert p["collapsed"] == [p["mean_cosine"][0] > 0.99]

    # synthetic_table.py on the same two runs: one setting, two lambdas, the sweep's numbers.
    table = _load_script("synthetic_table")
    runs = [str(tmp_path / f"rff_lam{lam}" / "seed_0") for lam in ("0.5", "1.5")]
    table.main(["--runs", *runs, "--out", str(tmp_path / "table"), "--tag", "_t"])
    rows = json.loads((tmp_path / "table" / "synthetic_table_t.json").read_text())["rows"]
    assert [(r["row"], r["lam"], r["seeds"]) for r in rows] == [
        ("ESCo-RFF", 0.5, [0]),
        ("ESCo-RFF", 1.5, [0]),
    ]
    # Seeds of one setting trained at another scale (a quick run beside cpu ones) are refused.
    one = table.read_run(runs[0])
    other = {**one, "seed": 1, "scale": {**one["scale"], "batch_size": 256}}
    with pytest.raises(SystemExit, match=r"its runs differ in scale"):
        table.summarize([one, other])
    recorded = {k: v for k, v in one.items() if k != "scale"}  # a record from before the key
    assert table.summarize([recorded, {**one, "seed": 1}])[0]["seeds"] == [0, 1]
    for r, p in zip(rows, record["points"], strict=True):
        assert r["mean"] == pytest.approx(p["top1_mean"]) and r["paper"] == 40.52
        assert r["setting"] == "2 epochs, lr 1e-05, raw relu-hidden softmax-output features"
    assert (tmp_path / "table" / "synthetic_table_t.png").stat().st_size > 1000
    for r, p in zip(rows, record["points"], strict=True):
        assert r["mean_cosine"] == p["mean_cosine"] and r["final_loss"] == p["final_loss"]
        assert r["collapsed"] == p["collapsed"]
    # A run from before results.json had the geometry: measured from its final checkpoint,
    # the same numbers the run reported.
    reported = json.loads((Path(runs[1]) / "results.json").read_text())
    older = tmp_path / "older_run"
    shutil.copytree(runs[1], older)
    stripped = {k: v for k, v in reported.items() if k not in ("mean_cosine", "view_sq_distance")}
    (older / "results.json").write_text(json.dumps(stripped))
    config = json.loads((older / "config.json").read_text())  # and from before these keys
    del config["method"]["redraw_features"], config["method"]["esco_negatives"]
    (older / "config.json").write_text(json.dumps(config))
    table.main(["--runs", str(older), "--out", str(tmp_path / "older")])
    (row,) = json.loads((tmp_path / "older" / "synthetic_table.json").read_text())["rows"]
    assert row["mean_cosine"] == [None] and row["collapsed"] == [None]
    table.main(["--runs", str(older), "--out", str(tmp_path / "older"), "--measure-geometry"])
    (row,) = json.loads((tmp_path / "older" / "synthetic_table.json").read_text())["rows"]
    np.testing.assert_allclose(row["mean_cosine"], [reported["mean_cosine"]], atol=1e-6)
    np.testing.assert_allclose(row["view_sq_distance"], [reported["view_sq_distance"]], rtol=1e-4)
    # One workdir given twice is one run; two runs of one seed and setting are an error.
    table.main(["--runs", runs[0], runs[0], "--out", str(tmp_path / "once")])
    once = json.loads((tmp_path / "once" / "synthetic_table.json").read_text())["rows"]
    assert [(r["lam"], r["seeds"]) for r in once] == [(0.5, [0])]
    copy = tmp_path / "copy_of_rff_lam0.5"
    shutil.copytree(runs[0], copy)
    with pytest.raises(SystemExit, match=r"seed 0 given twice, by runs .*copy_of_rff_lam0.5"):
        table.main(["--runs", runs[0], str(copy), "--out", str(tmp_path / "x")])

    # Frequencies kept for the run and another negative set are settings of their own (the
    # exact kernel draws no frequencies).
    base = {"row": "rff", "epochs": 2, "lr": 1e-5, "standardize": False}
    assert table._panel(base) == "2 epochs, lr 1e-05, raw softmax-every-layer features"
    assert table._panel({**base, "redraw_features": False, "negatives": "cross"}) == (
        "2 epochs, lr 1e-05, frequencies fixed per run, other view's negatives only,"
        " raw softmax-every-layer features"
    )
    assert table._panel({**base, "row": "exact", "redraw_features": False}) == table._panel(base)

    # An earlier table's runs carried over (their workdirs need not exist any more), also
    # from a table written before the redraw_features / negatives keys, and not twice when
    # a workdir is given as well.
    earlier = tmp_path / "table" / "synthetic_table_t.json"
    record = json.loads(earlier.read_text())
    for run in record["runs"]:
        del run["redraw_features"], run["negatives"]
    old = tmp_path / "old_table.json"
    old.write_text(json.dumps(record))

    def summary(path):  # the rows without std (NaN for one seed)
        rows = json.loads(path.read_text())["rows"]
        return [(r["row"], r["lam"], r["seeds"], r["per_seed"], r["setting"]) for r in rows]

    for sources in (["--from-table", str(earlier)], ["--from-table", str(old), "--runs", runs[0]]):
        table.main([*sources, "--out", str(tmp_path / "again"), "--tag", "_t"])
        assert summary(tmp_path / "again" / "synthetic_table_t.json") == summary(earlier)
    with pytest.raises(SystemExit, match="--from-table .*no 'runs' list"):
        table.main(["--from-table", str(tmp_path / "lambda_sweep.json"), "--out", str(tmp_path)])

    # --finished-only trains nothing: the finished points, with the seeds that finished.
    sweep = _load_script("synthetic_lambda_sweep")
    summary_out = tmp_path / "summary"
    shutil.copytree(tmp_path / "rff_lam0.5", summary_out / "rff_lam0.5")
    argv = ["sweep", "--variant", "quick", "--rows", "rff,sorf", "--lams", "0.5,1",
            "--seeds", "2", "--out", str(summary_out), "--finished-only"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    sweep.main()
    points = json.loads((summary_out / "lambda_sweep.json").read_text())["points"]
    assert [(p["row"], p["lam"], p["seeds"]) for p in points] == [("rff", 0.5, [0])]
    assert sorted(p.name for p in summary_out.iterdir()) == [
        "lambda_sweep.json", "lambda_sweep.png", "rff_lam0.5"
    ]  # fmt: skip

    # The sweep reads a finished point back only if it trained as the sweep's rows do.
    point = sweep._point("rff", 0.5, 0, "quick", tmp_path, False)
    assert point["test_top1"] == pytest.approx(record["runs"][0]["top1"] / 100)
    saved = json.loads((tmp_path / "rff_lam0.5" / "seed_0" / "config.json").read_text())
    saved["method"]["redraw_features"] = False
    (tmp_path / "rff_lam0.5" / "seed_0" / "config.json").write_text(json.dumps(saved))
    with pytest.raises(SystemExit, match="trained with redraw_features=False"):
        sweep._point("rff", 0.5, 0, "quick", tmp_path, False)
    saved["method"]["redraw_features"] = True
    saved["data"]["hidden_activation"] = "softmax"  # the configs' reading until f253723
    (tmp_path / "rff_lam0.5" / "seed_0" / "config.json").write_text(json.dumps(saved))
    with pytest.raises(SystemExit, match="trained on data.hidden_activation='softmax'"):
        sweep._point("rff", 0.5, 0, "quick", tmp_path, False)
    saved["data"]["hidden_activation"] = "relu"
    (tmp_path / "rff_lam0.5" / "seed_0" / "config.json").write_text(json.dumps(saved))
    # Nor is a quick point read back as a cpu one (the folder does not name the variant).
    with pytest.raises(SystemExit, match="trained with train.epochs=2, the cpu variant has 100"):
        sweep._point("rff", 0.5, 0, "cpu", tmp_path, False)
    assert sweep._point("rff", 0.5, 0, "quick", tmp_path, False) == point


def _load_script(name: str):
    import importlib.util

    path = REPO / "experiments" / "esco" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_collapse_threshold_geometry_is_the_first_order_expansion_of_the_loss():
    # pos / neg over the 'both' negative set, checked by brute force, and lam* is where the
    # first-order loss lam * pos - neg / (2 tau) changes sign under shrinking the spread:
    # exactly ESCo's (exact-kernel) loss slope at a nearly collapsed start.
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[1] / "experiments/esco/collapse_threshold.py"
    spec = importlib.util.spec_from_file_location("collapse_threshold", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rng = np.random.default_rng(0)
    centre = rng.normal(size=16)
    a = centre + 0.01 * rng.normal(size=(40, 16))
    b = a + 0.006 * rng.normal(size=(40, 16))
    got = script.geometry(a, b, tau=1.0)
    ua, ub = (x / np.linalg.norm(x, axis=1, keepdims=True) for x in (a, b))
    d = lambda x, y: np.sum((x[:, None] - y[None]) ** 2, axis=-1)  # noqa: E731
    off = ~np.eye(40, dtype=bool)
    negs = [np.concatenate([d(x, y), d(x, x)[off].reshape(40, 39)], axis=1) for x, y in
            ((ua, ub), (ub, ua))]  # fmt: skip
    assert got["pos"] == pytest.approx(np.mean(np.sum((ua - ub) ** 2, 1)), rel=1e-9)
    assert got["neg"] == pytest.approx(np.mean([n.mean() for n in negs]), rel=1e-9)
    assert got["lam_star"] == pytest.approx(got["neg"] / (2 * got["pos"]), rel=1e-9)

    def loss(scale, lam):  # ESCo's exact loss, 'both' negatives, symmetrised, tau = 1
        xa = ua.mean(0) + scale * (ua - ua.mean(0))
        xb = ua.mean(0) + scale * (ub - ua.mean(0))
        terms = []
        for x, y in ((xa, xb), (xb, xa)):
            n = np.concatenate([d(x, y), d(x, x)[off].reshape(40, 39)], axis=1)
            terms.append(np.mean(lam * np.sum((x - y) ** 2, 1) + np.log(np.exp(-n / 2).sum(1))))
        return np.mean(terms)

    lam_star = got["lam_star"]
    for lam, shrinks in ((0.9 * lam_star, False), (1.1 * lam_star, True)):
        assert (loss(0.9, lam) < loss(1.0, lam)) == shrinks, lam
