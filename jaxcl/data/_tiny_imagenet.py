"""Tiny ImageNet (200 classes, 64x64) prepared offline as a tfds array_record folder.

tfds has no builder for Tiny ImageNet, so the image task cannot ``tfds build`` it. The data
set is distributed as ``tiny-imagenet-200.zip`` (Stanford CS231n); :func:`prepare_tiny_imagenet`
reads that zip (or the folder it unpacks to) and writes ``<data_dir>/tiny_imagenet/1.0.0/``,
which :func:`jaxcl.data.open_images` then streams exactly as it streams CIFAR-10.

The layout read (the zip's, under ``tiny-imagenet-200/``)::

  wnids.txt                               the 200 WordNet ids, one per line
  train/<wnid>/images/<wnid>_<k>.JPEG     500 training images per class
  val/images/val_<k>.JPEG                 10,000 validation images
  val/val_annotations.txt                 <file> TAB <wnid> TAB <box>, one line per image

Labels are the positions of the wnids in sorted order (what ``torchvision``'s ``ImageFolder``
gives the official MetAug code's ``train/`` folder); the class names are the wnids. The test
split has no public labels and is not written. Some JPEGs are grayscale: every image is
converted to RGB, then stored as PNG, so what is streamed is exactly what Pillow decoded.
"""

from __future__ import annotations

import os
import pathlib
import posixpath
import zipfile

import numpy as np

NAME, VERSION = "tiny_imagenet", "1.0.0"
IMAGE_SHAPE = (64, 64, 3)
ZIP_ROOT = "tiny-imagenet-200"


class _Tree:
    """Files of the unpacked folder or of the zip, by path relative to the data set's root."""

    def __init__(self, source: pathlib.Path):
        fn = "prepare_tiny_imagenet"
        self.source = source
        self.zip = None
        if source.is_file():
            if not zipfile.is_zipfile(source):
                raise ValueError(f"{fn}: `source`={str(source)!r} is a file but not a zip")
            self.zip = zipfile.ZipFile(source)
            names = set(self.zip.namelist())
            roots = [n[: -len("wnids.txt")] for n in names if posixpath.basename(n) == "wnids.txt"]
            self.root = min(roots, key=len) if roots else None
            self.names = names
        elif source.is_dir():
            found = [p for p in (source, source / ZIP_ROOT) if (p / "wnids.txt").is_file()]
            self.root = found[0] if found else None
        else:
            raise FileNotFoundError(f"{fn}: `source`={str(source)!r} does not exist")
        if self.root is None:
            self.close()
            raise FileNotFoundError(
                f"{fn}: `source`={str(source)!r} holds no wnids.txt (expected the Tiny ImageNet "
                f"zip or its folder, with {ZIP_ROOT}/wnids.txt, train/ and val/)"
            )

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def exists(self, rel: str) -> bool:
        if self.zip is not None:
            return self.root + rel in self.names
        return (self.root / rel).is_file()

    def read(self, rel: str) -> bytes:
        if not self.exists(rel):
            raise FileNotFoundError(
                f"prepare_tiny_imagenet: {rel} is missing from `source`={str(self.source)!r}"
            )
        if self.zip is not None:
            return self.zip.read(self.root + rel)
        return (self.root / rel).read_bytes()

    def listdir(self, rel: str) -> list[str]:
        """The file names directly in folder ``rel``, sorted."""
        if self.zip is not None:
            prefix = self.root + rel.rstrip("/") + "/"
            out = {n[len(prefix) :] for n in self.names if n.startswith(prefix)}
            return sorted(n for n in out if n and "/" not in n)
        folder = self.root / rel
        return sorted(p.name for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def _decode(data: bytes, what: str) -> np.ndarray:
    import io

    import PIL.Image

    try:
        with PIL.Image.open(io.BytesIO(data)) as image:
            rgb = np.asarray(image.convert("RGB"), np.uint8)
    except (OSError, ValueError) as e:  # PIL: unidentified or truncated image
        raise ValueError(f"prepare_tiny_imagenet: {what} is not a readable image: {e}") from e
    if rgb.shape != IMAGE_SHAPE:
        raise ValueError(f"prepare_tiny_imagenet: {what} is {rgb.shape}, expected {IMAGE_SHAPE}")
    return rgb


def _files(tree: _Tree) -> tuple[list[str], dict]:
    """``(wnids sorted, {"train": [(path, label)], "validation": [(path, label)]})``, paths
    relative to the root, in the order they are written: training images by class then file
    name, validation images in ``val_annotations.txt``'s order."""
    wnids = sorted({w.strip() for w in tree.read("wnids.txt").decode().split() if w.strip()})
    label = {w: i for i, w in enumerate(wnids)}
    train = []
    for w in wnids:
        files = [f for f in tree.listdir(f"train/{w}/images") if f.lower().endswith(".jpeg")]
        if not files:
            raise FileNotFoundError(
                f"prepare_tiny_imagenet: no train/{w}/images/*.JPEG in `source`="
                f"{str(tree.source)!r}"
            )
        train += [(f"train/{w}/images/{f}", label[w]) for f in files]
    validation = []
    lines = tree.read("val/val_annotations.txt").decode().splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) < 2:
            raise ValueError(
                f"prepare_tiny_imagenet: val/val_annotations.txt line {number} is {line!r}; "
                "expected <file> TAB <wnid> TAB <box>"
            )
        file, wnid = parts[0].strip(), parts[1].strip()
        if wnid not in label:
            raise ValueError(
                f"prepare_tiny_imagenet: val/val_annotations.txt names {wnid!r} for {file}, "
                "which is not in wnids.txt"
            )
        validation.append((f"val/images/{file}", label[wnid]))
    # Every listed file before anything is written: a half-unpacked folder fails here, not
    # after minutes of writing the training split.
    missing = [path for path, _ in validation if not tree.exists(path)]
    if missing:
        raise FileNotFoundError(
            f"prepare_tiny_imagenet: {len(missing)} validation images listed in "
            f"val/val_annotations.txt are missing from `source`={str(tree.source)!r}, e.g. "
            f"{missing[0]}"
        )
    return wnids, {"train": train, "validation": validation}


