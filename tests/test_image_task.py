"""The image methods' losses and views, and the image task end to end: a prepared folder,
the paper-scale configs' data path on tfds mock data (CIFAR-10, ImageNet's host crops)."""

from __future__ import annotations

import functools
import gc
import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from test_tabular_data import make_raw, write_fashion_dir

from jaxcl import augment, losses, methods, mixers, training
from jaxcl.data import open_images
from jaxcl.methods import _images, _paired

REPO = Path(__file__).parents[1]


class Flat(nnx.Module):
    """A stand-in model: images -> linear embedding (the losses do not care about depth)."""

    def __init__(self, pixels, rngs):
        self.linear = nnx.Linear(pixels, 16, rngs=rngs)

    def __call__(self, x):
        return self.linear(x.reshape(x.shape[0], -1))


def _images_batch(n=12, shape=(10, 10, 3), seed=0):
    x = np.random.default_rng(seed).integers(0, 256, (n, *shape), np.uint8)
    return methods.Batch(x=jnp.asarray(x), y=jnp.zeros(n, jnp.int32))


def _method(name, **hp):
    config = training.base_config("cifar10", name)
    config.method.update(hp)
    return methods.get(name)(config)


def test_simclr_views_are_a_function_of_the_key():
    hp = _method("simclr").hp
    batch = _images_batch()
    views = jax.jit(lambda k, x: _images.simclr_views(k, x, hp))  # as the step draws them
    a1, b1 = views(jax.random.key(3), batch.x)
    a2, b2 = views(jax.random.key(3), batch.x)
    a3, _ = views(jax.random.key(4), batch.x)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(b1, b2)
    assert not np.array_equal(a1, a3) and not np.array_equal(a1, b1)
    assert a1.shape == (12, 10, 10, 3) and a1.dtype == jnp.float32


def test_host_cropped_views_skip_only_the_crop():
    hp = _method("simclr", color_strength=0.5, blur_p=0.5).hp
    crops = _images_batch(n=6, shape=(2, 8, 8, 3)).x  # [B, views, S, S, C] from the host
    key = jax.random.key(0)
    a, b = jax.jit(lambda k, c: _images.simclr_views(k, c, hp))(key, crops)
    view = functools.partial(augment.simclr_view, size=8, strength=0.5, blur_p=0.5, crop=False)
    keys = jax.random.split(key, (2, 6))
    x = augment.to_unit_range(crops)
    views = jax.jit(jax.vmap(view))
    np.testing.assert_allclose(a, views(keys[0], x[:, 0]), atol=1e-6)
    np.testing.assert_allclose(b, views(keys[1], x[:, 1]), atol=1e-6)


def test_simclr_dacl_loss_is_the_sum_of_both_losses():
    method = _method("simclr_dacl", temperature=0.5, alpha=0.8, dacl_weight=0.7)
    batch = _images_batch()
    model = Flat(300, nnx.Rngs(0))
    key = jax.random.key(1)
    loss, metrics = method.loss(model, batch, key, {})

    k_aug, k1, k2 = jax.random.split(key, 3)
    a, b = _images.simclr_views(k_aug, batch.x, method.hp)
    x = batch.x.astype(jnp.float32) / 255.0
    m1 = mixers.linear_mixup(k1, x, alpha=0.8)
    m2 = mixers.linear_mixup(k2, x, alpha=0.8)
    simclr = losses.nt_xent(model(a), model(b), temperature=0.5)
    dacl = losses.nt_xent(model(m1), model(m2), temperature=0.5)
    np.testing.assert_allclose(metrics["simclr_loss"], simclr, rtol=1e-5)
    np.testing.assert_allclose(metrics["dacl_loss"], dacl, rtol=1e-5)
    np.testing.assert_allclose(loss, simclr + 0.7 * dacl, rtol=1e-5)


