"""The streamed image pipeline: tfds array_record sources, batches by (seed, epoch, index),
host crops, the offline Fashion-MNIST preparation, and the real builders under mock data."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_tabular_data import make_raw, write_fashion_dir

from jaxcl.data import (
    HostCrop,
    epoch_order,
    image_batches,
    open_images,
    prepare_fashion_mnist,
    write_tfds_images,
)
from jaxcl.data._host_crop import crop_box_np


def small_folder(tmp_path, n_train=40, n_test=12, shape=(8, 6, 3), name="tiny", seed=0):
    rng = np.random.default_rng(seed)
    splits = {
        "train": (rng.integers(0, 256, (n_train, *shape), np.uint8), np.arange(n_train) % 5),
        "test": (rng.integers(0, 256, (n_test, *shape), np.uint8), np.arange(n_test) % 5),
    }
    write_tfds_images(tmp_path, name, splits, num_classes=5)
    return splits


def test_writing_other_than_uint8_images_is_refused(tmp_path):
    # PNG encoding cast them: integers wrapped around, floats in [0, 1] became black.
    for images in (np.full((2, 8, 6, 3), 300, np.int64), np.full((2, 8, 6, 3), 0.75)):
        with pytest.raises(ValueError, match="split 'train' must be uint8, got dtype"):
            write_tfds_images(tmp_path, "bad", {"train": (images, np.zeros(2))}, num_classes=5)
    assert not list(tmp_path.glob("bad/*/*.array_record*"))


def test_written_folder_reads_back_exactly(tmp_path):
    splits = small_folder(tmp_path)
    source = open_images("tiny", "train", tmp_path)
    assert len(source) == 40 and source.image_shape == (8, 6, 3) and source.num_classes == 5
    images, labels = source.read([3, 0, 39])
    np.testing.assert_array_equal(images, splits["train"][0][[3, 0, 39]])
    np.testing.assert_array_equal(labels, [3, 0, 4])
    assert images.dtype == np.uint8 and labels.dtype == np.int32


def test_batches_follow_the_epoch_order(tmp_path):
    splits = small_folder(tmp_path)
    source = open_images("tiny", "train", tmp_path)
    batches = list(image_batches(source, batch_size=16, seed=3, epoch=2))
    assert len(batches) == 2  # 40 // 16, the rest dropped
    order = epoch_order(40, 3, 2)
    assert not np.array_equal(order, epoch_order(40, 3, 1))
    for b, (images, labels, real) in enumerate(batches):
        rows = order[b * 16 : (b + 1) * 16]
        np.testing.assert_array_equal(images, splits["train"][0][rows])
        np.testing.assert_array_equal(labels, splits["train"][1][rows])
        assert real == 16


def test_resume_mid_epoch_sees_the_same_batches(tmp_path):
    small_folder(tmp_path)
    source = open_images("tiny", "train", tmp_path)
    full = list(image_batches(source, batch_size=8, seed=1, epoch=4))
    resumed = list(image_batches(source, batch_size=8, seed=1, epoch=4, start=3))
    assert len(resumed) == len(full) - 3
    for (a, la, _), (b, lb, _) in zip(full[3:], resumed, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)


def test_worker_processes_give_the_same_batches(tmp_path):
    small_folder(tmp_path)
    source = open_images("tiny", "train", tmp_path)
    threads = list(image_batches(source, batch_size=8, seed=0, epoch=1))
    workers = list(image_batches(source, batch_size=8, seed=0, epoch=1, workers=2))
    assert len(threads) == len(workers) == 5
    for (a, la, _), (b, lb, _) in zip(threads, workers, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)


def test_evaluation_pass_covers_every_example_once(tmp_path):
    splits = small_folder(tmp_path)
    source = open_images("tiny", "test", tmp_path)
    batches = list(image_batches(source, batch_size=5, epoch=None))
    assert [real for *_, real in batches] == [5, 5, 2]
    assert all(images.shape == (5, 8, 6, 3) for images, *_ in batches)
    got = np.concatenate([images[:real] for images, _, real in batches])
    np.testing.assert_array_equal(got, splits["test"][0])
    assert not batches[-1][0][2:].any()  # padding rows are zeros


def test_prepared_fashion_mnist_equals_the_idx_files(tmp_path):
    raw = make_raw(n_train=20, n_test=10)
    idx_dir = write_fashion_dir(tmp_path / "idx", raw)
    root = prepare_fashion_mnist(tmp_path / "tfds", idx_dir)
    stamp = (root / "fashion_mnist" / "3.0.1" / "dataset_info.json").stat().st_mtime_ns
    for split in ("train", "test"):
        source = open_images("fashion_mnist", split, root)
        assert source.image_shape == (28, 28, 1) and source.num_classes == 10
        images, labels = source.read(range(len(source)))
        np.testing.assert_array_equal(images[..., 0], raw[split][0])
        np.testing.assert_array_equal(labels, raw[split][1])
    prepare_fashion_mnist(root, idx_dir)  # already prepared: left as it is
    assert (root / "fashion_mnist" / "3.0.1" / "dataset_info.json").stat().st_mtime_ns == stamp


def test_missing_data_message(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        open_images("cifar10", "train", tmp_path)
    message = str(info.value)
    assert "`cifar10` is not prepared" in message and str(tmp_path) in message
    assert "tfds build cifar10 --file_format=array_record" in message
    # A versioned name keeps its data set's own hint.
    with pytest.raises(FileNotFoundError, match="downloads/manual"):
        open_images("imagenet2012:5.1.0", "validation", tmp_path)


def test_bad_arguments_are_named(tmp_path):
    small_folder(tmp_path)
    source = open_images("tiny", "train", tmp_path)
    with pytest.raises(ValueError, match="`batch_size`=64 is larger than the 40 examples"):
        next(image_batches(source, batch_size=64))
    with pytest.raises(ValueError, match="`batch_size` must be a positive int"):
        next(image_batches(source, batch_size=0))
    with pytest.raises(ValueError, match="`start`=9 is past the epoch's 5 batches"):
        next(image_batches(source, batch_size=8, start=9))
    with pytest.raises(ValueError, match="`image_key`='pixels'"):
        open_images("tiny", "train", tmp_path, image_key="pixels")
    with pytest.raises(ValueError, match="`label_key`='image' must name a ClassLabel"):
        open_images("tiny", "train", tmp_path, label_key="image")
    with pytest.raises(ValueError, match="'validation'"):
        open_images("tiny", "validation", tmp_path)


# ---------------------------------------------------------------------------------------------
# Host crops (images of varying size)


def test_crop_box_matches_its_distribution():
    rng = np.random.default_rng(0)
    boxes = np.array([crop_box_np(rng, 60, 80, (0.08, 1.0), (3 / 4, 4 / 3)) for _ in range(4000)])
    top, left, h, w = boxes.T
    assert (
        (top >= 0).all() and (left >= 0).all() and (top + h <= 60).all() and (left + w <= 80).all()
    )
    area = h * w / (60 * 80)
    # Accepted draws have an area fraction in [0.08, 1] up to rounding; the fallback (full
    # height, ratio clamped) is rare for a 3:4 image.
    assert np.mean((area > 0.07) & (area <= 1.0)) > 0.99
    ratio = w / h
    inside = (ratio > 0.7) & (ratio < 1.4)
    assert inside.mean() > 0.97
    # log-ratio uniform on [log 3/4, log 4/3]: its mean is about 0 over the accepted draws.
    assert abs(np.mean(np.log(ratio[area < 0.5]))) < 0.03


def test_host_crop_shapes_and_reproducibility():
    image = np.random.default_rng(1).integers(0, 256, (37, 53, 3), np.uint8)
    crop = HostCrop(16, views=2)
    a = crop(image, np.random.default_rng([0, 1, 5]))
    b = crop(image, np.random.default_rng([0, 1, 5]))
    c = crop(image, np.random.default_rng([0, 1, 6]))
    assert a.shape == (2, 16, 16, 3) and a.dtype == np.uint8
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    centre = HostCrop(16, views=0)(image, np.random.default_rng(0))
    assert centre.shape == (16, 16, 3)
    gray = HostCrop(8, views=1)(image[..., :1], np.random.default_rng(0))
    assert gray.shape == (1, 8, 8, 1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"size": 0}, "`size` must be an int >= 1"),
        ({"size": 16.0}, "`size` must be an int >= 1"),
        ({"views": -1}, "`views` must be an int >= 0"),
        ({"scale": (1.0, 0.08)}, r"`scale` must be \(low, high\) with 0 < low <= high <= 1"),
        ({"scale": (0.08, 1.5)}, "`scale` must be"),
        ({"ratio": (0.0, 4 / 3)}, r"`ratio` must be \(low, high\) with 0 < low <= high,"),
        ({"ratio": 1.0}, "`ratio` must be"),
    ],
)
def test_host_crop_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HostCrop(**{"size": 16, **kwargs})


def test_host_crop_of_a_whole_constant_image_is_constant():
    image = np.full((30, 40, 3), 77, np.uint8)
    out = HostCrop(12, views=3)(image, np.random.default_rng(0))
    assert (out == 77).all()


# ---------------------------------------------------------------------------------------------
# The real builders' shapes and splits, under tfds.testing.mock_data


@pytest.mark.parametrize(
    "name, split, shape",
    [
        ("cifar10", "train", (32, 32, 3)),
        ("cifar100", "test", (32, 32, 3)),
        ("stl10", "unlabelled", (96, 96, 3)),
        ("imagenet2012", "validation", (None, None, 3)),
    ],
)
def test_real_builders_under_mock_data(tmp_path, name, split, shape):
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=6, policy=tfds.testing.MockPolicy.USE_CODE):
        source = open_images(name, split, tmp_path)
        assert source.image_shape == shape and len(source) == 6
        crop = None if source.fixed_size else HostCrop(24, views=2)
        images, labels, real = next(iter(image_batches(source, batch_size=4, crop=crop)))
    want = (4, *shape) if crop is None else (4, 2, 24, 24, 3)
    assert images.shape == want and images.dtype == np.uint8 and real == 4
    assert labels.shape == (4,)


def test_host_crops_draw_from_their_own_stream_not_the_epochs_order(tmp_path):
    # NumPy pads seed lists with zeros: example 0's crops must not come from the stream
    # [seed, epoch] that ordered the epoch.
    import copy
    import dataclasses

    import tensorflow_datasets as tfds

    from jaxcl.data import _images

    first = {}

    @dataclasses.dataclass(frozen=True)
    class Recording(HostCrop):
        def __call__(self, image, rng):
            first[len(first)] = copy.deepcopy(rng).random()
            return super().__call__(image, rng)

    with tfds.testing.mock_data(num_examples=6, policy=tfds.testing.MockPolicy.USE_CODE):
        source = open_images("imagenet2012", "train", tmp_path)
        next(image_batches(source, batch_size=6, seed=3, epoch=2, crop=Recording(8)))
    rows = _images.epoch_order(6, 3, 2)
    tag = _images._CROP_STREAM
    want = [np.random.default_rng([3, 2, int(i), tag]).random() for i in rows]
    np.testing.assert_array_equal([first[k] for k in range(6)], want)
    assert np.random.default_rng([3, 2]).random() not in want


def test_imagenet_without_a_crop_is_refused(tmp_path):
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=4, policy=tfds.testing.MockPolicy.USE_CODE):
        source = open_images("imagenet2012", "train", tmp_path)
        with pytest.raises(ValueError, match="varying size"):
            next(image_batches(source, batch_size=2))
        assert list(itertools.islice(image_batches(source, batch_size=2, crop=HostCrop(8)), 1))


def test_consecutive_epochs_from_one_reader(tmp_path):
    small_folder(tmp_path)
    source = open_images("tiny", "train", tmp_path)
    both = list(image_batches(source, batch_size=8, seed=2, epoch=3, start=1, epochs=2))
    alone = list(image_batches(source, batch_size=8, seed=2, epoch=3, start=1)) + list(
        image_batches(source, batch_size=8, seed=2, epoch=4)
    )
    assert len(both) == len(alone) == 4 + 5
    for (a, la, _), (b, lb, _) in zip(both, alone, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(la, lb)
    with pytest.raises(ValueError, match="`epochs`=2: expected >= 1"):
        next(image_batches(source, batch_size=8, epoch=None, epochs=2))


def test_a_subset_reads_its_rows_in_batches_and_in_worker_processes(tmp_path):
    import pickle

    splits = small_folder(tmp_path)
    source = open_images("tiny", "train", tmp_path)
    rows = np.array([3, 17, 18, 39, 0])
    sub = source.subset(rows)
    assert len(sub) == 5 and sub.image_shape == source.image_shape
    images, labels = sub.read(range(5))
    np.testing.assert_array_equal(images, splits["train"][0][rows])
    np.testing.assert_array_equal(labels, splits["train"][1][rows])
    for workers in (0, 1):  # grain's worker processes get a pickled copy
        copy = pickle.loads(pickle.dumps(sub))
        batches = list(image_batches(copy, batch_size=2, epoch=None, workers=workers))
        got = np.concatenate([x[:real] for x, _, real in batches])
        np.testing.assert_array_equal(got, splits["train"][0][rows])
    with pytest.raises(IndexError, match=r"`indices` span \[-1, 3\]; expected within \[0, 40\)"):
        source.subset([3, -1])
    with pytest.raises(IndexError, match=r"span \[0, 40\]"):
        source.subset([0, 40])
