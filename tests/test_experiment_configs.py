"""Every experiment config loads, validates, and documents measured numbers, not placeholders."""

import ast
import importlib.util
from pathlib import Path

import pytest

from jaxcl import training

REPO = Path(__file__).parents[1]
TABULAR = [f"experiments/dacl/tabular_fmnist_{row}.py" for row in
           ("none", "gaussian", "dacl", "dacl_plus", "supervised")]  # fmt: skip
IMIX = [f"experiments/imix/tabular_fmnist_{row}.py" for row in ("npair", "imix")]
GRAPH = [f"experiments/dacl/graph_{row}.py" for row in ("none", "infograph", "dacl")]
GRAPH_DATA = ("mutag", "ptc_mr", "imdb_binary", "imdb_multi")
DACL_IMAGE_ROWS = ("none", "gaussian", "dacl", "dacl_plus", "simclr", "simclr_dacl")
IMIX_IMAGE_ROWS = ("npair", "imix", "moco", "imix_moco", "byol", "imix_byol")


def _load(path):
    spec = importlib.util.spec_from_file_location("cfg", REPO / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES = (
    [(p, arg) for p in TABULAR + IMIX for arg in (None, "cpu")]
    + [(p, f"{ds}{quick}") for p in GRAPH for ds in GRAPH_DATA for quick in ("", ",quick")]
    + [("experiments/quickstart.py", None)]
    + [
        (f"experiments/dacl/image_{row}.py", arg)
        for row in DACL_IMAGE_ROWS
        for arg in (None, "cifar100", "cpu")
        + (("imagenet",) if row != "dacl_plus" else ())  # Table 3 has no DACL+
    ]
    + [(f"experiments/imix/image_{row}.py", a) for row in IMIX_IMAGE_ROWS for a in (None, "cpu")]
    + [
        (f"experiments/metaug/{row}.py", a)
        for row in ("simclr", "oucl", "no_margin", "metaug")
        for a in (None, "cpu", "quick", "cifar100,conv", "stl10", "cifar10,resnet50")
    ]
    + [
        (f"experiments/esco/synthetic_{row}.py", a)
        for row in ("none", "simclr", "rff", "sorf")
        for a in (None, "cpu", "quick")
    ]
    + [
        (f"experiments/esco/image_{row}.py", a)
        for row in ("simclr", "rff", "sorf")
        for a in (None, "cifar100", "stl10", "cpu")
    ]
)


@pytest.mark.parametrize("path, arg", CASES)
def test_experiment_config_validates(path, arg):
    c = _load(path).get_config(arg)
    for cfg in training.variant_configs(c).values() if "variants" in c else [c]:
        training.validate(cfg)


MMIX_IMAGE = [(f"experiments/mmix/image_{r}.py", a) for r in ("simclr", "binary", "mo_op")
              for a in (None, "cifar100", "cpu")]  # fmt: skip


def test_measured_rows_keep_their_probe_and_paper_rows_take_simclrs():
    # The cpu rows' (and the quickstart's) numbers were measured with the trust ratio on
    # the classifier and z-scored features; the paper-scale rows probe as SimCLR's code.
    checked = {True: [], False: []}
    for path, arg in CASES + MMIX_IMAGE:
        c = _load(path).get_config(arg)
        if "linear_standardize" not in c.eval or "quick" in (arg or ""):
            continue  # no cached-feature probe (supervised, graphs, synthetic), or a smoke test
        measured = "cpu" in (arg or "") or "quickstart" in path
        probe = (c.eval.linear_trust_ratio, c.eval.linear_standardize)
        assert probe == (measured, measured), (path, arg)
        checked[measured].append(Path(path).stem + (f":{arg}" if arg else ""))
    # the rows of every table measured here are among them
    for row in ("tabular_fmnist_dacl:cpu", "image_dacl:cpu", "image_imix_byol:cpu",
                "image_mo_op:cpu", "metaug:cpu", "image_sorf:cpu", "quickstart"):  # fmt: skip
        assert row in checked[True], row
    assert {"image_dacl", "image_simclr:imagenet", "tabular_fmnist_dacl"} <= set(checked[False])


def test_esco_image_rows_hold_appendix_c():
    for arg, lam in ((None, 1.04), ("cifar100", 1.08), ("stl10", 1.04), ("cpu", 1.04)):
        rff = _load("experiments/esco/image_rff.py").get_config(arg)
        simclr = _load("experiments/esco/image_simclr.py").get_config(arg)
        assert (rff.method.name, rff.method.lam, rff.method.num_features) == (
            "esco_simclr", lam, 1024
        )  # fmt: skip
        assert simclr.method.name == "simclr" and simclr.method.temperature == 0.5
        for c in (rff, simclr):  # the same setup but the loss
            assert (c.optim.name, c.optim.lr, c.optim.weight_decay) == ("adam", 1e-3, 0.0)
            assert c.model.to_dict() == simclr.model.to_dict()
    paper = _load("experiments/esco/image_sorf.py").get_config(None)
    assert (paper.model.resnet_depth, paper.train.batch_size, paper.train.epochs) == (50, 512, 500)
    assert (paper.model.head_width, paper.model.embed_dim, paper.method.rf_method) == (
        512, 128, "sorf"
    )  # fmt: skip


def test_every_experiment_docstring_has_numbers_not_placeholders():
    files = sorted(REPO.glob("experiments/**/*.py"))
    assert len(files) >= 20
    for path in files:
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert doc and doc.strip(), f"{path}: no module docstring"
        for marker in ("MEASURED_CPU", "RESULTS_PLACEHOLDER", "TBD", "TODO"):
            assert marker not in doc, f"{path}: docstring still says {marker}"


@pytest.mark.parametrize("path", TABULAR)
def test_dacl_table_1_paper_scale_and_cpu_variant(path):
    paper, cpu = _load(path).get_config(None), _load(path).get_config("cpu")
    # DACL §5.1: 1000 epochs, batch 4096, LARS lr 0.1, 12-layer encoder, 3-layer head,
    # linear classifier 200 epochs. Each key where it applies to the row's method.
    assert paper.model.encoder_depth == cpu.model.encoder_depth == 12
    if paper.method.name != "none":
        assert (paper.train.epochs, paper.train.batch_size) == (1000, 4096)
        assert (paper.optim.name, paper.optim.lr) == ("lars", 0.1)
        assert cpu.train.epochs * 60_000 // cpu.train.batch_size < 5_000  # ~13 min, 2 cores
    if paper.method.name not in ("none", "supervised"):
        assert paper.model.head_depth == cpu.model.head_depth == 3
    if paper.method.name != "supervised":
        assert paper.eval.linear_epochs == cpu.eval.linear_epochs == 200
    assert "Measured (:cpu" in _load(path).__doc__


def test_dacl_image_paper_scale_follows_simclrs_model_and_probe():
    # SimCLR's code, which DACL §5.2 follows: every block's last BN starts at 0, the head's
    # hidden layers are as wide as the encoder's features, and its LARS exempts the linear
    # classifier from layer adaptation; its probe takes the features as they are (no z-score).
    # The cpu rows keep the probe they were measured with.
    from flax import nnx

    from jaxcl import models

    for arg in ("cifar10", "cifar100", "imagenet"):
        c = _load("experiments/dacl/image_simclr.py").get_config(arg)
        m = c.model
        net = nnx.eval_shape(  # shapes only: ResNet-50 (4x) is not built
            lambda m=m: models.ResNet(
                m.resnet_depth, width_multiplier=m.width_multiplier, rngs=nnx.Rngs(0)
            )
        )
        assert (m.zero_init_residual, m.head_width, net.features) == (True, 8192, 8192)
        assert (c.eval.linear_optimizer, c.eval.linear_trust_ratio) == ("lars", False)
        no_aug = _load("experiments/dacl/image_dacl.py").get_config(arg)  # cached features
        assert (no_aug.eval.linear_augment, no_aug.eval.linear_standardize) == (False, False)
    cpu = _load("experiments/dacl/image_simclr.py").get_config("cpu")
    assert (cpu.model.zero_init_residual, cpu.eval.linear_trust_ratio) == (False, True)
    assert cpu.eval.linear_standardize  # as the recorded cpu rows were scored
    with pytest.raises(training.ConfigError, match="'imagenet' is not accepted"):
        _load("experiments/dacl/image_dacl_plus.py").get_config("imagenet")


def test_unknown_variant_is_an_error():
    with pytest.raises(training.ConfigError, match="'gpu' is not accepted; accepted"):
        _load(TABULAR[0]).get_config("gpu")
    with pytest.raises(training.ConfigError, match="'reddit' is not accepted; accepted"):
        _load(GRAPH[0]).get_config("reddit")


def test_dacl_image_table_checks_the_papers_order_per_probe_and_seed(tmp_path, capsys):
    import json

    table = _load("experiments/dacl/image_table.py")
    measured = {"linear_optimizer": "lars", "linear_trust_ratio": True, "linear_standardize": True}
    simclrs = {"linear_optimizer": "lars", "linear_trust_ratio": False, "linear_standardize": False}

    def run(name, method, seed, top1, knn, probe, epochs=3, data="fashion_mnist_images"):
        workdir = tmp_path / name
        workdir.mkdir()
        config = {"method": {"name": method}, "seed": seed, "train": {"epochs": epochs}}
        config.update(data={"name": data}, eval=probe)
        (workdir / "config.json").write_text(json.dumps(config))
        result = {"test_top1": top1, "knn_top1": knn, "pretrain_seconds": 60.0}
        (workdir / "results.json").write_text(json.dumps(result))
        return str(workdir)

    runs = [
        run("d0", "dacl", 0, 0.78, 0.70, measured),
        run("d1", "dacl", 1, 0.80, 0.72, measured),
        run("s0", "simclr", 0, 0.79, 0.71, measured),
        run("s1", "simclr", 1, 0.79, 0.73, measured),
        run("s0_simclr", "simclr", 0, 0.82, 0.71, simclrs),  # the same checkpoint, rescored
        run("d0_simclr", "dacl", 0, 0.81, 0.70, simclrs),
        run("n0_simclr", "none", 0, 0.75, 0.69, simclrs),
    ]
    out_dir = tmp_path / "out"
    table.main(["--runs", *runs, "--tag", "_t", "--out-dir", str(out_dir)])
    out = json.loads((out_dir / "image_table_t.json").read_text())["table"]
    recorded = out["optimizer=lars, trust_ratio=True, standardize=True"]
    assert list(recorded["rows"]) == ["dacl", "simclr"]
    assert recorded["rows"]["simclr"]["test_top1_summary"]["mean"] == pytest.approx(79.0)
    (step,) = recorded["steps"]  # DACL < SimCLR: holds in seed 0, not in seed 1
    assert (step["lower"], step["higher"], step["holds"]) == ("dacl", "simclr", 1)
    assert step["test_top1"] == pytest.approx([1.0, -1.0])
    simclr = out["optimizer=lars, trust_ratio=False, standardize=False"]
    assert [s["seeds"] for s in simclr["steps"]] == [[0]]  # no Gaussian row: only DACL < SimCLR
    printed = capsys.readouterr().out
    assert "| SimCLR | 79.0 ± 0.0 | 72.0 ± 1.4 | 79.00 / 79.00 | 0, 1 |" in printed
    assert "SimCLR minus DACL: linear +1.00 / -1.00, kNN +1.00 / +1.00; the paper" in printed
    assert (out_dir / "image_table_t.png").stat().st_size > 0
    with pytest.raises(SystemExit, match="method dacl, seed 0, probe .* twice"):
        table.main(["--runs", runs[0], runs[0], "--out-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="mix epochs"):
        table.main(["--runs", runs[0], run("e", "dacl", 2, 0.7, 0.7, measured, epochs=6)])
    with pytest.raises(SystemExit, match="is not one of"):
        table.main(["--runs", run("m", "moco", 0, 0.7, 0.7, measured)])


def test_esco_image_table_tells_the_estimators_apart_and_checks_each_against_simclr(
    tmp_path, capsys
):
    import json

    table = _load("experiments/esco/image_table.py")

    def run(name, method, seed, top1, rf_method=None):
        workdir = tmp_path / name
        workdir.mkdir()
        hp = {"name": method, **({"rf_method": rf_method} if rf_method else {})}
        config = {"method": hp, "seed": seed, "train": {"epochs": 3}}
        config.update(data={"name": "fashion_mnist_images"}, eval={"linear_optimizer": "lars"})
        (workdir / "config.json").write_text(json.dumps(config))
        result = {"test_top1": top1, "knn_top1": top1 - 0.05, "pretrain_seconds": 60.0}
        (workdir / "results.json").write_text(json.dumps(result))
        return str(workdir)

    runs = [
        run("s0", "simclr", 0, 0.76),
        run("s1", "simclr", 1, 0.78),
        run("r0", "esco_simclr", 0, 0.75, "rff"),  # one method, two rows: by the estimator
        run("r1", "esco_simclr", 1, 0.77, "rff"),
        run("o0", "esco_simclr", 0, 0.77, "sorf"),
        run("o1", "esco_simclr", 1, 0.77, "sorf"),
    ]
    table.main(["--runs", *runs, "--tag", "_t", "--out-dir", str(tmp_path / "out")])
    (t,) = json.loads((tmp_path / "out" / "image_table_t.json").read_text())["table"].values()
    assert list(t["rows"]) == ["simclr", "esco_rff", "esco_sorf"]
    rff, sorf = t["steps"]
    assert (rff["higher"], rff["holds"], sorf["higher"], sorf["holds"]) == (
        "esco_rff", 0, "esco_sorf", 1
    )  # fmt: skip
    assert sorf["test_top1"] == pytest.approx([1.0, -1.0])
    assert "ESCo-SORF minus SimCLR: linear +1.00 / -1.00" in capsys.readouterr().out


def test_imix_paper_scale_sgd_decays_every_parameter_and_cpu_rows_keep_theirs():
    # The official code hands all parameters to torch.optim.SGD(weight_decay=1e-4); the :cpu
    # rows keep the decay they were measured with (LARS / SGD on kernels only).
    import jax.numpy as jnp

    from jaxcl import methods

    params = {"kernel": jnp.ones((2, 2)), "bias": jnp.ones((2,))}
    zero = {"kernel": jnp.zeros((2, 2)), "bias": jnp.zeros((2,))}
    for path, arg, decays_bias in [
        ("experiments/imix/image_moco.py", "cifar10", True),
        ("experiments/imix/image_imix.py", "cifar100", True),
        ("experiments/imix/tabular_fmnist_imix.py", None, True),
        ("experiments/imix/tabular_fmnist_imix.py", "cpu", False),
        ("experiments/imix/image_moco.py", "cpu", False),
    ]:
        c = _load(path).get_config(arg)
        training.validate(c)
        tx = methods.get(c.method.name)(c).optimizer(lambda _: 1.0)
        updates, _ = tx.update(zero, tx.init(params), params)
        assert float(updates["kernel"][0, 0]) < 0, path  # kernels decay either way
        bias = -c.optim.weight_decay if decays_bias else 0.0
        assert float(updates["bias"][0]) == pytest.approx(bias), (path, arg)
