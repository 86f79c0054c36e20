"""Image data streamed from tfds array_record folders: random access, host workers, batches.

The pipeline (``ImageSource`` -> :func:`image_batches`) never loads a split into memory:

1. ``tfds.data_source`` opens a split of a prepared array_record folder with random access.
2. Batch ``b`` of epoch ``e`` holds the examples
   ``np.random.default_rng([seed, e]).permutation(n)[b * batch : (b + 1) * batch]``, a pure
   function of ``(seed, epoch, b)``: a resumed run starts at its batch and sees exactly what
   an uninterrupted one would have.
3. grain reads and decodes the batches (``tfds`` decodes PNG/JPEG) in worker processes
   (``workers > 0``) or threads, ahead of the consumer. Images of one fixed size are stacked
   as ``uint8 [batch, H, W, C]``; images of varying size (ImageNet) are cropped on the host
   (:class:`HostCrop`: ``views`` random resized crops each, with a NumPy generator seeded by
   ``(seed, epoch, index)``, or a centre crop for evaluation), so every batch has one shape.
4. The trainer places each batch on the devices; its dispatch is asynchronous, so the next
   batch is read by the workers and copied to the devices while the previous step runs.

Fixed-size data sets (CIFAR, STL-10, Fashion-MNIST) are cropped on the device instead, inside
the jitted step (:func:`jaxcl.augment.random_resized_crop`), where it is cheap and the same
per-example key gives the same crop.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

import numpy as np

from jaxcl.data._arrays import nonnegative_int
from jaxcl.data._batches import _batch_size
from jaxcl.data._host_crop import HostCrop


def not_prepared_error(fn: str, name: str, data_dir) -> FileNotFoundError:
    """The one message for a data set that is not prepared where it was looked for."""
    where = (
        data_dir
        if data_dir is not None
        else "tfds's default (TFDS_DATA_DIR or ~/tensorflow_datasets)"
    )
    extra = ""
    base = name.split(":")[0]
    if base == "fashion_mnist":
        extra = (
            " Fashion-MNIST can also be prepared offline from its idx files (Debian package "
            "dataset-fashion-mnist): jaxcl.data.prepare_fashion_mnist(data_dir)."
        )
    if base == "imagenet2012":
        extra = (
            " ImageNet needs ILSVRC2012_img_train.tar and ILSVRC2012_img_val.tar in "
            "<data_dir>/downloads/manual first (tfds cannot download it)."
        )
    how = (
        "On a machine with network access and TensorFlow run "
        f"`tfds build {name} --file_format=array_record --data_dir=DIR`, copy DIR here and "
        "pass it as the data directory (config.data.data_dir)."
    )
    if name == "tiny_imagenet":  # tfds has no builder for it
        how = (
            "Prepare it from its zip (CS231n's tiny-imagenet-200.zip), offline: "
            "jaxcl.data.prepare_tiny_imagenet(data_dir, 'tiny-imagenet-200.zip')."
        )
    return FileNotFoundError(
        f"{fn}: data set `{name}` is not prepared in {where} (looked for "
        f"{name}/<version>/dataset_info.json and its array_record shards). jaxcl does not "
        f"download. {how}{extra}"
    )


def _get_many(records, keys: list[int]) -> list[dict]:
    try:
        # Batched reads are about 3x faster than one `records[i]` per example.
        return list(records.__getitems__(keys))
    except (TypeError, AttributeError):
        # tfds.testing.mock_data patches `__getitems__` with a function that misses its
        # `self`; single reads work there (a genuine error recurs below).
        return [records[i] for i in keys]


class _Rows:
    """Some rows of a record source, by position (picklable, for grain's workers)."""

    def __init__(self, records, indices: np.ndarray):
        self.records, self.indices = records, indices

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i):
        return self.records[int(self.indices[i])]

    def __getitems__(self, keys):
        return _get_many(self.records, [int(self.indices[k]) for k in keys])


