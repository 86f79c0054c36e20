"""The tabular task: feature rows split over the ``data`` axis; DACL's protocol (a linear
probe on the frozen encoder at the end, a kNN monitor during training)."""

from __future__ import annotations

import numpy as np

from jaxcl import data as data_lib
from jaxcl import evaluation, methods
from jaxcl.training import _mesh, _task
from jaxcl.training._errors import ConfigError

# Rows per forward pass when computing features for evaluation.
EVAL_BATCH = 4096


def load_dataset(cfg) -> data_lib.ArrayDataset:
    """The tabular data set named by ``config.data``."""
    if cfg.name == "digits":
        return data_lib.load_digits_tabular()
    if cfg.name == "fashion_mnist":
        return data_lib.load_fashion_mnist(
            cfg.data_dir or None, permutation_seed=cfg.permutation_seed
        )
    if cfg.name == "tfds":
        if not cfg.data_dir:
            raise ConfigError(
                "config.data.data_dir = '': data.name='tfds' needs the folder of a prepared "
                "array_record data set"
            )
        return data_lib.load_tfds_array_record(
            cfg.data_dir, cfg.tfds_name, permutation_seed=cfg.permutation_seed
        )
    raise ConfigError(f"config.data.name = {cfg.name!r}: unknown data set")


def rows_in_batches(fn, x: np.ndarray, mesh) -> np.ndarray:
    """``fn(device_batch)`` over the rows of ``x`` in fixed-size sharded batches (last padded)."""
    import jax

    n = len(x)
    batch = min(EVAL_BATCH, n)
    batch += -batch % mesh.size
    outs = []
    for start in range(0, n, batch):
        chunk = x[start : start + batch]
        real = len(chunk)
        if real < batch:
            chunk = np.concatenate([chunk, np.zeros((batch - real,) + x.shape[1:], x.dtype)])
        out = fn(_mesh.shard_batch(chunk, mesh))
        outs.append(np.asarray(jax.device_get(out))[:real])
    return np.concatenate(outs)


def epoch_steps(config, mesh, num_examples: int, name: str) -> tuple[int, int]:
    """``(steps_per_epoch, examples_per_step)`` of pretraining on ``num_examples`` rows in
    batches of ``config.train.batch_size`` (partial batches dropped); ConfigError unless the
    batch divides over the devices and fits in the data."""
    batch_size = config.train.batch_size
    if batch_size % mesh.size:
        raise ConfigError(
            f"config.train.batch_size = {batch_size}: must be a multiple of the "
            f"{mesh.size} devices on the data axis"
        )
    if batch_size > num_examples:
        raise ConfigError(
            f"config.train.batch_size = {batch_size}: larger than the {num_examples} training "
            f"examples of {name}"
        )
    return num_examples // batch_size, batch_size


DATASETS = ("digits", "fashion_mnist", "tfds")


def config_defaults(data: str, method, config) -> dict:
    """The tabular task's keys for ``data`` and ``method`` (see ``register_task``)."""
    del config
    keys = {"data": {}, "train": {}, "eval": {}}
    if data != "digits":
        # idx folder (fashion_mnist) or prepared tfds folder ("" = default location).
        keys["data"]["data_dir"] = ""
        keys["data"]["permutation_seed"] = 0  # the fixed pixel permutation of the proxy
    if data == "tfds":
        keys["data"]["tfds_name"] = "fashion_mnist"
    if method.pretrains:
        keys["train"]["batch_size"] = 4096
    if not method.supervised:
        if method.pretrains:
            keys["train"]["knn_every_epochs"] = 0  # 0 = only at the end
        keys["eval"].update(
            linear_epochs=200,
            linear_batch_size=256,
            linear_lr=0.1,
            linear_optimizer="lars",
            linear_trust_ratio=False,  # LARS's trust ratio on the classifier (SimCLR: no)
            linear_standardize=False,  # z-score the features first (SimCLR: no)
            knn_k=20,
            knn_max_train=10000,  # kNN monitor on at most this many training examples
        )
    return keys


