"""Fashion-MNIST from its idx files, as DACL's "tabular" proxy (DACL §5.1)."""

from __future__ import annotations

import os
import pathlib

import numpy as np

from jaxcl.data._arrays import ArrayDataset, nonnegative_int, tabular_from_images
from jaxcl.data._idx import read_idx

ENV_VAR = "JAXCL_FASHION_MNIST_DIR"
# Where Debian's `dataset-fashion-mnist` package puts the four gzipped idx files.
DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"

NUM_CLASSES = 10
IMAGE_SHAPE = (28, 28)
# (split, images file, labels file); each may also be present gzip-compressed (+ ".gz").
FILES = (
    ("train", "train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    ("test", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
)


def resolve_fashion_mnist_dir(
    data_dir: str | os.PathLike | None = None,
) -> tuple[pathlib.Path, str]:
    """The folder to read and how it was chosen: argument > environment variable > Debian folder."""
    if data_dir is not None:
        return pathlib.Path(data_dir), "the `data_dir` argument"
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return pathlib.Path(from_env), f"the environment variable {ENV_VAR}"
    return pathlib.Path(DEBIAN_DIR), f"the default (Debian package folder; {ENV_VAR} is not set)"


def _find(directory: pathlib.Path, stem: str) -> pathlib.Path | None:
    # The uncompressed file wins when both exist: it is what a user unpacked on purpose.
    for name in (stem, stem + ".gz"):
        if (directory / name).is_file():
            return directory / name
    return None


def _missing_files_error(directory: pathlib.Path, how: str, missing: list[str]):
    lines = [
        f"load_fashion_mnist: Fashion-MNIST idx files not found in {directory} (chosen by {how})."
    ]
    if not directory.is_dir():
        lines.append(f"The directory {directory} does not exist.")
    lines.append("Missing (each accepted raw or gzip-compressed, with a .gz suffix):")
    lines += [f"  - {stem}[.gz]" for stem in missing]
    lines += [
        "To get them, either",
        "  * install the Debian/Ubuntu package: `apt-get install dataset-fashion-mnist` "
        f"(files land in {DEBIAN_DIR}, the default), or",
        "  * download the four *-ubyte.gz files from https://github.com/zalandoresearch/"
        f"fashion-mnist (data/fashion) and pass `data_dir=...` or set {ENV_VAR}.",
    ]
    return FileNotFoundError("\n".join(lines))


def _read_split(directory: pathlib.Path, images_stem: str, labels_stem: str):
    images_path, labels_path = _find(directory, images_stem), _find(directory, labels_stem)
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.dtype != np.uint8 or images.shape[1:] != IMAGE_SHAPE:
        raise ValueError(
            f"{images_path}: expected uint8 images of shape [n, 28, 28] (idx magic 0x00000803), "
            f"got {images.dtype.name} of shape {images.shape}"
        )
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise ValueError(
            f"{labels_path}: expected uint8 labels of shape [n] (idx magic 0x00000801), "
            f"got {labels.dtype.name} of shape {labels.shape}"
        )
    if len(images) != len(labels):
        raise ValueError(
            f"{images_path} has {len(images)} images but {labels_path} has {len(labels)} labels"
        )
    if labels.size and labels.max() >= NUM_CLASSES:
        raise ValueError(
            f"{labels_path}: labels must lie in [0, {NUM_CLASSES}), found {int(labels.max())}"
        )
    return images, labels


def read_fashion_mnist_splits(data_dir=None) -> dict:
    """``{"train": (images, labels), "test": (...)}``: uint8 ``[n, 28, 28]`` images and uint8
    labels, read from the idx files (folder chosen as in :func:`load_fashion_mnist`)."""
    directory, how = resolve_fashion_mnist_dir(data_dir)
    missing = [stem for _, *stems in FILES for stem in stems if _find(directory, stem) is None]
    if missing:
        raise _missing_files_error(directory, how, missing)
    return {split: _read_split(directory, images, labels) for split, images, labels in FILES}


def load_fashion_mnist(
    data_dir: str | os.PathLike | None = None,
    *,
    permute: bool = True,
    permutation_seed: int = 0,
    standardize: bool = True,
) -> ArrayDataset:
    """Loads Fashion-MNIST as DACL's tabular proxy: 784 permuted, standardised pixel columns.

    Reads the four idx files (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
    ``t10k-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``, each raw or ``.gz``). Each image is
    flattened row-major to 784 values, the columns are permuted by the fixed permutation
    ``np.random.default_rng(permutation_seed).permutation(784)`` (which removes the spatial
    structure an image model could exploit), scaled to ``[0, 1]``, then standardised per
    column with the training split's mean and standard deviation. The permutation and
    statistics are kept in ``dataset.transform``.

    Args:
      data_dir: folder holding the idx files. ``None``: the environment variable
        ``JAXCL_FASHION_MNIST_DIR``, else ``/usr/share/datasets/fashion-mnist`` (Debian package
        ``dataset-fashion-mnist``).
      permute: whether to permute the pixel columns.
      permutation_seed: seed of the column permutation (ignored when ``permute=False``).
      standardize: whether to standardise with training statistics; otherwise features are
        the scaled pixels in ``[0, 1]``.

    Returns:
      An :class:`ArrayDataset` named ``"fashion_mnist"``: train ``[60000, 784]``, test
      ``[10000, 784]``, float32 features, int32 labels, 10 classes.

    Raises:
      FileNotFoundError: a file is missing; the message names the folder searched, each
        missing file and how to get them.
      ValueError: a malformed file (bad magic number, truncated data, image/label count
        mismatch); the message names the file.

    Example:
      >>> from jaxcl.data import load_fashion_mnist
      >>> ds = load_fashion_mnist()  # needs `apt-get install dataset-fashion-mnist`
      >>> ds.train_x.shape, ds.test_x.shape, ds.num_classes
      ((60000, 784), (10000, 784), 10)

    References:
      Verma et al., "Towards Domain-Agnostic Contrastive Learning", ICML 2021, §5.1.
      Xiao et al., "Fashion-MNIST", arXiv:1708.07747.
    """
    nonnegative_int("load_fashion_mnist", "permutation_seed", permutation_seed)
    raw = read_fashion_mnist_splits(data_dir)
    (train_images, train_labels), (test_images, test_labels) = raw["train"], raw["test"]
    return tabular_from_images(
        "fashion_mnist",
        train_images,
        train_labels,
        test_images,
        test_labels,
        num_classes=NUM_CLASSES,
        permute=permute,
        permutation_seed=permutation_seed,
        standardize=standardize,
    )
