"""Tests for the tabular data sources in jaxcl.data: idx parsing, Fashion-MNIST, digits,
the tfds array_record path and the batch iterator.

The tfds test writes a small prepared array_record folder by hand, without TensorFlow:
PNG-encode each image with Pillow, serialise the example with the data set's
``FeaturesDict.serialize_example``, write the records with ``array_record``'s
``ArrayRecordWriter`` to ``<data_dir>/<name>/<version>/<name>-<split>.array_record-00000-of-00001``,
then ``tfds.folder_dataset.write_metadata`` writes ``dataset_info.json`` and ``features.json``.
"""

import gzip
import pathlib

import numpy as np
import pytest

from jaxcl.data import (
    ArrayDataset,
    FeatureTransform,
    iterate_batches,
    load_digits_tabular,
    load_fashion_mnist,
    load_tfds_array_record,
    num_batches,
    read_idx,
    write_tfds_images,
)

FILE_STEMS = {
    ("train", "images"): "train-images-idx3-ubyte",
    ("train", "labels"): "train-labels-idx1-ubyte",
    ("test", "images"): "t10k-images-idx3-ubyte",
    ("test", "labels"): "t10k-labels-idx1-ubyte",
}
TYPE_CODES = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D}


def idx_bytes(array: np.ndarray) -> bytes:
    """An idx file written from scratch: magic, big-endian sizes, big-endian data."""
    header = bytes([0, 0, TYPE_CODES[array.dtype.type], array.ndim])
    header += b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_file(path: pathlib.Path, data: bytes, gz: bool) -> pathlib.Path:
    if gz:
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def make_raw(n_train=30, n_test=12, seed=0):
    """Small Fashion-MNIST-shaped uint8 images and labels covering all 10 classes."""
    rng = np.random.default_rng(seed)
    raw = {}
    for split, n in (("train", n_train), ("test", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        images[:, 0, 0] = 7  # a constant pixel, as real data could have
        raw[split] = (images, (np.arange(n) % 10).astype(np.uint8))
    return raw


def write_fashion_dir(directory: pathlib.Path, raw, gz=True) -> pathlib.Path:
    directory.mkdir(parents=True, exist_ok=True)
    for (split, kind), stem in FILE_STEMS.items():
        array = raw[split][0 if kind == "images" else 1]
        write_file(directory / stem, idx_bytes(array), gz)
    return directory


def reference_tabular(raw, permutation, standardize=True):
    """Independent NumPy version of DACL's tabular proxy, in float64."""
    flat = {s: raw[s][0].reshape(len(raw[s][0]), -1)[:, permutation] / 255.0 for s in raw}
    if not standardize:
        return flat
    mean, std = flat["train"].mean(0), flat["train"].std(0)
    std[std < 1e-6] = 1.0
    return {s: (flat[s] - mean) / std for s in flat}


# ---------------------------------------------------------------------------------------------
# idx parsing


@pytest.mark.parametrize("gz", [False, True], ids=["raw", "gzip"])
@pytest.mark.parametrize(
    "array",
    [
        np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4),
        np.array([5, 0, 9], np.uint8),
        np.array([[-70000, 3], [1, 2**31 - 1]], np.int32),
        np.array([1.5, -2.25], np.float32),
    ],
    ids=["ubyte3d", "ubyte1d", "int32", "float32"],
)
def test_read_idx_round_trip(tmp_path, gz, array):
    path = write_file(tmp_path / "x-idx", idx_bytes(array), gz)
    got = read_idx(path)
    assert got.dtype == array.dtype and got.dtype.isnative
    np.testing.assert_array_equal(got, array)
    got[...] = 0  # a writable copy, not a view of the file's buffer


def test_read_idx_detects_gzip_by_content(tmp_path):
    array = np.arange(12, dtype=np.uint8).reshape(3, 4)
    path = tmp_path / "no-suffix-idx2-ubyte"
    path.write_bytes(gzip.compress(idx_bytes(array)))
    np.testing.assert_array_equal(read_idx(path), array)


GOOD = idx_bytes(np.arange(24, dtype=np.uint8).reshape(2, 3, 4))


@pytest.mark.parametrize("gz", [False, True], ids=["raw", "gzip"])
@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "truncated idx file: 0 bytes"),
        (b"\x01\x00" + GOOD[2:], "bad idx magic number 0x01000803"),
        (b"\x00\x00\x07\x03" + GOOD[4:], "unknown element type code 0x07"),
        (b"\x00\x00\x08\x00", "zero dimensions"),
        (GOOD[:10], "truncated idx header: 3 dimensions need 16 bytes"),
        (GOOD[:-1], r"truncated idx file: the header promises shape \(2, 3, 4\)"),
        (GOOD + b"\x00\x00", "2 unexpected trailing bytes"),
    ],
    ids=["empty", "magic", "type_code", "ndim0", "header", "data", "trailing"],
)
def test_read_idx_rejects_malformed_files(tmp_path, gz, data, message):
    path = write_file(tmp_path / "bad-idx3-ubyte", data, gz)
    with pytest.raises(ValueError, match=message) as info:
        read_idx(path)
    assert str(path) in str(info.value)


