"""Writing arrays as a prepared tfds folder (array_record), without TensorFlow: for data tfds
cannot fetch here (Fashion-MNIST from its Debian idx files) and for tests."""

from __future__ import annotations

import os
import pathlib

import numpy as np


def write_tfds_images(
    data_dir: str | os.PathLike,
    name: str,
    splits: dict,
    *,
    num_classes: int,
    version: str = "1.0.0",
    image_shape: tuple | None = None,
    class_names: list[str] | None = None,
) -> pathlib.Path:
    """Writes ``splits`` (``{split: (uint8 images [n, H, W, C], labels [n])}``) as a prepared
    tfds folder ``<data_dir>/<name>/<version>/`` in array_record, readable by
    ``tfds.data_source`` and :func:`open_images`; no TensorFlow needed.

    The features are ``{"image": Image(shape=(H, W, C)) (PNG), "label":
    ClassLabel(num_classes)}``, the layout that of ``tfds build``. With ``image_shape`` given,
    each split's images may be any iterable of ``[H, W, C]`` arrays (a generator that decodes
    files one by one: the split is never held in memory; its labels still a sequence);
    ``class_names`` name the labels.
    """
    import io

    import PIL.Image
    import tensorflow_datasets as tfds
    from array_record.python import array_record_module

    if image_shape is None:
        image_shape = next(iter(splits.values()))[0].shape[1:]
    shape = tuple(int(s) for s in image_shape)
    label = (
        tfds.features.ClassLabel(names=list(class_names))
        if class_names is not None
        else tfds.features.ClassLabel(num_classes=num_classes)
    )
    if label.num_classes != num_classes:
        raise ValueError(
            f"write_tfds_images: {len(class_names)} `class_names` for `num_classes`={num_classes}"
        )
    features = tfds.features.FeaturesDict(
        {"image": tfds.features.Image(shape=shape), "label": label}
    )
    root = pathlib.Path(data_dir) / name / version
    root.mkdir(parents=True, exist_ok=True)
    split_infos = []
    for split, (images, labels) in splits.items():
        path = root / f"{name}-{split}.array_record-00000-of-00001"
        tmp = path.with_name(path.name + ".tmp")
        writer = array_record_module.ArrayRecordWriter(os.fspath(tmp), "group_size:1")
        try:
            for image, y in zip(images, labels, strict=True):
                image = np.asarray(image)
                if image.dtype != np.uint8:  # PNG would wrap integers and zero out floats
                    raise ValueError(
                        f"write_tfds_images: the images of split {split!r} must be uint8, got "
                        f"dtype {image.dtype}"
                    )
                if tuple(image.shape) != shape:
                    raise ValueError(
                        f"write_tfds_images: an image of split {split!r} has shape "
                        f"{tuple(image.shape)}, expected {shape}"
                    )
                png = io.BytesIO()
                pil = image[..., 0] if image.shape[-1] == 1 else image
                PIL.Image.fromarray(np.asarray(pil, np.uint8)).save(
                    png, format="PNG", compress_level=1
                )
                writer.write(features.serialize_example({"image": png.getvalue(), "label": int(y)}))
        except BaseException:  # a bad image, or the images' generator failed: no partial shard
            writer.close()
            tmp.unlink(missing_ok=True)
            raise
        writer.close()
        os.replace(tmp, path)
        split_infos.append(
            tfds.core.SplitInfo(name=split, shard_lengths=[len(labels)], num_bytes=0)
        )
    # dataset_info.json last: its presence is what marks the folder as prepared.
    tfds.folder_dataset.write_metadata(
        data_dir=root, features=features, split_infos=split_infos, check_data=False
    )
    return pathlib.Path(data_dir)


def prepare_fashion_mnist(
    data_dir: str | os.PathLike, idx_dir: str | os.PathLike | None = None
) -> pathlib.Path:
    """Prepares Fashion-MNIST as a tfds array_record folder from its idx files, offline.

    The idx files come from ``idx_dir``, ``$JAXCL_FASHION_MNIST_DIR`` or the Debian package
    ``dataset-fashion-mnist`` (see :func:`load_fashion_mnist`). Writes
    ``<data_dir>/fashion_mnist/3.0.1/`` (tfds's version of the data set) unless it is already
    there; the image task then streams it exactly as it streams CIFAR-10. Takes about 10 s.

    Returns:
      ``data_dir``.
    """
    import tensorflow_datasets as tfds

    from jaxcl.data._fashion_mnist import read_fashion_mnist_splits

    data_dir = pathlib.Path(os.path.expanduser(os.fspath(data_dir)))
    if tfds.builder("fashion_mnist", data_dir=os.fspath(data_dir)).is_prepared():
        return data_dir
    raw = read_fashion_mnist_splits(idx_dir)
    splits = {split: (images[..., None], labels) for split, (images, labels) in raw.items()}
    return write_tfds_images(data_dir, "fashion_mnist", splits, num_classes=10, version="3.0.1")