def prepare_tiny_imagenet(data_dir: str | os.PathLike, source: str | os.PathLike) -> pathlib.Path:
    """Prepares Tiny ImageNet from ``tiny-imagenet-200.zip`` (or its unpacked folder) as a tfds
    array_record folder ``<data_dir>/tiny_imagenet/1.0.0/``, offline.

    Splits ``train`` (100,000 images) and ``validation`` (10,000), ``uint8 [64, 64, 3]`` RGB,
    labels 0-199 in the sorted order of the wnids (module docstring). Nothing is written when
    the folder is already prepared. Images are decoded and written one at a time (the data set
    is never held in memory); the full set takes a few minutes.

    Args:
      data_dir: the tfds data folder (the image task's ``config.data.data_dir``).
      source: the zip, or a folder holding ``wnids.txt`` (or ``tiny-imagenet-200/wnids.txt``).

    Returns:
      ``data_dir``.

    Raises:
      FileNotFoundError: ``source`` missing, or a file the layout needs missing (named).
      ValueError: a validation label outside ``wnids.txt``, or an image not 64x64.
    """
    from jaxcl.data._tfds_write import write_tfds_images

    data_dir = pathlib.Path(os.path.expanduser(os.fspath(data_dir)))
    if (data_dir / NAME / VERSION / "dataset_info.json").is_file():  # written last
        return data_dir
    with _Tree(pathlib.Path(os.path.expanduser(os.fspath(source)))) as tree:
        wnids, files = _files(tree)
        splits = {
            split: ((_decode(tree.read(path), path) for path, _ in rows), [y for _, y in rows])
            for split, rows in files.items()
        }
        return write_tfds_images(
            data_dir,
            NAME,
            splits,
            num_classes=len(wnids),
            version=VERSION,
            image_shape=IMAGE_SHAPE,
            class_names=wnids,
        )