def test_read_idx_rejects_truncated_gzip(tmp_path):
    path = tmp_path / "cut-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(GOOD)[:-10])
    with pytest.raises(ValueError, match="corrupt or truncated gzip") as info:
        read_idx(path)
    assert str(path) in str(info.value)


# ---------------------------------------------------------------------------------------------
# Fashion-MNIST from idx files


@pytest.mark.parametrize("gz", [False, True], ids=["raw", "gzip"])
def test_load_fashion_mnist_matches_numpy_reference(tmp_path, gz):
    raw = make_raw()
    ds = load_fashion_mnist(write_fashion_dir(tmp_path, raw, gz=gz), permutation_seed=3)
    permutation = np.random.default_rng(3).permutation(784)
    want = reference_tabular(raw, permutation)
    assert ds.name == "fashion_mnist" and ds.num_classes == 10 and ds.num_features == 784
    assert ds.train_x.dtype == np.float32 and ds.train_y.dtype == np.int32
    np.testing.assert_allclose(ds.train_x, want["train"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ds.test_x, want["test"], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ds.train_y, raw["train"][1])
    np.testing.assert_array_equal(ds.test_y, raw["test"][1])
    # The recorded transform reproduces the arrays from raw pixels.
    np.testing.assert_array_equal(ds.transform.permutation, permutation)
    assert ds.transform.permutation_seed == 3
    np.testing.assert_array_equal(ds.transform(raw["test"][0]), ds.test_x)
    # The constant pixel (raw index 0) is centred, not divided by ~0.
    column = int(np.flatnonzero(permutation == 0)[0])
    assert ds.transform.std[column] == 1.0
    np.testing.assert_array_equal(ds.train_x[:, column], 0.0)


def test_load_fashion_mnist_unstandardised_and_unpermuted(tmp_path):
    raw = make_raw()
    directory = write_fashion_dir(tmp_path, raw)
    ds = load_fashion_mnist(directory, permute=False, standardize=False)
    np.testing.assert_allclose(ds.train_x, raw["train"][0].reshape(-1, 784) / 255.0, rtol=1e-6)
    assert ds.transform.permutation is None and ds.transform.mean is None
    permuted = load_fashion_mnist(directory, standardize=False)
    perm = np.random.default_rng(0).permutation(784)
    np.testing.assert_array_equal(permuted.train_x, ds.train_x[:, perm])


def test_load_fashion_mnist_permutation_fixed_across_calls_and_seeded(tmp_path):
    directory = write_fashion_dir(tmp_path, make_raw())
    a, b = load_fashion_mnist(directory), load_fashion_mnist(directory)
    np.testing.assert_array_equal(a.train_x, b.train_x)
    np.testing.assert_array_equal(a.transform.permutation, b.transform.permutation)
    c = load_fashion_mnist(directory, permutation_seed=1)
    assert not np.array_equal(a.transform.permutation, c.transform.permutation)
    assert not np.array_equal(a.train_x, c.train_x)


def test_load_fashion_mnist_prefers_raw_over_gzip(tmp_path):
    raw = make_raw()
    write_fashion_dir(tmp_path, raw, gz=False)
    other = make_raw(seed=1)
    write_fashion_dir(tmp_path, other, gz=True)
    ds = load_fashion_mnist(tmp_path, permute=False, standardize=False)
    np.testing.assert_allclose(ds.test_x, raw["test"][0].reshape(-1, 784) / 255.0, rtol=1e-6)


def test_load_fashion_mnist_missing_files_message(tmp_path):
    write_fashion_dir(tmp_path, make_raw())
    (tmp_path / "t10k-images-idx3-ubyte.gz").unlink()
    (tmp_path / "train-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(FileNotFoundError) as info:
        load_fashion_mnist(tmp_path)
    message = str(info.value)
    assert str(tmp_path) in message and "`data_dir` argument" in message
    assert "t10k-images-idx3-ubyte[.gz]" in message
    assert "train-labels-idx1-ubyte[.gz]" in message
    assert "train-images-idx3-ubyte" not in message  # present files are not listed
    assert "apt-get install dataset-fashion-mnist" in message
    assert "github.com/zalandoresearch/fashion-mnist" in message
    assert "JAXCL_FASHION_MNIST_DIR" in message


def test_load_fashion_mnist_nonexistent_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist") as info:
        load_fashion_mnist(tmp_path / "nowhere")
    for stem in FILE_STEMS.values():
        assert f"{stem}[.gz]" in str(info.value)


def test_load_fashion_mnist_directory_resolution(tmp_path, monkeypatch):
    from_env = write_fashion_dir(tmp_path / "env", make_raw(n_train=20))
    from_arg = write_fashion_dir(tmp_path / "arg", make_raw(n_train=10))
    monkeypatch.setenv("JAXCL_FASHION_MNIST_DIR", str(from_env))
    assert len(load_fashion_mnist().train_y) == 20  # env var beats the Debian folder
    assert len(load_fashion_mnist(from_arg).train_y) == 10  # argument beats env var
    monkeypatch.setenv("JAXCL_FASHION_MNIST_DIR", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="environment variable JAXCL_FASHION_MNIST_DIR"):
        load_fashion_mnist()


def test_load_fashion_mnist_count_mismatch(tmp_path):
    raw = make_raw()
    write_fashion_dir(tmp_path, raw)
    labels = tmp_path / "train-labels-idx1-ubyte.gz"
    write_file(labels.with_suffix(""), idx_bytes(raw["train"][1][:-1]), gz=True)
    with pytest.raises(ValueError, match="has 30 images but .* has 29 labels") as info:
        load_fashion_mnist(tmp_path)
    assert "train-images-idx3-ubyte.gz" in str(info.value) and str(labels) in str(info.value)


def test_load_fashion_mnist_wrong_file_kind_and_labels(tmp_path):
    raw = make_raw()
    write_fashion_dir(tmp_path, raw)
    images = tmp_path / "t10k-images-idx3-ubyte.gz"
    write_file(images.with_suffix(""), idx_bytes(raw["test"][1]), gz=True)  # labels, not images
    with pytest.raises(ValueError, match="expected uint8 images of shape") as info:
        load_fashion_mnist(tmp_path)
    assert str(images) in str(info.value)

    write_fashion_dir(tmp_path, raw)
    bad = raw["train"][1].copy()
    bad[3] = 10
    write_file(tmp_path / "train-labels-idx1-ubyte", idx_bytes(bad), gz=True)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 10\), found 10"):
        load_fashion_mnist(tmp_path)


def test_load_fashion_mnist_truncated_file_names_it(tmp_path):
    write_fashion_dir(tmp_path, make_raw())
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(gzip.decompress(path.read_bytes())[:-5]))
    with pytest.raises(ValueError, match="truncated idx file") as info:
        load_fashion_mnist(tmp_path)
    assert str(path) in str(info.value)


