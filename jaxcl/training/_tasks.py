"""Tasks: a data set, how its batches reach the devices, and how a trained encoder is judged.

The loop in ``_loop.py`` is the same for every task; a task supplies

* ``steps_per_epoch`` and ``batches(epoch)``: host-side global batches, the same on every
  host and after a restart (a function of seed and epoch);
* ``batch_partition``: ``"rows"`` (split over the ``data`` axis) or ``"replicated"``;
* ``evaluate_at(epoch)`` / ``evaluate(...)`` / ``summarize(...)``: the evaluation protocol.

``TabularTask`` is DACL's tabular protocol (linear probe at the end, kNN monitor); the
graph tasks live in ``_graph_tasks.py``.
"""

from __future__ import annotations

import numpy as np

from jaxcl import data as data_lib
from jaxcl import evaluation
from jaxcl.training import _config, _mesh

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
            raise _config.ConfigError(
                "config.data.data_dir = '': data.name='tfds' needs the folder of a prepared "
                "array_record data set"
            )
        return data_lib.load_tfds_array_record(
            cfg.data_dir, cfg.tfds_name, permutation_seed=cfg.permutation_seed
        )
    raise _config.ConfigError(f"config.data.name = {cfg.name!r}: unknown data set")


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


class TabularTask:
    """Arrays in, shuffled row batches; linear probe (or classifier accuracy) at the end."""

    batch_partition = "rows"

    def __init__(self, config, method, mesh):
        from jaxcl import methods

        self.config = config
        self.method = method
        self.mesh = mesh
        self.ds = load_dataset(config.data)
        self.name = self.ds.name
        self.num_features = self.ds.num_features
        self.num_classes = self.ds.num_classes
        self._batch_cls = methods.Batch
        batch_size = config.train.batch_size
        n_train = len(self.ds.train_x)
        if batch_size % mesh.size:
            raise _config.ConfigError(
                f"config.train.batch_size = {batch_size}: must be a multiple of the "
                f"{mesh.size} devices on the data axis"
            )
        if method.pretrains and batch_size > n_train:
            raise _config.ConfigError(
                f"config.train.batch_size = {batch_size}: larger than the {n_train} training "
                f"examples of {self.name}"
            )
        self.steps_per_epoch = n_train // batch_size if method.pretrains else 0

    def describe(self) -> str:
        ds = self.ds
        return (
            f"{len(ds.train_x)} train / {len(ds.test_x)} test examples, "
            f"{ds.num_features} features, {ds.num_classes} classes"
        )

    def batches(self, epoch: int):
        ds, cfg = self.ds, self.config
        for x, y in data_lib.iterate_batches(
            ds.train_x, ds.train_y, batch_size=cfg.train.batch_size, seed=cfg.seed, epoch=epoch
        ):
            yield self._batch_cls(x=x, y=y)

    def evaluate_at(self, epoch: int) -> bool:
        """The kNN monitor every ``train.knn_every_epochs`` (the probe runs in ``final``)."""
        every = self.config.train.knn_every_epochs
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
            seed=cfg.seed,
        )
        return {
            "test_top1": float(probe["test_top1"]),
            "linear_train_top1": float(probe["train_top1"]),
            "knn_top1": float(self._knn(features_fn)),
        }