def test_dacl_plus_views_share_one_kind_of_mixing_per_sample():
    # DACL §3.1: per sample one of linear, geometric or binary Mixup-noise, the same for both
    # views (its kind_key), each view with its own partner and coefficient.
    method = _method("dacl_plus", alpha=0.6, rho=0.7)
    x = jnp.asarray(np.random.default_rng(3).random((12, 20)), jnp.float32)
    key = jax.random.key(4)
    v1, v2 = method.views(key, x)
    k1, k2, kind = jax.random.split(key, 3)
    kw = dict(alpha=0.6, rho=0.7, kind_key=kind)
    np.testing.assert_allclose(v1, mixers.dacl_plus_mixup(k1, x, **kw), rtol=1e-6)
    np.testing.assert_allclose(v2, mixers.dacl_plus_mixup(k2, x, **kw), rtol=1e-6)
    other = mixers.dacl_plus_mixup(k2, x, alpha=0.6, rho=0.7, kind_key=jax.random.key(9))
    assert not np.allclose(v2, other)  # the kind key matters, so sharing it is what is tested


def test_esco_simclr_with_exact_kernel_at_half_over_tau_is_simclr():
    batch, model, key = _images_batch(), Flat(300, nnx.Rngs(0)), jax.random.key(2)
    simclr = _method("simclr", temperature=0.5).loss(model, batch, key, {})[0]
    exact = _method("esco_simclr", temperature=0.5, rf_method="exact", lam=1.0)
    np.testing.assert_allclose(exact.loss(model, batch, key, {})[0], simclr, rtol=1e-5)
    # RFF: the same views, the kernel sum estimated (1024 features), lambda's alignment added
    rff = _method("esco_simclr", temperature=0.5, rf_method="rff", lam=1.04)
    loss = rff.loss(model, batch, key, {})[0]
    a, b = _images.simclr_views(key, batch.x, rff.hp)
    want = losses.esco_loss(
        model(a), model(b), key=jax.random.fold_in(key, 1), method="rff", temperature=0.5,
        lam=1.04, num_features=1024, negatives="both", symmetric=True,
    )  # fmt: skip
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    # Frequencies kept for the run: drawn from the run's seed, not from the step's key.
    kept = _method("esco_simclr", temperature=0.5, rf_method="rff", redraw_features=False)
    fixed_key = jax.random.fold_in(jax.random.key(kept.config.seed), _paired._FIXED_FEATURES)
    want = losses.esco_loss(
        model(a), model(b), key=fixed_key, method="rff", temperature=0.5,
        lam=1.04, num_features=1024, negatives="both", symmetric=True,
    )  # fmt: skip
    np.testing.assert_allclose(kept.loss(model, batch, key, {})[0], want, rtol=1e-5)
    with pytest.raises(ValueError, match="rf_method"):
        _method("esco_simclr", rf_method="fourier")


@pytest.mark.parametrize("mix", ["mixup", "cutmix"])
def test_imix_image_trains_towards_the_virtual_labels(mix):
    method = _method("imix_image", mix=mix, alpha=1.0, temperature=0.2)
    batch = _images_batch()
    model = Flat(300, nnx.Rngs(0))
    key = jax.random.key(2)
    loss, metrics = method.loss(model, batch, key, {})
    k_views, k_mix = jax.random.split(key)
    a, b = _images.simclr_views(k_views, batch.x, method.hp)
    fn = mixers.imix_mixup if mix == "mixup" else mixers.cutmix
    a_mix, lam, perm = fn(k_mix, a, alpha=1.0)
    want = losses.imix_npair_loss(model(a_mix), model(b), lam=lam, perm=perm, temperature=0.2)
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    assert 0.0 <= float(metrics["lam"]) <= 1.0