def test_load_fashion_mnist_rejects_bad_seed(tmp_path):
    with pytest.raises(ValueError, match="`permutation_seed` must be an int >= 0"):
        load_fashion_mnist(tmp_path, permutation_seed=-1)


@pytest.fixture(scope="module")
def real_fashion_mnist():
    try:
        return load_fashion_mnist()
    except FileNotFoundError as e:
        error = e  # failed outside the except block, so the report is not a chained traceback
    pytest.fail(
        "Real Fashion-MNIST is required by this test (it is not skipped). Install it with "
        "`apt-get install -y dataset-fashion-mnist` (idx files land in "
        "/usr/share/datasets/fashion-mnist) or point JAXCL_FASHION_MNIST_DIR at a folder "
        f"holding the four idx files.\n{error}",
        pytrace=False,
    )


def test_real_fashion_mnist(real_fashion_mnist):
    ds = real_fashion_mnist
    assert ds.train_x.shape == (60000, 784) and ds.test_x.shape == (10000, 784)
    assert ds.train_x.dtype == np.float32 and ds.test_y.dtype == np.int32
    assert ds.num_classes == 10
    np.testing.assert_array_equal(np.bincount(ds.train_y, minlength=10), [6000] * 10)
    np.testing.assert_array_equal(np.bincount(ds.test_y, minlength=10), [1000] * 10)
    # Standardised with train statistics: every column (none is constant in Fashion-MNIST's
    # train split) has mean ~0 and std ~1 there; the test split's columns do not exactly.
    varying = ds.transform.std != 1.0
    assert varying.sum() > 700
    mean = ds.train_x.mean(0, dtype=np.float64)
    std = ds.train_x.std(0, dtype=np.float64)
    np.testing.assert_allclose(mean, 0.0, atol=1e-4)
    np.testing.assert_allclose(std[varying], 1.0, atol=1e-3)
    np.testing.assert_array_equal(
        ds.transform.permutation, np.random.default_rng(0).permutation(784)
    )