@dataclasses.dataclass
class ImageSource:
    """One split of an image data set with random access (picklable: grain's workers get a
    copy).

    Attributes:
      name: the data set's tfds name.
      split: the split (tfds syntax, e.g. ``"unlabelled+train"``).
      records: the ``tfds.data_source`` (anything with ``len`` and ``__getitem__`` /
        ``__getitems__`` returning dicts).
      image_shape: ``(H, W, C)``, with ``None`` for sizes that vary between images.
      num_classes: number of labels.
      image_key, label_key: the features read.
    """

    name: str
    split: str
    records: object
    image_shape: tuple
    num_classes: int
    image_key: str = "image"
    label_key: str = "label"

    def __len__(self) -> int:
        return len(self.records)

    @property
    def fixed_size(self) -> bool:
        return None not in self.image_shape

    def examples(self, indices) -> list[dict]:
        return _get_many(self.records, [int(i) for i in indices])

    def subset(self, indices) -> ImageSource:
        """The examples at ``indices`` (in that order) as a source of their own: e.g. a
        random sample of a split whose records are stored sorted by class."""
        indices = np.asarray(indices, np.int64).reshape(-1)
        if indices.size and (indices.min() < 0 or indices.max() >= len(self)):
            raise IndexError(
                f"ImageSource.subset: `indices` span [{indices.min()}, {indices.max()}]; "
                f"expected within [0, {len(self)}) for `{self.name}` split {self.split!r}"
            )
        return dataclasses.replace(self, records=_Rows(self.records, indices))

    def read(self, indices) -> tuple[np.ndarray, np.ndarray]:
        """``(images uint8 [n, H, W, C], labels int32 [n])`` of fixed-size examples."""
        if not self.fixed_size:
            raise ValueError(
                f"ImageSource.read: `{self.name}` has images of varying size "
                f"{self.image_shape}; crop them on the host (HostCrop)"
            )
        examples = self.examples(indices)
        images = np.stack([np.asarray(e[self.image_key], np.uint8) for e in examples])
        labels = np.asarray([e[self.label_key] for e in examples], np.int32)
        return images.reshape((len(examples),) + tuple(self.image_shape)), labels


def open_images(
    name: str,
    split: str,
    data_dir: str | os.PathLike | None = None,
    *,
    image_key: str = "image",
    label_key: str = "label",
) -> ImageSource:
    """Opens ``split`` of the prepared tfds data set ``name`` (array_record) for streaming.

    Args:
      name: tfds name, optionally with version (``"cifar10"``, ``"imagenet2012:5.1.0"``).
      split: split in tfds syntax (``"train"``, ``"unlabelled+train"``, ``"train[:10%]"``).
      data_dir: folder holding ``<name>/<version>/``; None: tfds's default.
      image_key: the ``tfds.features.Image`` feature (uint8).
      label_key: the ``tfds.features.ClassLabel`` feature.

    Raises:
      FileNotFoundError: not prepared there; the message names the data set, the folder
        and the ``tfds build`` command that prepares it.
      ValueError: prepared in another file format, or a key is not an image / class label.

    Example (needs CIFAR-10 prepared with ``tfds build cifar10 --file_format=array_record``)::

      source = open_images("cifar10", "train", "~/tensorflow_datasets")
      images, labels = source.read([0, 1, 2])  # uint8 [3, 32, 32, 3], int32 [3]
    """
    fn = "open_images"
    # Imported here: tensorflow-datasets takes seconds to import and only image data needs it.
    import tensorflow_datasets as tfds

    if data_dir is not None:
        data_dir = os.path.expanduser(os.fspath(data_dir))
    try:
        records = tfds.data_source(name, split=split, data_dir=data_dir, download=False)
    except (NotImplementedError, AssertionError) as e:
        # tfds answers "random access not supported for TFRECORD" both when the folder holds
        # tfrecord shards and when it holds nothing at all; tell the two apart.
        builder = tfds.builder(name, data_dir=data_dir)
        if not builder.is_prepared():
            raise not_prepared_error(fn, name, data_dir) from e
        raise ValueError(
            f"{fn}: `{name}` in {builder.data_dir} is prepared as {builder.info.file_format}; "
            "streaming needs array_record. Convert it with `tfds convert_format "
            f"--out_file_format=array_record ...` or rebuild with `tfds build {name} "
            "--file_format=array_record`."
        ) from e
    except tfds.core.DatasetNotFoundError as e:
        # Tiny ImageNet: tfds has no builder for it, so an unprepared folder lands here (any
        # other unknown name keeps tfds's own message, with its "did you mean").
        if name.split(":")[0] == "tiny_imagenet":
            raise not_prepared_error(fn, name, data_dir) from e
        raise
    except ValueError as e:
        if "split" in str(e).lower():  # tfds: "Unknown split ..."
            raise ValueError(f"{fn}: `split`={split!r} is not a split of `{name}`: {e}") from e
        raise
    features = records.dataset_info.features
    for arg, key in (("image_key", image_key), ("label_key", label_key)):
        if key not in features:
            raise ValueError(
                f"{fn}: `{arg}`={key!r}: `{name}` has no such feature; it has {sorted(features)}"
            )
    image, label = features[image_key], features[label_key]
    if not isinstance(image, tfds.features.Image) or image.np_dtype != np.uint8:
        raise ValueError(f"{fn}: `image_key`={image_key!r} must name a uint8 Image, got {image!r}")
    if not isinstance(label, tfds.features.ClassLabel):
        raise ValueError(f"{fn}: `label_key`={label_key!r} must name a ClassLabel, got {label!r}")
    return ImageSource(
        name=records.dataset_info.name,
        split=split,
        records=records,
        image_shape=tuple(image.shape),
        num_classes=int(label.num_classes),
        image_key=image_key,
        label_key=label_key,
    )


