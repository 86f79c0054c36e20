"""Tiny ImageNet prepared from its zip (or folder) as a tfds array_record folder, and MetAug's
Tiny ImageNet row run on it. The archive here is a small one written in the official layout
(``tiny-imagenet-200/wnids.txt``, ``train/<wnid>/images/*.JPEG``, ``val/images``,
``val/val_annotations.txt``): the real one is not on this machine."""

from __future__ import annotations

import io
import os
import pathlib
import zipfile

import numpy as np
import PIL.Image
import pytest

from jaxcl import training
from jaxcl.configs import metaug_images
from jaxcl.data import open_images, prepare_tiny_imagenet

# Unsorted on purpose: labels follow the sorted wnids, not the file's order.
WNIDS = ["n09999999", "n01443537", "n02124075"]
PER_CLASS, NUM_VAL = 4, 5


def _jpeg(rng, gray=False) -> bytes:
    shape = (64, 64) if gray else (64, 64, 3)
    out = io.BytesIO()
    PIL.Image.fromarray(rng.integers(0, 256, shape, np.uint8)).save(out, "JPEG", quality=90)
    return out.getvalue()


def write_tree(root: pathlib.Path, *, val_wnid=None, size=64, newline="\n") -> dict:
    """The official layout under ``root/tiny-imagenet-200``; returns {relative path: bytes}."""
    rng = np.random.default_rng(0)
    files = {"wnids.txt": (newline.join(WNIDS) + newline).encode()}
    for c, w in enumerate(WNIDS):
        for k in range(PER_CLASS):
            files[f"train/{w}/images/{w}_{k}.JPEG"] = _jpeg(rng, gray=(c, k) == (1, 2))
        files[f"train/{w}/{w}_boxes.txt"] = b""  # present in the real archive; not read
    lines = []
    for k in range(NUM_VAL):
        files[f"val/images/val_{k}.JPEG"] = _jpeg(rng, gray=k == 3)
        lines.append(f"val_{k}.JPEG\t{val_wnid or WNIDS[k % 3]}\t0\t0\t63\t63")
    files["val/val_annotations.txt"] = (newline.join(lines) + newline).encode()
    if size != 64:
        out = io.BytesIO()
        PIL.Image.new("RGB", (size, size)).save(out, "JPEG")
        files["val/images/val_0.JPEG"] = out.getvalue()
    for rel, data in files.items():
        path = root / "tiny-imagenet-200" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


def zip_tree(root: pathlib.Path, files: dict) -> pathlib.Path:
    """The zip as distributed: its folders have entries of their own, then the files."""
    path = root / "tiny-imagenet-200.zip"
    folders = {str(pathlib.PurePosixPath(rel).parent) for rel in files} - {"."}
    for folder in list(folders):
        folders |= {str(p) for p in pathlib.PurePosixPath(folder).parents if str(p) != "."}
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("tiny-imagenet-200/", b"")
        for folder in sorted(folders):
            z.writestr(f"tiny-imagenet-200/{folder}/", b"")
        for rel, data in files.items():
            z.writestr(f"tiny-imagenet-200/{rel}", data)
    return path


def _rgb(data: bytes) -> np.ndarray:
    return np.asarray(PIL.Image.open(io.BytesIO(data)).convert("RGB"))


def test_prepared_zip_holds_the_decoded_images_and_sorted_wnid_labels(tmp_path):
    files = write_tree(tmp_path / "src")
    data_dir = prepare_tiny_imagenet(tmp_path / "tfds", zip_tree(tmp_path, files))
    train = open_images("tiny_imagenet", "train", data_dir)
    val = open_images("tiny_imagenet", "validation", data_dir)
    assert train.image_shape == (64, 64, 3) and train.num_classes == 3
    assert len(train) == 3 * PER_CLASS and len(val) == NUM_VAL
    names = train.records.dataset_info.features["label"].names
    assert names == sorted(WNIDS)
    images, labels = train.read(range(len(train)))
    # Training images by class (sorted wnids), then by file name; grayscale made RGB.
    expected = [
        (f"train/{w}/images/{w}_{k}.JPEG", c)
        for c, w in enumerate(sorted(WNIDS))
        for k in range(PER_CLASS)
    ]
    for image, label, (rel, c) in zip(images, labels, expected, strict=True):
        np.testing.assert_array_equal(image, _rgb(files[rel]))
        assert label == c
    images, labels = val.read(range(NUM_VAL))
    for k in range(NUM_VAL):
        np.testing.assert_array_equal(images[k], _rgb(files[f"val/images/val_{k}.JPEG"]))
        assert labels[k] == sorted(WNIDS).index(WNIDS[k % 3])
    gray = images[3]  # a grayscale JPEG: three equal channels
    np.testing.assert_array_equal(gray[..., 0], gray[..., 2])