def test_real_fashion_mnist_other_seed_permutes_the_same_columns(real_fashion_mnist):
    a = real_fashion_mnist
    b = load_fashion_mnist(permutation_seed=1)
    pa, pb = a.transform.permutation, b.transform.permutation
    assert not np.array_equal(pa, pb)
    # Column k of b is raw pixel pb[k], which is column argsort(pa)[pb[k]] of a.
    np.testing.assert_allclose(b.test_x, a.test_x[:, np.argsort(pa)[pb]], rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(b.train_y, a.train_y)


# ---------------------------------------------------------------------------------------------
# digits


def test_digits_shapes_stratification_and_standardisation():
    from sklearn.datasets import load_digits

    ds = load_digits_tabular()
    assert ds.name == "digits" and ds.num_classes == 10 and ds.num_features == 64
    assert ds.train_x.shape == (1437, 64) and ds.test_x.shape == (360, 64)
    assert ds.train_x.dtype == np.float32 and ds.train_y.dtype == np.int32
    full = np.bincount(load_digits().target)
    train, test = np.bincount(ds.train_y), np.bincount(ds.test_y)
    np.testing.assert_array_equal(train + test, full)
    assert np.all(np.abs(test - 0.2 * full) <= 1)  # stratified: each class keeps its share
    constant = ds.transform.std == 1.0
    assert 0 < constant.sum() < 64  # digits has always-blank pixels
    np.testing.assert_allclose(ds.train_x.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(ds.train_x[:, ~constant].std(0), 1.0, atol=1e-4)
    np.testing.assert_array_equal(ds.train_x[:, constant], 0.0)


def test_digits_split_is_a_seeded_partition():
    from sklearn.datasets import load_digits

    raw = load_digits().data / 16.0
    a = load_digits_tabular(seed=0, standardize=False)
    b = load_digits_tabular(seed=0, standardize=False)
    c = load_digits_tabular(seed=1, standardize=False)
    np.testing.assert_array_equal(a.test_x, b.test_x)
    assert not np.array_equal(a.test_x, c.test_x)
    assert load_digits_tabular(test_fraction=0.5).test_x.shape == (899, 64)
    assert a.train_x.min() == 0.0 and a.train_x.max() == 1.0

    def row_keys(x):
        return sorted(map(bytes, np.round(x * 16).astype(np.uint8)))

    # Train and test together are exactly the 1797 rows of the data set.
    assert row_keys(np.concatenate([a.train_x, a.test_x])) == row_keys(raw)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, True, "0.2"])
