"""The image task: images streamed from tfds array_record folders (``jaxcl.data.open_images``),
a ResNet encoder, SimCLR's linear evaluation and a kNN monitor, both streamed.

A batch is ``Batch(x=uint8 images, y=labels)`` with rows split over the ``data`` axis. For
fixed-size data sets the images are whole (``[B, H, W, C]``) and each method crops and
distorts them on the device; for ImageNet (images of varying size) the host takes
``views`` random resized crops per image (``[B, views, S, S, C]``) and the device does the
rest (see :mod:`jaxcl.data._images`).

Evaluation streams the splits in their stored order through the frozen encoder. Without
augmentation (``eval.linear_augment = False``, DACL's domain-agnostic rows) the features are
computed once and the linear classifier is trained on them (:func:`jaxcl.evaluation.
linear_probe`, the tabular protocol); with augmentation (SimCLR's rows: random resized crop
+ flip) every epoch streams the training images again, crops them on the device and
recomputes the features, as SimCLR's linear evaluation does.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxcl import augment, evaluation, methods, optim
from jaxcl import data as data_lib
from jaxcl.evaluation import _linear_model as lm
from jaxcl.training import _mesh, _task
from jaxcl.training._errors import ConfigError

# config.data.name -> (tfds name, pretraining split, linear-training split, test split).
IMAGE_DATASETS = {
    "cifar10": ("cifar10", "train", "train", "test"),
    "cifar100": ("cifar100", "train", "train", "test"),
    # STL-10 pretrains on its 100k unlabelled images plus the 5k labelled ones.
    "stl10": ("stl10", "unlabelled+train", "train", "test"),
    "imagenet2012": ("imagenet2012", "train", "train", "validation"),
    # Prepared from its zip by jaxcl.data.prepare_tiny_imagenet (tfds has no builder).
    "tiny_imagenet": ("tiny_imagenet", "train", "train", "validation"),
    # The real image set of this machine: prepared offline from the Debian idx files.
    "fashion_mnist_images": ("fashion_mnist", "train", "train", "test"),
}
# The side crops are resized to, by default (ImageNet's images vary in size).
DEFAULT_SIZE = {"imagenet2012": 224}


def data_dir(cfg) -> str | None:
    """``config.data.data_dir``, else ``$TFDS_DATA_DIR``, else tfds's default (None).
    Fashion-MNIST is prepared there from its idx files when it is not yet."""
    root = cfg.data_dir or os.environ.get("TFDS_DATA_DIR") or None
    if cfg.name == "fashion_mnist_images":
        root = root or os.path.expanduser("~/tensorflow_datasets")
        data_lib.prepare_fashion_mnist(root)
    return root


def config_defaults(data: str, method, config) -> dict:
    """The image task's keys (see ``register_task``)."""
    del config
    _, pretrain, train, test = IMAGE_DATASETS[data]
    if method.supervised:  # trained on labels: not on STL-10's unlabelled images (label -1)
        pretrain = train
    keys = {
        "data": {
            "data_dir": "",  # prepared tfds folder ("" = $TFDS_DATA_DIR or ~/tensorflow_datasets)
            "pretrain_split": pretrain,  # tfds split syntax: "train[:10%]" for a quick run
            "train_split": train,
            "test_split": test,
            "image_size": DEFAULT_SIZE.get(data, 0),  # crop side; 0 = the images' own
            "workers": 2,  # grain worker processes reading and decoding (0: threads)
        },
        "train": {},
        "eval": {"eval_batch_size": 512},  # images per forward pass when evaluating
    }
    if method.pretrains:
        keys["train"]["batch_size"] = 512
    if not method.supervised:
        if method.pretrains:
            keys["train"]["knn_every_epochs"] = 0  # 0 = only at the end
        keys["eval"].update(
            linear_epochs=100,
            linear_batch_size=256,
            linear_lr=0.1,
            linear_optimizer="lars",
            linear_trust_ratio=False,  # LARS's trust ratio on the classifier (SimCLR: no)
            linear_standardize=False,  # z-score the cached features first (SimCLR: no)
            linear_augment=False,  # random resized crop + flip while fitting (SimCLR rows)
            knn_k=200,
            knn_max_train=10000,
        )
    return keys


