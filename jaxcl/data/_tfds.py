"""Image data sets prepared by TensorFlow Datasets (array_record), read without TensorFlow.

``tfds.data_source`` reads array_record shards with random access and decodes examples with
NumPy (PNG through Pillow or OpenCV), so this path needs tensorflow-datasets and
array_record, not TensorFlow. A prepared folder is made on any machine that has TensorFlow
and network access (``tfds build fashion_mnist --file_format=array_record``) and copied
over; ``tests/test_tabular_data.py`` shows how to write a small one by hand
(``array_record`` writer + ``tfds.folder_dataset.write_metadata``).
"""

from __future__ import annotations

import os

import numpy as np

from jaxcl.data._arrays import ArrayDataset, nonnegative_int, tabular_from_images

# Records fetched per `__getitems__` call: bounds the list of decoded examples held at once.
_READ_CHUNK = 4096


def _not_prepared_error(name: str, data_dir, builder) -> FileNotFoundError:
    return FileNotFoundError(
        f"load_tfds_array_record: no prepared `{name}` found in data_dir={data_dir!s} "
        f"(looked for {builder.data_dir}/dataset_info.json and its array_record shards). "
        "tfds.data_source does not download. Prepare the folder on a machine with TensorFlow "
        f"and network access: `tfds build {name} --file_format=array_record "
        "--data_dir=DIR`, then copy DIR here and pass it as `data_dir`. For Fashion-MNIST "
        "idx files (Debian package dataset-fashion-mnist) use `load_fashion_mnist` instead."
    )


def _open_sources(tfds, name: str, data_dir, splits: list[str]):
    try:
        return tfds.data_source(name, split=splits, data_dir=data_dir, download=False)
    except (NotImplementedError, AssertionError) as e:
        # tfds answers "random access not supported for TFRECORD" both when the folder holds
        # tfrecord shards and when it holds nothing at all; tell the two apart.
        builder = tfds.builder(name, data_dir=data_dir)
        if not builder.is_prepared():
            raise _not_prepared_error(name, data_dir, builder) from e
        raise ValueError(
            f"load_tfds_array_record: `{name}` in {builder.data_dir} is prepared as "
            f"{builder.info.file_format}, tfds.data_source needs array_record. Convert it with "
            "`tfds convert_format --out_file_format=array_record ...` or rebuild it with "
            f"`tfds build {name} --file_format=array_record`."
        ) from e


def _get_many(source, keys: list[int]) -> list:
    try:
        # Batched reads are about 3x faster than one `source[i]` per record.
        return source.__getitems__(keys)
    except TypeError:
        # tfds.testing.mock_data (tfds 4.9) patches `__getitems__` with a function that misses
        # its `self` argument; single-record reads work there. A genuine TypeError recurs below.
        return [source[i] for i in keys]


def _read_all(source, image_key: str, label_key: str) -> tuple[np.ndarray, np.ndarray]:
    images, labels = [], []
    n = len(source)
    for start in range(0, n, _READ_CHUNK):
        for example in _get_many(source, list(range(start, min(start + _READ_CHUNK, n)))):
            images.append(example[image_key])
            labels.append(example[label_key])
    if not images:
        raise ValueError(f"load_tfds_array_record: split {source.split!r} has no examples")
    return np.stack(images), np.asarray(labels)


def load_tfds_array_record(
    data_dir: str | os.PathLike | None,
    name: str = "fashion_mnist",
    *,
    train_split: str = "train",
    test_split: str = "test",
    image_key: str = "image",
    label_key: str = "label",
    permute: bool = True,
    permutation_seed: int = 0,
    standardize: bool = True,
) -> ArrayDataset:
    """Loads a tfds image data set (array_record) as DACL's tabular proxy.

    Reads both splits through ``tfds.data_source(name, data_dir=data_dir, download=False)``
    and preprocesses exactly like :func:`load_fashion_mnist`: images flattened in C order
    (``[h, w, c]`` -> ``h*w*c`` columns), columns permuted by
    ``np.random.default_rng(permutation_seed).permutation(h*w*c)``, scaled to ``[0, 1]``,
    standardised with the training split's statistics. For the same images the two loaders
    return identical arrays. CIFAR-10 (DACL's other tabular proxy) works the same way with
    ``name="cifar10"`` (3072 columns).

    Args:
      data_dir: the tfds data directory holding ``<name>/<version>/`` prepared in the
        array_record format; ``None`` uses tfds's default (``TFDS_DATA_DIR`` or
        ``~/tensorflow_datasets``).
      name: the tfds data set name, optionally with config/version (``"fashion_mnist:3.0.1"``).
      train_split: split fitted on (training statistics come from it).
      test_split: held-out split.
      image_key: the uint8 ``tfds.features.Image`` feature.
      label_key: the ``tfds.features.ClassLabel`` feature.
      permute: whether to permute the pixel columns.
      permutation_seed: seed of the column permutation (ignored when ``permute=False``).
      standardize: whether to standardise with training statistics.

    Returns:
      An :class:`ArrayDataset` named after the tfds data set (without config/version), with
      ``num_classes`` from the label feature.

    Raises:
      FileNotFoundError: nothing prepared under ``data_dir``; the message says how to
        prepare it.
      ValueError: the data set is prepared in another file format, a key is not a uint8
        image / class label, or a split is unknown or empty.

    Example (needs Fashion-MNIST prepared by ``tfds build`` in ``~/tensorflow_datasets``)::

      from jaxcl.data import load_tfds_array_record
      ds = load_tfds_array_record("~/tensorflow_datasets")
      ds.train_x.shape  # (60000, 784)
    """
    fn = "load_tfds_array_record"
    nonnegative_int(fn, "permutation_seed", permutation_seed)
    # Imported here: tensorflow-datasets takes seconds to import and only this loader needs it.
    import tensorflow_datasets as tfds

    if data_dir is not None:
        data_dir = os.path.expanduser(os.fspath(data_dir))
    train_source, test_source = _open_sources(tfds, name, data_dir, [train_split, test_split])

    features = train_source.dataset_info.features
    for key in (image_key, label_key):
        if key not in features:
            raise ValueError(
                f"{fn}: `{name}` has no feature {key!r}; its features are {sorted(features)}"
            )
    image_feature, label_feature = features[image_key], features[label_key]
    if not isinstance(image_feature, tfds.features.Image) or image_feature.np_dtype != np.uint8:
        raise ValueError(
            f"{fn}: `image_key`={image_key!r} must name a uint8 tfds.features.Image, got "
            f"{image_feature!r}"
        )
    if not isinstance(label_feature, tfds.features.ClassLabel):
        raise ValueError(
            f"{fn}: `label_key`={label_key!r} must name a tfds.features.ClassLabel, got "
            f"{label_feature!r}"
        )

    train_images, train_labels = _read_all(train_source, image_key, label_key)
    test_images, test_labels = _read_all(test_source, image_key, label_key)
    return tabular_from_images(
        train_source.dataset_info.name,
        train_images,
        train_labels,
        test_images,
        test_labels,
        num_classes=int(label_feature.num_classes),
        permute=permute,
        permutation_seed=permutation_seed,
        standardize=standardize,
    )