class RowBatches:
    """What the tasks over host arrays share: shuffled ``Batch(x, y)`` of the rows
    ``training_rows()`` gives, split over the mesh's ``data`` axis."""

    def training_rows(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def batches(self, epoch: int):
        x, y = self.training_rows()
        cfg = self.config
        for bx, by in data_lib.iterate_batches(
            x, y, batch_size=cfg.train.batch_size, seed=cfg.seed, epoch=epoch
        ):
            yield methods.Batch(x=bx, y=by)

    def batch_sharding(self):
        return _mesh.batch_sharding(self.mesh)

    def place(self, batch):
        return _mesh.shard_batch(batch, self.mesh)


class TabularTask(RowBatches):
    """Arrays in, shuffled row batches; linear probe (or classifier accuracy) at the end."""

    kind = "tabular"

    def __init__(self, config, method, mesh):
        self.config = config
        self.method = method
        self.mesh = mesh
        self.ds = load_dataset(config.data)
        self.name = self.ds.name
        self.spec = methods.DataSpec("tabular", self.ds.num_features, self.ds.num_classes)
        n_train = len(self.ds.train_x)
        if not method.pretrains:
            self.steps_per_epoch = self.examples_per_step = 0
            return
        self.steps_per_epoch, self.examples_per_step = epoch_steps(config, mesh, n_train, self.name)

    def describe(self) -> str:
        ds = self.ds
        return (
            f"{len(ds.train_x)} train / {len(ds.test_x)} test examples, "
            f"{ds.num_features} features, {ds.num_classes} classes"
        )

    def training_rows(self):
        return self.ds.train_x, self.ds.train_y

    def evaluate_at(self, epoch: int) -> bool:
        """The kNN monitor every ``train.knn_every_epochs`` (the probe runs in ``final``)."""
        every = self.config.train.get("knn_every_epochs", 0)
        return bool(every) and epoch % every == 0

    def _knn(self, features_fn):
        ds, cfg = self.ds, self.config
        n_train = len(ds.train_x)
        rows = np.random.default_rng(cfg.seed).permutation(n_train)[: cfg.eval.knn_max_train]
        train_f = rows_in_batches(features_fn, ds.train_x[rows], self.mesh)
        test_f = rows_in_batches(features_fn, ds.test_x, self.mesh)
        return evaluation.knn_accuracy(
            train_f,
            ds.train_y[rows],
            test_f,
            ds.test_y,
            k=min(cfg.eval.knn_k, len(rows)),
            num_classes=ds.num_classes,
        )

    def evaluate(self, features_fn, epoch: int) -> dict:
        return {"knn_top1": float(self._knn(features_fn))}

    def final(self, features_fn, logits_fn, history: list[dict]) -> dict:
        """Linear probe on the frozen encoder (or the supervised classifier's accuracy)."""
        ds, cfg = self.ds, self.config
        if self.method.supervised:
            logits = rows_in_batches(logits_fn, ds.test_x, self.mesh)
            return {"test_top1": float(np.mean(np.argmax(logits, axis=-1) == ds.test_y))}
        train_f = rows_in_batches(features_fn, ds.train_x, self.mesh)
        test_f = rows_in_batches(features_fn, ds.test_x, self.mesh)
        probe = evaluation.linear_probe(
            train_f,
            ds.train_y,
            test_f,
            ds.test_y,
            num_classes=ds.num_classes,
            epochs=cfg.eval.linear_epochs,
            batch_size=min(cfg.eval.linear_batch_size, len(ds.train_x)),
            learning_rate=cfg.eval.linear_lr,
            optimizer=cfg.eval.linear_optimizer,
            trust_ratio=cfg.eval.linear_trust_ratio,
            standardize=cfg.eval.linear_standardize,
            seed=cfg.seed,
        )
        return {
            "test_top1": float(probe["test_top1"]),
            "linear_train_top1": float(probe["train_top1"]),
            "knn_top1": float(self._knn(features_fn)),
        }


_task.register_task(
    "tabular", TabularTask, datasets=DATASETS, defaults=config_defaults, default_encoder="mlp"
)
