"""Image data sets prepared by TensorFlow Datasets (array_record), read without TensorFlow.

``tfds.data_source`` reads array_record shards with random access and decodes examples with
NumPy (PNG through Pillow or OpenCV), so this path needs tensorflow-datasets and
array_record, not TensorFlow. A prepared folder is made on any machine that has TensorFlow
and network access (``tfds build fashion_mnist --file_format=array_record``) and copied
over; :func:`jaxcl.data.write_tfds_images` writes one from arrays without TensorFlow.
"""

from __future__ import annotations

import os

import numpy as np

from jaxcl.data._arrays import ArrayDataset, nonnegative_int, tabular_from_images
from jaxcl.data._images import open_images

# Records read per call: bounds the list of decoded examples held at once.
_READ_CHUNK = 4096


def _read_all(source) -> tuple[np.ndarray, np.ndarray]:
    n = len(source)
    if n == 0:
        raise ValueError(f"load_tfds_array_record: split {source.split!r} has no examples")
    parts = [source.read(range(i, min(i + _READ_CHUNK, n))) for i in range(0, n, _READ_CHUNK)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


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
    # The image task's streaming sources (same checks and messages), read whole here.
    train, test = (
        open_images(name, split, data_dir, image_key=image_key, label_key=label_key)
        for split in (train_split, test_split)
    )
    train_images, train_labels = _read_all(train)
    test_images, test_labels = _read_all(test)
    return tabular_from_images(
        train.name,
        train_images,
        train_labels,
        test_images,
        test_labels,
        num_classes=train.num_classes,
        permute=permute,
        permutation_seed=permutation_seed,
        standardize=standardize,
    )