def test_domain_agnostic_rows_mix_whole_images_in_unit_range():
    method = _method("dacl", alpha=0.9)
    batch = _images_batch()
    x = _images.whole_images(batch.x)
    assert x.dtype == jnp.float32 and x.shape == batch.x.shape
    # x / 255 (XLA may multiply by the reciprocal: equal to within a rounding)
    np.testing.assert_allclose(x, np.asarray(batch.x, np.float64) / 255, rtol=1e-6, atol=0)
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    host = _images_batch(shape=(2, 10, 10, 3), seed=1).x  # host crops: the first one
    crops = _images.whole_images(host)
    assert crops.shape == (12, 10, 10, 3)
    np.testing.assert_allclose(crops, np.asarray(host[:, 0], np.float64) / 255, rtol=1e-6, atol=0)
    # The loss: NT-Xent between two linear Mixup-noise views of the scaled images.
    model, key = Flat(300, nnx.Rngs(0)), jax.random.key(0)
    loss, metrics = method.loss(model, batch, key, {})
    k1, k2 = jax.random.split(key)
    m1 = mixers.linear_mixup(k1, x, alpha=0.9)
    m2 = mixers.linear_mixup(k2, x, alpha=0.9)
    want = losses.nt_xent(model(m1), model(m2), temperature=0.5)
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    np.testing.assert_allclose(metrics["loss"], want, rtol=1e-5)


@pytest.mark.parametrize(
    "name, key, value, match",
    [
        ("simclr", "color_strength", -1.0, r"color_strength = -1.0: expected .*\[0, 2.5\]"),
        ("simclr", "color_strength", 3.0, r"color_strength = 3.0: expected .*\[0, 2.5\]"),
        ("simclr_dacl", "blur_p", 1.5, r"blur_p = 1.5: expected a number in \[0, 1\]"),
        ("imix_image", "mix", "cutout", "mix = 'cutout': expected one of"),
        ("simclr_dacl", "dacl_weight", -1.0, r"dacl_weight = -1.0: expected .*\[0.0, inf\)"),
        ("simclr_dacl", "alpha", 1.5, r"alpha = 1.5: expected a number in \[0.0, 1.0\]"),
        ("dacl", "alpha", -0.1, r"alpha = -0.1: expected a number in \[0.0, 1.0\] \(dacl\)"),
        ("dacl_plus", "rho", 2.0, r"rho = 2.0: expected a number in \[0.0, 1.0\]"),
        ("gaussian", "scale", -0.1, r"scale = -0.1: expected a number in \[0.0, inf\)"),
        ("gaussian", "temperature", 0.0, r"temperature = 0.0: expected .*\(0.0, inf\)"),
    ],
)
def test_bad_image_hyperparameters_are_refused(name, key, value, match):
    config = training.base_config("cifar10", name)
    config.method[key] = value
    with pytest.raises(training.ConfigError, match=match):
        training.validate(config)


# ---------------------------------------------------------------------------------------------
# End to end


def _shrink(config):
    """The paper config's data path and protocol with a model small enough for CI, on one
    device (the eight-device runs of the engine tests cover sharding)."""
    config.mesh.data = 1
    config.model.resnet_depth = 18
    config.model.width_multiplier = 1
    config.model.base_width = 4
    if "head_width" in config.model:
        config.model.head_width = 16
        config.model.embed_dim = 8
    config.data.workers = 0
    config.train.batch_size = 8
    config.train.epochs = 1
    config.train.knn_every_epochs = 1
    config.train.log_every_steps = 1
    config.optim.warmup_epochs = 0.0
    config.eval.linear_epochs = 2
    config.eval.linear_batch_size = 8
    config.eval.eval_batch_size = 8
    config.eval.knn_max_train = 16
    return config


