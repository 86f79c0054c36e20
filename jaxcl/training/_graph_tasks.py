"""Graph tasks: graph classification (DACL §5.3, InfoGraph) and node classification (GRACE).

Graph batches are small (a few thousand nodes), so they are replicated on every device
rather than split: data parallelism over graph batches is not implemented.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from jaxcl import data as data_lib
from jaxcl import evaluation, graphs
from jaxcl.training import _config

# config.data.name -> (file name in the GIN text format, folder name in TU's format).
GRAPH_FILES = {
    "mutag": ("MUTAG", "MUTAG"),
    "ptc_mr": ("PTC", "PTC_MR"),
    "imdb_binary": ("IMDBBINARY", "IMDB-BINARY"),
    "imdb_multi": ("IMDBMULTI", "IMDB-MULTI"),
    "proteins": ("PROTEINS", "PROTEINS"),
    "nci1": ("NCI1", "NCI1"),
}


def data_root(cfg) -> str:
    """``config.data.data_dir``, else ``$JAXCL_DATA_DIR``; an error saying how to set it."""
    root = cfg.data_dir or os.environ.get("JAXCL_DATA_DIR", "")
    if not root:
        raise _config.ConfigError(
            f"config.data.data_dir = '': {cfg.name} is read from a folder holding tu_gin/, "
            "tu_raw/ and planetoid/ (e.g. ../shared/data); pass --config.data.data_dir=DIR or "
            "set JAXCL_DATA_DIR"
        )
    return root


def make(config, method, mesh):
    name = config.data.name
    if name in GRAPH_FILES:
        return GraphClassificationTask(config, method, mesh)
    if name in _config.NODE_DATASETS:
        return NodeClassificationTask(config, method, mesh)
    raise _config.ConfigError(f"config.data.name = {name!r}: unknown data set")


class GraphClassificationTask:
    """Padded batches of graphs; frozen graph embeddings judged by 10-fold cross-validation.

    After each of the last ``eval.last_epochs`` pretraining epochs the graph embeddings of
    the whole data set are classified with ``eval.graph_protocol``: ``'linear'`` (DACL §5.3:
    a linear classifier, full batch, ``eval.graph_linear_steps`` Adam updates) or ``'svm'``
    (InfoGraph/m-Mix: linear SVM with C chosen by inner CV). The result is the mean over
    those epochs of the 10-fold mean accuracy.
    """

    batch_partition = "replicated"

    def __init__(self, config, method, mesh):
        self.config = config
        self.method = method
        self.mesh = mesh
        gin_name, tu_name = GRAPH_FILES[config.data.name]
        root = data_root(config.data)
        features = config.data.node_features
        if config.data.graph_format == "tu":
            self.ds = data_lib.load_tu(
                os.path.join(root, "tu_raw"), tu_name, node_features=features
            )
        else:
            self.ds = data_lib.load_gin(
                os.path.join(root, "tu_gin"), gin_name, node_features=features
            )
        if config.data.drop_node_tag >= 0:
            self.ds = data_lib.drop_tagged_nodes(self.ds, config.data.drop_node_tag)
        self.name = config.data.name
        self.num_features = self.ds.num_features
        self.num_classes = self.ds.num_classes
        self.train_batcher = graphs.GraphBatcher(
            self.ds,
            config.train.batch_size,
            seed=config.seed,
            shuffle=True,
            anchors=tuple(config.data.padding_anchors),
        )
        # Evaluation: the same graphs in data-set order, on the same budgets (no recompiles).
        self.eval_batcher = graphs.GraphBatcher(
            self.ds,
            config.train.batch_size,
            shuffle=False,
            budgets=self.train_batcher.budgets,
        )
        self.steps_per_epoch = len(self.train_batcher) if method.pretrains else 0

    def describe(self) -> str:
        nodes = np.mean([g.num_nodes for g in self.ds.graphs])
        return (
            f"{len(self.ds)} graphs ({nodes:.1f} nodes on average), {self.num_features} node "
            f"features, {self.num_classes} classes, {len(self.train_batcher.budgets)} "
            "padding budgets"
        )

    def batches(self, epoch: int):
        return self.train_batcher.epoch(epoch)

    def evaluate_at(self, epoch: int) -> bool:
        return epoch > self.config.train.epochs - self.config.eval.last_epochs

    def embeddings(self, features_fn) -> np.ndarray:
        from jaxcl.training import _mesh

        out = []
        for indices, batch in zip(
            self.eval_batcher.batch_indices(0), self.eval_batcher.epoch(0), strict=True
        ):
            emb = features_fn(_mesh.replicate(batch, self.mesh))
            out.append(np.asarray(jax.device_get(emb))[: len(indices)])
        return np.concatenate(out)

    def evaluate(self, features_fn, epoch: int) -> dict:
        x = self.embeddings(features_fn)
        y = self.ds.labels
        cfg = self.config.eval
        if cfg.graph_protocol == "svm":
            r = evaluation.svm_kfold_accuracy(x, y, num_folds=cfg.folds, seed=self.config.seed)
        else:
            r = evaluation.kfold_linear_accuracy(
                x,
                y,
                num_classes=self.num_classes,
                num_folds=cfg.folds,
                steps=cfg.graph_linear_steps,
                learning_rate=cfg.graph_linear_lr,
                seed=self.config.seed,
            )
        return {"cv_top1": float(r["mean"]), "cv_top1_std": float(r["std"])}

    def final(self, features_fn, logits_fn, history: list[dict]) -> dict:
        if not history:  # no pretraining (or fewer epochs than evaluated ones)
            history = [{"epoch": 0, **self.evaluate(features_fn, 0)}]
        scores = [h["cv_top1"] for h in history]
        return {
            "test_top1": float(np.mean(scores)),
            "per_epoch_top1": scores,
            "evaluated_epochs": [h["epoch"] for h in history],
        }


class NodeClassificationTask:
    """One full graph per step; node embeddings judged by logistic regression (GRACE)."""

    batch_partition = "replicated"

    def __init__(self, config, method, mesh):
        from jaxcl.training import _mesh

        self.config = config
        self.method = method
        self.mesh = mesh
        root = data_root(config.data)
        self.ds = data_lib.load_planetoid(
            os.path.join(root, "planetoid"),
            config.data.name,
            normalize_features=config.data.normalize_features,
        )
        self.name = config.data.name
        self.num_features = self.ds.node_features.shape[1]
        self.num_classes = self.ds.num_classes
        # The inputs are the same every step: placed on the devices once. Usually the graph
        # itself; a method may add host-side precomputations (MVGRL's diffusion).
        self.graph = _mesh.replicate(method.node_inputs(self.ds, graphs.node_graph(self.ds)), mesh)
        self.steps_per_epoch = 1 if method.pretrains else 0

    def describe(self) -> str:
        ds = self.ds
        return (
            f"{len(ds.labels)} nodes, {len(ds.senders)} directed edges, {self.num_features} "
            f"features, {self.num_classes} classes"
        )

    def batches(self, epoch: int):
        yield self.graph

    def evaluate_at(self, epoch: int) -> bool:
        every = self.config.eval.node_every_epochs
        return bool(every) and epoch % every == 0

    def _masks(self):
        if self.config.eval.node_split == "public":
            return self.ds.train_mask, self.ds.val_mask, self.ds.test_mask
        return data_lib.random_node_split(len(self.ds.labels), seed=self.config.seed)

    def evaluate(self, features_fn, epoch: int) -> dict:
        x = np.asarray(jax.device_get(features_fn(self.graph)))
        train, val, test = self._masks()
        r = evaluation.node_logistic_regression(
            x,
            self.ds.labels,
            train,
            val,
            test,
            num_classes=self.num_classes,
            seed=self.config.seed,
        )
        return {"node_test_acc": float(r["test_acc"]), "node_val_acc": float(r["val_acc"])}

    def final(self, features_fn, logits_fn, history: list[dict]) -> dict:
        r = self.evaluate(features_fn, self.config.train.epochs)
        return {"test_top1": r["node_test_acc"], "val_top1": r["node_val_acc"]}