# ---------------------------------------------------------------------------------------------
# Batches


# The host crops' stream tag: NumPy pads a seed list with zeros, so example 0's crops drawn
# from ``[seed, epoch, 0]`` would be the stream that ordered the epoch (``[seed, epoch]``).
_CROP_STREAM = 0x43524F50


def epoch_order(num_examples: int, seed: int, epoch: int) -> np.ndarray:
    """The order of the examples in ``epoch``: ``default_rng([seed, epoch]).permutation``."""
    return np.random.default_rng([seed, epoch]).permutation(num_examples)


@dataclasses.dataclass(frozen=True)
class _ReadBatch:
    """Batch number -> ``(images, labels, real)``: grain maps it over the batch numbers (in its
    workers; picklable, stateless). Training: number ``g`` is batch ``g % per_epoch`` of epoch
    ``epoch + g // per_epoch`` (one reader spans consecutive epochs, so its worker processes
    live across them); evaluation (``epoch=None``): the split in stored order."""

    source: ImageSource
    batch_size: int
    seed: int
    epoch: int | None  # None: the split in its stored order (evaluation)
    crop: HostCrop | None

    def __call__(self, g: int):
        n = len(self.source)
        if self.epoch is None:
            epoch = 0
            rows = np.arange(g * self.batch_size, min((g + 1) * self.batch_size, n))
        else:
            offset, b = divmod(g, n // self.batch_size)
            epoch = self.epoch + offset
            rows = epoch_order(n, self.seed, epoch)[b * self.batch_size : (b + 1) * self.batch_size]
        if self.crop is None:
            images, labels = self.source.read(rows)
        else:
            examples = self.source.examples(rows)
            images = np.stack(
                [
                    self.crop(
                        e[self.source.image_key],
                        np.random.default_rng([self.seed, epoch, int(i), _CROP_STREAM]),
                    )
                    for i, e in zip(rows, examples, strict=True)
                ]
            )
            labels = np.asarray([e[self.source.label_key] for e in examples], np.int32)
        real = len(rows)
        if real < self.batch_size:  # evaluation's last batch: padded, with its real count
            pad = self.batch_size - real
            images = np.concatenate([images, np.zeros((pad,) + images.shape[1:], images.dtype)])
            labels = np.concatenate([labels, np.zeros(pad, labels.dtype)])
        return images, labels, real


def image_batches(
    source: ImageSource,
    *,
    batch_size: int,
    seed: int = 0,
    epoch: int | None = 0,
    start: int = 0,
    epochs: int = 1,
    workers: int = 0,
    crop: HostCrop | None = None,
    buffer: int = 4,
) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """The batches of one epoch (or of one pass over the split in order) from ``source``.

    Args:
      source: an :class:`ImageSource`.
      batch_size: examples per batch.
      seed, epoch: the shuffle: batch ``b`` holds ``epoch_order(n, seed, epoch)[b * batch_size
        : (b + 1) * batch_size]``; the last partial batch is dropped. ``epoch=None``: the
        split in its stored order, every example once, the last batch zero-padded
        (evaluation).
      start: the first batch number (a resumed run starts mid-epoch).
      epochs: training only: the batches of ``epochs`` consecutive epochs from ``epoch``
        (each its own order), one after the other, read by the same worker processes
        (starting workers costs seconds; the trainer asks for all its remaining epochs).
      workers: grain worker processes (0: threads in this process).
      crop: a :class:`HostCrop` (required for images of varying size).
      buffer: batches read ahead per worker (or by the threads).

    Returns:
      An iterator (the arguments are checked at the call) of ``(images uint8, labels int32,
      real)``: ``images`` is ``[batch, H, W, C]`` (or
      ``[batch, views, size, size, C]`` with a training :class:`HostCrop`); ``real`` is the
      number of real examples (less than ``batch_size`` only in an evaluation pass's last
      batch).

    Example (with a prepared CIFAR-10)::

      source = open_images("cifar10", "train", data_dir)
      for images, labels, real in image_batches(source, batch_size=512, seed=0, epoch=3):
          ...
    """
    import grain

    fn = "image_batches"
    batch_size = _batch_size(fn, batch_size)
    nonnegative_int(fn, "seed", seed)
    if epoch is not None:
        nonnegative_int(fn, "epoch", epoch)
    start = nonnegative_int(fn, "start", start)
    epochs = nonnegative_int(fn, "epochs", epochs)
    if epochs == 0 or (epoch is None and epochs != 1):
        raise ValueError(
            f"{fn}: `epochs`={epochs}: expected >= 1 (and 1 for an evaluation pass, epoch=None)"
        )
    workers = nonnegative_int(fn, "workers", workers)
    if crop is None and not source.fixed_size:
        raise ValueError(
            f"{fn}: `{source.name}` has images of varying size {source.image_shape}; pass "
            "`crop=HostCrop(size)`"
        )
    n = len(source)
    if epoch is None:
        count = -(-n // batch_size)
    else:
        count = n // batch_size
        if count == 0:
            raise ValueError(
                f"{fn}: `batch_size`={batch_size} is larger than the {n} examples of "
                f"`{source.name}` split {source.split!r}"
            )
    if start > count:
        raise ValueError(f"{fn}: `start`={start} is past the epoch's {count} batches")
    reader = _ReadBatch(source, batch_size, seed, epoch, crop)
    ds = grain.MapDataset.range(start, count * epochs).map(reader)
    it = ds.to_iter_dataset(
        grain.ReadOptions(num_threads=1 if workers else 2, prefetch_buffer_size=buffer)
    )
    if workers:
        from absl import flags

        # grain's worker processes read absl flags (their defaults are fine); outside an absl
        # app nothing parsed them yet.
        if not flags.FLAGS.is_parsed():
            flags.FLAGS.mark_as_parsed()
        it = it.mp_prefetch(
            grain.MultiprocessingOptions(num_workers=workers, per_worker_buffer_size=buffer)
        )
    # (The arguments are checked above, at the call; reading, and any worker processes,
    # start with the first batch.)
    return _iterate(it)


def _iterate(dataset):
    yield from dataset