def test_the_folder_gives_what_the_zip_gives_and_prepared_data_is_kept(tmp_path):
    files = write_tree(tmp_path / "src", newline="\r\n")  # Windows line ends read the same
    from_zip = prepare_tiny_imagenet(tmp_path / "a", zip_tree(tmp_path, files))
    # The unpacked folder, given either as itself or as its parent.
    from_dir = prepare_tiny_imagenet(tmp_path / "b", tmp_path / "src" / "tiny-imagenet-200")
    from_parent = prepare_tiny_imagenet(tmp_path / "c", tmp_path / "src")
    for split in ("train", "validation"):
        a, b, c = (
            open_images("tiny_imagenet", split, d) for d in (from_zip, from_dir, from_parent)
        )
        for x, y in ((a, b), (a, c)):
            xi, xl = x.read(range(len(x)))
            yi, yl = y.read(range(len(y)))
            np.testing.assert_array_equal(xi, yi)
            np.testing.assert_array_equal(xl, yl)
    info = tmp_path / "a" / "tiny_imagenet" / "1.0.0" / "dataset_info.json"
    before = info.stat().st_mtime_ns
    prepare_tiny_imagenet(tmp_path / "a", tmp_path / "nowhere.zip")  # prepared: not read
    assert info.stat().st_mtime_ns == before


def test_bad_sources_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="`source`=.*nowhere.zip.*does not exist"):
        prepare_tiny_imagenet(tmp_path / "tfds", tmp_path / "nowhere.zip")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no wnids.txt"):
        prepare_tiny_imagenet(tmp_path / "tfds", tmp_path / "empty")
    (tmp_path / "notzip.zip").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a zip"):
        prepare_tiny_imagenet(tmp_path / "tfds", tmp_path / "notzip.zip")
    write_tree(tmp_path / "badval", val_wnid="n00000000")
    with pytest.raises(ValueError, match="n00000000.*not in wnids.txt"):
        prepare_tiny_imagenet(tmp_path / "tfds", tmp_path / "badval")
    write_tree(tmp_path / "badsize", size=32)
    with pytest.raises(ValueError, match=r"val/images/val_0.JPEG is \(32, 32, 3\), expected"):
        prepare_tiny_imagenet(tmp_path / "tfds", tmp_path / "badsize")
    written = tmp_path / "tfds" / "tiny_imagenet" / "1.0.0"
    assert not list(written.glob("*validation*")) and not (written / "dataset_info.json").exists()
    os.remove(tmp_path / "badsize" / "tiny-imagenet-200" / "val" / "val_annotations.txt")
    with pytest.raises(FileNotFoundError, match="val_annotations.txt is missing"):
        prepare_tiny_imagenet(tmp_path / "tfds2", tmp_path / "badsize")
    # Not prepared: the image loader says how to prepare it (other unknown names keep tfds's
    # own message).
    with pytest.raises(FileNotFoundError, match=r"prepare_tiny_imagenet\(data_dir"):
        open_images("tiny_imagenet", "train", tmp_path / "tfds3")
    import tensorflow_datasets as tfds

    with pytest.raises(tfds.core.DatasetNotFoundError, match=r"(?s)tiny_imagenett.*Did you mean"):
        open_images("tiny_imagenett", "train", tmp_path / "tfds3")