def test_digits_rejects_bad_test_fraction(bad):
    with pytest.raises(ValueError, match="`test_fraction` must lie in"):
        load_digits_tabular(test_fraction=bad)


# ---------------------------------------------------------------------------------------------
# tfds array_record path


def write_tfds_array_record(data_dir: pathlib.Path, raw, name="fashion_mnist", version="3.0.1"):
    """A prepared tfds folder (array_record) holding ``raw``, written without TensorFlow."""
    splits = {split: (images[..., None], labels) for split, (images, labels) in raw.items()}
    write_tfds_images(data_dir, name, splits, num_classes=10, version=version)
    return data_dir


def test_tfds_path_equals_idx_path(tmp_path):
    raw = make_raw(n_train=25, n_test=10)
    from_idx = load_fashion_mnist(write_fashion_dir(tmp_path / "idx", raw), permutation_seed=5)
    data_dir = write_tfds_array_record(tmp_path / "tfds", raw)
    from_tfds = load_tfds_array_record(data_dir, "fashion_mnist", permutation_seed=5)
    assert from_tfds.name == "fashion_mnist" and from_tfds.num_classes == 10
    for field in ("train_x", "train_y", "test_x", "test_y"):
        got, want = getattr(from_tfds, field), getattr(from_idx, field)
        assert got.dtype == want.dtype, field
        np.testing.assert_array_equal(got, want, err_msg=field)
    np.testing.assert_array_equal(from_tfds.transform.permutation, from_idx.transform.permutation)
    np.testing.assert_array_equal(from_tfds.transform.std, from_idx.transform.std)


def test_tfds_not_prepared_message(tmp_path):
    with pytest.raises(FileNotFoundError, match="`fashion_mnist` is not prepared") as info:
        load_tfds_array_record(tmp_path, "fashion_mnist")
    assert "tfds build fashion_mnist --file_format=array_record" in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_tfds_bad_keys(tmp_path):
    data_dir = write_tfds_array_record(tmp_path, make_raw(n_train=10, n_test=10))
    with pytest.raises(ValueError, match="'pixels': `fashion_mnist` has no such feature"):
        load_tfds_array_record(data_dir, image_key="pixels")
    with pytest.raises(ValueError, match="`image_key`='label' must name a uint8 Image"):
        load_tfds_array_record(data_dir, image_key="label")


def test_tfds_under_mock_data(tmp_path):
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=6, policy=tfds.testing.MockPolicy.USE_CODE):
        ds = load_tfds_array_record(tmp_path, "fashion_mnist", standardize=False)
    assert ds.train_x.shape == (6, 784) and ds.test_x.shape == (6, 784)
    assert ds.train_x.min() >= 0.0 and ds.train_x.max() <= 1.0 and ds.num_classes == 10


# ---------------------------------------------------------------------------------------------
# batches


@pytest.mark.parametrize("drop_remainder", [True, False])
def test_iterate_batches_covers_each_example_at_most_once(drop_remainder):
    n, batch_size = 23, 5
    x = np.arange(n, dtype=np.float32)[:, None] * np.ones((1, 3), np.float32)
    y = np.arange(n, dtype=np.int32)
    batches = list(
        iterate_batches(x, y, batch_size=batch_size, seed=1, epoch=0, drop_remainder=drop_remainder)
    )
    assert len(batches) == num_batches(n, batch_size=batch_size, drop_remainder=drop_remainder)
    seen = np.concatenate([yb for _, yb in batches])
    assert len(np.unique(seen)) == len(seen)  # at most once
    assert len(seen) == (20 if drop_remainder else 23)
    for xb, yb in batches:
        np.testing.assert_array_equal(xb[:, 0], yb)  # rows stay paired with their labels
    sizes = [len(yb) for _, yb in batches]
    assert sizes == ([5] * 4 if drop_remainder else [5, 5, 5, 5, 3])