def _load(path, arg):
    spec = importlib.util.spec_from_file_location("cfg", REPO / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


def test_fashion_mnist_images_train_and_evaluate(tmp_path, monkeypatch):
    raw = make_raw(n_train=40, n_test=16)
    monkeypatch.setenv("JAXCL_FASHION_MNIST_DIR", str(write_fashion_dir(tmp_path / "idx", raw)))
    config = _shrink(_load("experiments/dacl/image_simclr.py", "cpu"))
    config.data.data_dir = str(tmp_path / "tfds")  # prepared from the idx files on first use
    config.data.workers = 1  # a grain worker process, its batches in shared memory
    config.eval.linear_augment = True  # SimCLR's crop + flip protocol, streamed
    config.eval.linear_standardize = False  # (the cpu rows' cached-feature probe z-scores)
    from jaxcl import data as data_lib

    real_batches, seeds = data_lib.image_batches, []

    def spy(source, **kw):  # the training passes' seeds (evaluation passes: epoch None)
        if kw.get("epoch") is not None:
            seeds.append(kw["seed"])
        return real_batches(source, **kw)

    monkeypatch.setattr(data_lib, "image_batches", spy)
    gc.disable()  # only the run's own collection may free grain's reference cycles
    try:
        results = training.train_and_evaluate(config, str(tmp_path / "run"))
        # No batch outlives the run in shared memory (Python warned of leaked
        # shared_memory objects at exit when grain's cycles held the last ones).
        # (grain's SharedMemoryArray, found by name: its module is private.)
        left = [o for o in gc.get_objects() if type(o).__name__ == "SharedMemoryArray"]
        assert not left, [(a.shape, a.dtype) for a in left]
    finally:
        gc.enable()
    assert results["steps"] == 5 and np.isfinite(results["final_loss"])
    # Pretraining's batches, then the augmented probe's, drawn apart from them.
    assert len(seeds) == 2 and seeds[0] == config.seed != seeds[1], seeds
    for key in ("test_top1", "linear_train_top1", "knn_top1"):
        assert 0.0 <= results[key] <= 1.0
    assert (tmp_path / "tfds" / "fashion_mnist" / "3.0.1" / "dataset_info.json").is_file()
    # The prepared images are the idx file's.
    source = open_images("fashion_mnist", "test", tmp_path / "tfds")
    np.testing.assert_array_equal(source.read(range(16))[0][..., 0], raw["test"][0])


@pytest.mark.parametrize(
    "path, arg",
    [
        # ImageNet: host crops (two random resized crops per image; centre crops to evaluate).
        ("experiments/dacl/image_simclr.py", "imagenet"),
        # CIFAR-10: device crops; MoCo's EMA target and queue in the checkpointed state.
        ("experiments/imix/image_imix_moco.py", "cifar10"),
        # CIFAR-100: m-Mix's SimCLR + mo-mix-op (Adam, linear evaluation with crop + flip).
        ("experiments/mmix/image_mo_op.py", "cifar100"),
        # STL-10 (unlabelled + train to pretrain, 96x96): SimCLR with ESCo-SORF's loss.
        ("experiments/esco/image_sorf.py", "stl10"),
    ],
)
def test_paper_configs_run_on_mock_data(tmp_path, path, arg):
    import tensorflow_datasets as tfds

    config = _shrink(_load(path, arg))
    if arg == "imagenet":
        config.data.image_size = 32  # host crops of varying-size mock images
    if "queue_size" in config.method:
        config.method.queue_size = 16  # wraps around within the run's two steps of 8
    with tfds.testing.mock_data(num_examples=16, policy=tfds.testing.MockPolicy.USE_CODE):
        results = training.train_and_evaluate(config, str(tmp_path))
        if "queue_size" in config.method:  # the queue is in the checkpointed state, filled
            state = training.load_run(config, str(tmp_path))[1]
            keys = np.asarray(state.extra["queue"]["keys"])  # unit rows once written
            np.testing.assert_allclose(np.linalg.norm(keys, axis=1), 1.0, rtol=1e-5)
    assert results["steps"] == 2 and np.isfinite(results["final_loss"])
    assert 0.0 <= results["test_top1"] <= 1.0


def test_image_size_other_than_a_fixed_size_sets_own_is_refused(tmp_path):
    # the views of CIFAR's 32x32 images keep their side; a probe at 64 would not match
    import tensorflow_datasets as tfds

    config = _shrink(_load("experiments/dacl/image_simclr.py", "cifar10"))
    config.data.image_size = 64
    with tfds.testing.mock_data(num_examples=16, policy=tfds.testing.MockPolicy.USE_CODE):
        with pytest.raises(training.ConfigError, match=r"image_size = 64: .*expected 0 or 32"):
            training.train_and_evaluate(config, str(tmp_path))


def test_standardising_an_augmented_probe_is_refused():
    # fresh crops every epoch leave no fixed training features to take statistics from
    config = _load("experiments/dacl/image_simclr.py", "cifar10")
    assert config.eval.linear_augment and not config.eval.linear_standardize
    config.eval.linear_standardize = True
    with pytest.raises(
        training.ConfigError, match=r"linear_standardize = True: expected False with eval.linear"
    ):
        training.validate(config)


def test_the_cached_feature_probe_standardises_only_when_asked(tmp_path, monkeypatch):
    # eval.linear_standardize reaches the image task's probe (SimCLR's protocol: False)
    import tensorflow_datasets as tfds

    from jaxcl import evaluation

    real, seen = evaluation.linear_probe, []

    def spy(*args, **kw):
        seen.append(kw["standardize"])
        return real(*args, **kw)

    monkeypatch.setattr(evaluation, "linear_probe", spy)
    config = _shrink(_load("experiments/dacl/image_dacl.py", "cifar10"))  # cached features
    assert not config.eval.linear_augment and not config.eval.linear_standardize
    with tfds.testing.mock_data(num_examples=16, policy=tfds.testing.MockPolicy.USE_CODE):
        for standardize in (False, True):
            config.eval.linear_standardize = standardize
            results = training.train_and_evaluate(config, str(tmp_path / str(standardize)))
            assert 0.0 <= results["test_top1"] <= 1.0
    assert seen == [False, True]


def test_dacl_table_1_cifar10_column_runs_on_mock_data(tmp_path):
    import tensorflow_datasets as tfds

    config = _load("experiments/dacl/tabular_cifar10.py", "dacl,quick")
    assert config.data.tfds_name == "cifar10" and config.model.encoder_depth == 12
    config.data.data_dir = str(tmp_path)
    config.mesh.data = 1
    with tfds.testing.mock_data(num_examples=16, policy=tfds.testing.MockPolicy.USE_CODE):
        results = training.train_and_evaluate(config, str(tmp_path / "run"))
    assert 0.0 <= results["test_top1"] <= 1.0
    paper = _load("experiments/dacl/tabular_cifar10.py", "dacl")  # DACL §5.1's scale
    assert (paper.train.batch_size, paper.train.epochs, paper.optim.lr) == (4096, 1000, 0.1)
    assert "batch_size" not in _load("experiments/dacl/tabular_cifar10.py", "none").train


def _mock_task(config):
    """The image task of ``config`` on tfds mock data (16 images a split), one device."""
    import tensorflow_datasets as tfds

    from jaxcl.training import _image_task, _mesh

    method = methods.get(config.method.name)(config)
    with tfds.testing.mock_data(num_examples=16, policy=tfds.testing.MockPolicy.USE_CODE):
        return _image_task.ImageTask(config, method, _mesh.make_mesh(1))


def test_supervised_rows_train_on_labelled_images_only(monkeypatch):
    # STL-10's unlabelled images carry label -1, which cross entropy would read as a class.
    assert training.base_config("stl10", "simclr").data.pretrain_split == "unlabelled+train"
    config = training.base_config("stl10", "supervised")
    assert config.data.pretrain_split == config.data.train_split == "train"
    config.data.pretrain_split = "unlabelled+train"  # by hand: the batches are checked
    config.train.batch_size = 8
    config.data.workers = 0
    task = _mock_task(config)
    from jaxcl import data as data_lib

    def unlabelled(source, **kw):
        while True:
            yield np.zeros((8, 96, 96, 3), np.uint8), np.full(8, -1, np.int32), None

    monkeypatch.setattr(data_lib, "image_batches", unlabelled)
    with pytest.raises(training.ConfigError, match=r"met unlabelled images \(label -1\)"):
        next(task.batches(0))


@pytest.mark.parametrize("name, views, low", [("simclr", 2, 0.08), ("metaug", 1, 0.2)])
def test_host_crops_take_the_methods_crop_area(name, views, low):
    # ImageNet's images vary in size: the host takes the random resized crops, with the
    # method's smallest area (MetAug's 0.2, SimCLR's 0.08) and one crop per view it needs.
    config = training.base_config("imagenet2012", name)
    config.data.update(image_size=32, workers=0)
    config.train.batch_size = 8
    task = _mock_task(config)
    crop = task._crop(train=True)
    assert (crop.views, crop.scale) == (views, (low, 1.0))
    assert task._crop(train=False).views == 0  # the centre crop to evaluate