def test_broken_archives_fail_before_writing_and_name_the_file(tmp_path):
    src = tmp_path / "src" / "tiny-imagenet-200"
    write_tree(tmp_path / "src")
    (src / "val" / "images" / "val_4.JPEG").unlink()  # half unpacked
    with pytest.raises(FileNotFoundError, match="1 validation images.*val/images/val_4.JPEG"):
        prepare_tiny_imagenet(tmp_path / "tfds", tmp_path / "src")
    assert not (tmp_path / "tfds").exists()  # nothing written, not even the training split
    write_tree(tmp_path / "src")
    annotations = src / "val" / "val_annotations.txt"
    annotations.write_text(annotations.read_text() + "broken line\n")
    with pytest.raises(ValueError, match="line 6 is 'broken line'; expected <file> TAB"):
        prepare_tiny_imagenet(tmp_path / "tfds", tmp_path / "src")
    write_tree(tmp_path / "src")
    (src / "train" / WNIDS[0] / "images" / f"{WNIDS[0]}_1.JPEG").write_bytes(b"not a jpeg")
    with pytest.raises(ValueError, match=f"train/{WNIDS[0]}/images/{WNIDS[0]}_1.JPEG is not"):
        prepare_tiny_imagenet(tmp_path / "tfds", tmp_path / "src")


def test_metaug_tiny_imagenet_row_runs_on_the_prepared_folder(tmp_path):
    """Table 1's Tiny ImageNet fc row at a toy width, two steps: the only-OUCL one (the same
    three colour views, split encoders and queues as MetAug's; the generators and the
    second-order step run on CIFAR-10's row in test_metaug.py)."""
    files = write_tree(tmp_path / "src")
    data_dir = prepare_tiny_imagenet(tmp_path / "tfds", zip_tree(tmp_path, files))
    config = metaug_images.make("oucl", "tiny_imagenet,fc")
    assert config.data.name == "tiny_imagenet" and config.model.representation == "fc"
    with config.unlocked():
        config.data.data_dir = str(data_dir)
        config.model.update(alexnet_width=0.0625, embed_dim=8)
        config.method.queue_size = 12
        config.data.workers = 0
        config.mesh.data = 1
        config.train.update(batch_size=6, epochs=1, log_every_steps=1)
        config.eval.update(linear_epochs=2, linear_batch_size=4, eval_batch_size=4)
        config.eval.knn_max_train = 12
    results = training.train_and_evaluate(config, str(tmp_path / "run"))
    assert results["steps"] == 2 and np.isfinite(results["final_loss"])
    assert 0.0 <= results["test_top1"] <= 1.0


def test_knn_bank_is_a_seeded_random_sample_not_the_first_classes(tmp_path, monkeypatch):
    """The prepared training split is stored class by class: a kNN bank of its first
    ``knn_max_train`` images would hold one class here (the first 20 of 200 on the real
    set). The bank is a seeded random sample, the same rows whether streamed on its own (the
    monitor) or cut from the whole split's features (the final scores)."""
    import jax.numpy as jnp

    from jaxcl import evaluation, methods
    from jaxcl.training import _mesh, _task

    files = write_tree(tmp_path / "src")
    data_dir = prepare_tiny_imagenet(tmp_path / "tfds", zip_tree(tmp_path, files))
    config = metaug_images.make("oucl", "tiny_imagenet,fc")
    with config.unlocked():
        config.data.update(data_dir=str(data_dir), workers=0)
        config.mesh.data = 1
        config.train.batch_size = 8  # a divisor of the 4096-row queue
        config.eval.update(knn_max_train=PER_CLASS, eval_batch_size=4)
        config.seed = 3
    task = _task.make_task(config, methods.get(config.method.name)(config), _mesh.make_mesh(1))
    images, labels = open_images("tiny_imagenet", "train", data_dir).read(range(3 * PER_CLASS))
    assert np.all(labels[:PER_CLASS] == 0)  # the first images: one class
    rows = task.knn_rows()
    want = np.sort(np.random.default_rng(3).permutation(3 * PER_CLASS)[:PER_CLASS])
    np.testing.assert_array_equal(rows, want)
    assert len(set(labels[rows].tolist())) > 1

    def features(x):  # a few pixels of each (centre-cropped) image as its features
        return jnp.asarray(x, jnp.float32).reshape(x.shape[0], -1)[:, :16]

    seen = []
    monkeypatch.setattr(
        evaluation, "knn_accuracy", lambda tf, ty, *a, **k: seen.append((tf, ty)) or 0.0
    )
    task._knn(features)  # the monitor: the bank's rows streamed from the split
    whole = task._features(features, "train")
    task._knn(features, test=task._features(features, "test"), train=whole)
    for train_f, train_y in seen:
        np.testing.assert_array_equal(train_y, labels[rows])
        np.testing.assert_array_equal(train_f, whole[0][rows])