def test_iterate_batches_deterministic_per_seed_and_epoch():
    x, y = np.zeros((64, 2), np.float32), np.arange(64)

    def order(seed, epoch):
        return np.concatenate(
            [yb for _, yb in iterate_batches(x, y, batch_size=8, seed=seed, epoch=epoch)]
        )

    np.testing.assert_array_equal(order(0, 3), order(0, 3))
    assert not np.array_equal(order(0, 0), order(0, 1))
    assert not np.array_equal(order(0, 1), order(1, 0))
    assert not np.array_equal(order(0, 0), np.arange(64))  # shuffled


def test_iterate_batches_validates_eagerly():
    x, y = np.zeros((10, 2)), np.zeros(10)
    with pytest.raises(ValueError, match="`x` has 10 examples but `y` has 9"):
        iterate_batches(x, y[:9], batch_size=2, seed=0, epoch=0)
    with pytest.raises(ValueError, match="`batch_size` must be a positive int"):
        iterate_batches(x, y, batch_size=0, seed=0, epoch=0)
    with pytest.raises(ValueError, match="`epoch` must be an int >= 0"):
        iterate_batches(x, y, batch_size=2, seed=0, epoch=-1)
    with pytest.raises(ValueError, match="the epoch would have no batch"):
        iterate_batches(x, y, batch_size=11, seed=0, epoch=0)
    assert len(list(iterate_batches(x, y, batch_size=11, seed=0, epoch=0, drop_remainder=False)))


# ---------------------------------------------------------------------------------------------
# ArrayDataset / FeatureTransform


def test_array_dataset_validates():
    good = dict(
        name="toy",
        train_x=np.zeros((4, 3), np.float32),
        train_y=np.array([0, 1, 0, 1], np.int32),
        test_x=np.zeros((2, 3), np.float32),
        test_y=np.array([1, 0], np.int32),
        num_classes=2,
    )
    assert ArrayDataset(**good).num_features == 3
    with pytest.raises(ValueError, match="`train_x` must be a float32"):
        ArrayDataset(**{**good, "train_x": np.zeros((4, 3))})
    with pytest.raises(ValueError, match="`test_y` has labels in \\[0, 2\\]"):
        ArrayDataset(**{**good, "test_y": np.array([2, 0], np.int32)})
    with pytest.raises(ValueError, match="train has 3 features, test has 5"):
        ArrayDataset(**{**good, "test_x": np.zeros((2, 5), np.float32)})
    with pytest.raises(ValueError, match="`train_x` has 4 rows but `train_y` has 3"):
        ArrayDataset(**{**good, "train_y": np.array([0, 1, 0], np.int32)})


def test_feature_transform_checks_width():
    transform = FeatureTransform(scale=1.0, permutation=np.arange(4))
    with pytest.raises(ValueError, match="has 5 features per row, the permutation has 4"):
        transform(np.zeros((2, 5)))
    # Standardised without a permutation: the fitted width is checked too (NumPy broadcast).
    standardized = FeatureTransform(scale=1.0, mean=np.zeros(4), std=np.ones(4))
    with pytest.raises(ValueError, match="has 5 features per row, the transform was fitted on 4"):
        standardized(np.zeros((2, 5)))


def test_images_of_two_shapes_are_refused_by_name():
    from jaxcl.data._arrays import tabular_from_images

    train, test = np.zeros((3, 28, 28), np.uint8), np.zeros((2, 32, 32), np.uint8)
    for permute, standardize in [(True, True), (False, True), (False, False)]:
        with pytest.raises(ValueError, match=r"toy: train images have shape \(28, 28\), test"):
            tabular_from_images(
                "toy", train, np.zeros(3), test, np.zeros(2), num_classes=2, permute=permute,
                permutation_seed=0, standardize=standardize,
            )  # fmt: skip