# Salts the augmented probe's seed (batch order, crops, flips) apart from pretraining's.
_PROBE_SALT = 0x9B0BE


class ImageTask:
    """Streamed image batches; linear evaluation and kNN on the frozen encoder."""

    kind = "image"

    def __init__(self, config, method, mesh):
        self.config, self.method, self.mesh = config, method, mesh
        self._reader, self._reader_at = None, None  # the training reader and its position
        cfg = config.data
        tfds_name, *_ = IMAGE_DATASETS[cfg.name]
        root = data_dir(cfg)
        self.sources = {
            role: data_lib.open_images(tfds_name, cfg[f"{role}_split"], root)
            for role in ("pretrain", "train", "test")
        }
        src = self.sources["pretrain"]
        self.name = cfg.name
        native = src.image_shape[0] if src.fixed_size else 0
        if native and cfg.image_size not in (0, native):
            # the device views of fixed-size images keep their side; a probe or a DataSpec
            # at another size would not match what the encoder was pretrained on
            raise ConfigError(
                f"config.data.image_size = {cfg.image_size!r}: {cfg.name} has fixed-size "
                f"images {src.image_shape}, which every view keeps; expected 0 or {native}"
            )
        self.size = cfg.image_size or native
        if not self.size:
            raise ConfigError(
                f"config.data.image_size = 0: {cfg.name} has images of varying size "
                f"{src.image_shape}; give the side of the crops"
            )
        channels = src.image_shape[-1]
        self.host_crop = not src.fixed_size
        self.spec = methods.DataSpec(
            "image", channels, src.num_classes, image_shape=(self.size, self.size, channels)
        )
        if not method.pretrains:
            self.steps_per_epoch = self.examples_per_step = 0
            return
        batch_size = config.train.batch_size
        if batch_size % mesh.size:
            raise ConfigError(
                f"config.train.batch_size = {batch_size}: must be a multiple of the "
                f"{mesh.size} devices on the data axis"
            )
        if batch_size > len(src):
            raise ConfigError(
                f"config.train.batch_size = {batch_size}: larger than the {len(src)} images "
                f"of {cfg.name} split {src.split!r}"
            )
        self.steps_per_epoch = len(src) // batch_size
        self.examples_per_step = batch_size

    def describe(self) -> str:
        s = self.sources
        shape = "x".join("?" if d is None else str(d) for d in s["pretrain"].image_shape)
        return (
            f"{len(s['pretrain'])} pretraining / {len(s['train'])} train / {len(s['test'])} "
            f"test images of {shape}, {s['train'].num_classes} classes, crops of "
            f"{self.size} on the {'host' if self.host_crop else 'device'}"
        )

    def _crop(self, train: bool):
        """Host crops for varying-size images: the method's ``image_views`` random resized
        crops when training (0: a centre crop), a centre crop for evaluation."""
        if not self.host_crop:
            return None
        if not train:
            return data_lib.HostCrop(self.size, views=0)
        # The method's crop area where it sets one (MetAug's 0.2); SimCLR's 0.08 otherwise.
        low = self.config.method.get("crop_min_scale", 0.08)
        return data_lib.HostCrop(self.size, views=self.method.image_views, scale=(low, 1.0))

    def batches(self, epoch: int, start: int = 0):
        """Epoch ``epoch`` from its batch ``start``. One grain reader spans the run's remaining
        epochs, so its worker processes start once: a call for the batch where the previous
        call's reader stands continues that reader."""
        cfg = self.config
        if self._reader is None or self._reader_at != (epoch, start):
            self._reader = iter(
                data_lib.image_batches(
                    self.sources["pretrain"],
                    batch_size=cfg.train.batch_size,
                    seed=cfg.seed,
                    epoch=epoch,
                    start=start,
                    epochs=max(1, cfg.train.epochs - epoch),
                    workers=cfg.data.workers,
                    crop=self._crop(train=True),
                )
            )
        for b in range(start, self.steps_per_epoch):
            self._reader_at = None
            images, labels, _ = next(self._reader)
            if self.method.supervised and labels.min() < 0:
                raise ConfigError(
                    f"config.data.pretrain_split = {cfg.data.pretrain_split!r}: the supervised "
                    f"method {self.method.name!r} met unlabelled images (label "
                    f"{int(labels.min())}); expected a labelled split such as "
                    f"{cfg.data.train_split!r}"
                )
            following = b + 1 == self.steps_per_epoch
            self._reader_at = (epoch + 1, 0) if following else (epoch, b + 1)
            yield methods.Batch(x=images, y=labels)

    def batch_sharding(self):
        return _mesh.batch_sharding(self.mesh)

    def place(self, batch):
        return _mesh.shard_batch(batch, self.mesh)

    # -- evaluation ----------------------------------------------------------------------

    def _eval_batch(self) -> int:
        b = self.config.eval.eval_batch_size
        return b + (-b % self.mesh.size)

    def _stream(self, role, limit: int | None = None):
        """``(placed images, labels, real)`` over a split in stored order (eval crops);
        ``role`` names a split, or is an :class:`ImageSource` itself."""
        source = self.sources[role] if isinstance(role, str) else role
        seen = 0
        for images, labels, real in data_lib.image_batches(
            source,
            batch_size=self._eval_batch(),
            epoch=None,
            workers=self.config.data.workers,
            crop=self._crop(train=False),
        ):
            yield _mesh.shard_batch(images, self.mesh), labels, real
            seen += real
            if limit is not None and seen >= limit:
                return

    def _features(self, features_fn, role, limit: int | None = None):
        feats, labels = [], []
        for images, y, real in self._stream(role, limit):
            feats.append(np.asarray(jax.device_get(features_fn(images)))[:real])
            labels.append(y[:real])
        feats, labels = np.concatenate(feats), np.concatenate(labels)
        if limit is not None:
            feats, labels = feats[:limit], labels[:limit]
        return feats, labels

    def evaluate_at(self, epoch: int) -> bool:
        every = self.config.train.get("knn_every_epochs", 0)
        return bool(every) and epoch % every == 0

    def knn_rows(self) -> np.ndarray:
        """The training images of the kNN bank: ``eval.knn_max_train`` of them drawn at
        random (seeded by ``config.seed``, as the tabular task), in stored order, or all of
        them. A random sample, not the first images: a split stored sorted by class (Tiny
        ImageNet's, as jaxcl writes it) would give a bank of a few classes."""
        n = len(self.sources["train"])
        rows = np.random.default_rng(self.config.seed).permutation(n)
        return np.sort(rows[: self.config.eval.knn_max_train])

    def _knn(self, features_fn, test=None, train=None):
        """kNN with the bank of :meth:`knn_rows` (from ``train``'s features of the whole
        training split when they are at hand)."""
        cfg = self.config.eval
        rows = self.knn_rows()
        source = self.sources["train"]
        if train is None:
            whole = len(rows) == len(source)  # (then no index array to copy to the workers)
            train_f, train_y = self._features(
                features_fn, "train" if whole else source.subset(rows)
            )
        else:
            train_f, train_y = (a[rows] for a in train)
        test_f, test_y = test if test is not None else self._features(features_fn, "test")
        return evaluation.knn_accuracy(
            train_f,
            train_y,
            test_f,
            test_y,
            k=min(cfg.knn_k, len(train_y)),
            num_classes=self.spec.num_classes,
        )

    def evaluate(self, features_fn, epoch: int) -> dict:
        return {"knn_top1": float(self._knn(features_fn))}

    def final(self, features_fn, logits_fn, history: list[dict]) -> dict:
        cfg = self.config.eval
        if self.method.supervised:
            correct = total = 0
            for images, y, real in self._stream("test"):
                logits = np.asarray(jax.device_get(logits_fn(images)))[:real]
                correct += int(np.sum(np.argmax(logits, -1) == y[:real]))
                total += real
            return {"test_top1": correct / total}
        test = self._features(features_fn, "test")
        train = None
        if cfg.linear_augment:
            probe = self._augmented_probe(features_fn, test)
        else:
            train = self._features(features_fn, "train")
            probe = evaluation.linear_probe(
                *train,
                *test,
                num_classes=self.spec.num_classes,
                epochs=cfg.linear_epochs,
                batch_size=min(cfg.linear_batch_size, len(train[1])),
                learning_rate=cfg.linear_lr,
                optimizer=cfg.linear_optimizer,
                trust_ratio=cfg.linear_trust_ratio,
                standardize=cfg.linear_standardize,
                seed=self.config.seed,
            )
        return {
            "test_top1": float(probe["test_top1"]),
            "linear_train_top1": float(probe["train_top1"]),
            "knn_top1": float(self._knn(features_fn, test, train)),
        }

    def _augmented_probe(self, features_fn, test) -> dict:
        """SimCLR's linear evaluation: every epoch streams the training split, each image
        randomly resized-cropped (area 0.08-1; of the whole image, on the host for images
        of varying size, else on the device) and flipped on the device, through the frozen
        encoder into a linear classifier (``eval.linear_optimizer``, cosine, no weight
        decay). Its batch order, crops and flips are drawn from the run's seed salted, so
        they are not those of pretraining's epochs. ``train_top1`` is the running accuracy
        on the last epoch's augmented batches, each scored by the classifier just after its
        step (the cached-feature probe scores the final classifier on every training
        example)."""
        cfg = self.config.eval
        seed = int(np.random.SeedSequence([self.config.seed, _PROBE_SALT]).generate_state(1)[0])
        source = self.sources["train"]
        batch = cfg.linear_batch_size + (-cfg.linear_batch_size % self.mesh.size)
        steps_per_epoch = len(source) // batch
        if steps_per_epoch == 0:
            raise ConfigError(
                f"config.eval.linear_batch_size = {batch}: larger than the {len(source)} "
                f"images of the split {source.split!r}"
            )
        total = cfg.linear_epochs * steps_per_epoch
        schedule = optim.warmup_cosine(peak=cfg.linear_lr, total_steps=total, warmup_steps=0)
        tx = optim.make_optimizer(
            cfg.linear_optimizer,
            schedule,
            weight_decay=0.0,
            momentum=0.9,
            trust_ratio=cfg.linear_trust_ratio,
        )
        params = lm.zeros_init(int(test[0].shape[1]), self.spec.num_classes)
        opt_state = tx.init(params)
        size = self.size

        host_cropped = self.host_crop

        @jax.jit
        def augment_batch(key, images):
            images = augment.to_unit_range(images)
            if host_cropped:  # [batch, 1, size, size, C]: the host's random resized crop
                images = images[:, 0]
            keys = jax.random.split(key, images.shape[0])

            def one(k, image):
                k1, k2 = jax.random.split(k)
                if not host_cropped:
                    image = augment.random_resized_crop(k1, image, size=size)
                return augment.random_flip(k2, image)

            return jax.vmap(one)(keys, images)

        @jax.jit
        def step(params, opt_state, feats, labels):
            weight = jnp.ones(feats.shape[0], jnp.float32)
            loss, grads = jax.value_and_grad(lm.weighted_cross_entropy)(
                params, feats, labels, weight
            )
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

        key = jax.random.key(seed)
        correct = seen = 0
        reader = data_lib.image_batches(  # one reader (one set of workers) for all epochs
            source,
            batch_size=batch,
            seed=seed,
            epoch=0,
            epochs=cfg.linear_epochs,
            workers=self.config.data.workers,
            # one random resized crop of the whole image (SimCLR's), not of the centre crop
            crop=data_lib.HostCrop(size, views=1) if host_cropped else None,
        )
        for g, (images, labels, _) in enumerate(reader):
            epoch = g // steps_per_epoch
            placed = _mesh.shard_batch(images, self.mesh)
            feats = jnp.asarray(features_fn(augment_batch(jax.random.fold_in(key, g), placed)))
            params, opt_state, _ = step(params, opt_state, feats.astype(jnp.float32), labels)
            if epoch == cfg.linear_epochs - 1:  # training accuracy over the last epoch
                pred = np.asarray(jnp.argmax(lm.logits(params, feats), -1))
                correct += int(np.sum(pred == labels))
                seen += len(labels)
        test_f, test_y = test
        return {
            "test_top1": lm.accuracy(params, test_f, test_y),
            "train_top1": correct / max(seen, 1),
        }


_task.register_task(
    "image",
    ImageTask,
    datasets=tuple(IMAGE_DATASETS),
    defaults=config_defaults,
    default_encoder="resnet",
)
