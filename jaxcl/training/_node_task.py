"""The node-classification task (GRACE, MVGRL): one full graph per step, node embeddings
judged by a logistic regression.

Transductive sets (Cora, Citeseer, Pubmed, DBLP) pretrain on the whole graph. PPI is
inductive: pretraining sees only its 20 training graphs (one disjoint graph), evaluation
embeds all 24 and scores multi-label logistic regressions by micro-F1 on the test graphs.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from jaxcl import data as data_lib
from jaxcl import evaluation, graphs, methods
from jaxcl.training import _mesh, _task
from jaxcl.training._errors import ConfigError
from jaxcl.training._graph_task import data_root

DATASETS = ("cora", "citeseer", "pubmed", "dblp", "ppi")
# Sets with a loader for their files here; the others run only with data.synthetic.
FILE_DATASETS = ("cora", "citeseer", "pubmed", "ppi")
# Pretrained on their training graphs only, judged on other graphs (the split by graph).
INDUCTIVE = ("ppi",)


def config_defaults(data: str, method, config) -> dict:
    """The node task's keys (see ``register_task``): there is no batch size, every step is
    the whole graph."""
    del data, method, config
    return {
        "data": {
            "data_dir": "",  # the folder holding planetoid/ or ppi/ ("" = $JAXCL_DATA_DIR)
            # Divide each feature row by its sum (GCN's, GRACE's and MVGRL's input).
            "normalize_features": False,
            # A random graph of the named set's size instead of its files
            # (data.synthetic_planetoid, data.synthetic_ppi): for timing and memory, its
            # labels are noise.
            "synthetic": False,
            # With synthetic: this fraction of the set's nodes and edges (a smoke test of a
            # large set's config on a small graph).
            "synthetic_scale": 1.0,
        },
        "eval": {
            # random (GRACE's 10/10/80) | public (Planetoid's; PPI's graphs, its only split)
            "node_split": "random",
            "node_every_epochs": 0,  # 0 = only at the end
            # Logistic regressions per evaluation, each from its own initialisation; the
            # result is their mean (and std): MVGRL's and m-Mix's protocol (50 runs).
            "node_classifier_runs": 1,
            # Each classifier (jaxcl.evaluation.node_logistic_regression): full-batch Adam
            # steps at lr 0.01 with this L2 weight decay, on embeddings scaled to unit norm
            # ('l2'), z-scored ('standardize') or as they are ('none'); the test accuracy at
            # the evaluation (every `eval_every` steps) with the best validation accuracy.
            # The defaults are GRACE's / PyGCL's protocol; MVGRL's and m-Mix's code train
            # 300 steps on the raw embeddings and take the last step (eval_every = steps).
            "node_classifier_steps": 5000,
            "node_classifier_eval_every": 20,
            "node_classifier_normalize": "l2",
            "node_classifier_weight_decay": 0.0,
            # k-means on the final embeddings, NMI and ARI (MVGRL's and m-Mix's Table 8)
            "node_clustering": False,
        },
    }


class NodeClassificationTask:
    """One full graph per step; node embeddings judged by logistic regression (GRACE)."""

    kind = "node"

    def __init__(self, config, method, mesh):
        self.config = config
        self.method = method
        self.mesh = mesh
        self.inductive = config.data.name in INDUCTIVE
        if self.inductive and config.eval.node_split != "public":
            raise ConfigError(
                f"config.eval.node_split = {config.eval.node_split!r}: {config.data.name} is "
                "split by graph (training, validation and test graphs); set it to 'public'"
            )
        if config.data.synthetic and config.data.name == "ppi":
            ds = data_lib.synthetic_ppi(seed=config.seed, scale=config.data.synthetic_scale)
        elif config.data.synthetic:
            ds = data_lib.synthetic_planetoid(
                config.data.name,
                seed=config.seed,
                normalize_features=config.data.normalize_features,
                scale=config.data.synthetic_scale,
            )
        elif config.data.name not in FILE_DATASETS:
            raise ConfigError(
                f"config.data.name = {config.data.name!r}: no loader for its files here "
                f"(files: {', '.join(FILE_DATASETS)}); set config.data.synthetic=True to run "
                "its config on a random graph of its size"
            )
        elif config.data.name == "ppi":
            ds = data_lib.load_ppi(os.path.join(data_root(config.data), "ppi"))
        else:
            ds = data_lib.load_planetoid(
                os.path.join(data_root(config.data), "planetoid"),
                config.data.name,
                normalize_features=config.data.normalize_features,
            )
        if ds.multilabel and config.eval.node_clustering:
            raise ConfigError(
                f"config.eval.node_clustering = True: {config.data.name}'s nodes have several "
                "labels each, which k-means' NMI / ARI cannot score; set it to False"
            )
        self.ds = ds
        self.name = config.data.name
        self.spec = methods.DataSpec("node", self.ds.node_features.shape[1], self.ds.num_classes)
        # The inputs are the same every step: placed on the devices once. Usually the graph
        # itself; a method may add host-side precomputations (MVGRL's diffusion). An
        # inductive set pretrains on its training graphs and is embedded whole to be judged.
        train_ds = ds.subgraph(ds.train_mask) if self.inductive else ds
        train_inputs = method.node_inputs(train_ds, graphs.node_graph(train_ds))
        self.graph = _mesh.replicate(train_inputs, mesh)
        self.eval_graph = (
            _mesh.replicate(method.node_inputs(ds, graphs.node_graph(ds)), mesh)
            if self.inductive
            else self.graph
        )
        self.metric = "micro_f1" if ds.multilabel else "acc"
        self.steps_per_epoch = 1 if method.pretrains else 0
        self.examples_per_step = 1  # one graph

    def describe(self) -> str:
        ds = self.ds
        text = (
            f"{len(ds.labels)} nodes, {len(ds.senders)} directed edges, "
            f"{self.spec.num_features} features, {self.spec.num_classes} classes"
        )
        if ds.multilabel:
            text += " (multi-label)"
        if self.inductive:
            text += f"; pretraining on the {int(ds.train_mask.sum())} training-graph nodes"
        return text

    def batches(self, epoch: int):
        yield self.graph

    def batch_sharding(self):
        return _mesh.replicated(self.mesh)

    def place(self, batch):
        return batch  # placed once, in __init__

    def evaluate_at(self, epoch: int) -> bool:
        every = self.config.eval.node_every_epochs
        return bool(every) and epoch % every == 0

    def _masks(self):
        if self.config.eval.node_split == "public":
            return self.ds.train_mask, self.ds.val_mask, self.ds.test_mask
        return data_lib.random_node_split(len(self.ds.labels), seed=self.config.seed)

    def evaluate(self, features_fn, epoch: int) -> dict:
        return self._classify(np.asarray(jax.device_get(features_fn(self.eval_graph))))

    def _classify(self, x: np.ndarray) -> dict:
        train, val, test = self._masks()
        cfg = self.config.eval
        runs = cfg.node_classifier_runs
        # one run: the run's seed (as before); more: seed, seed + 1000, ..., trained together
        kw = dict(
            seeds=[self.config.seed + 1000 * k for k in range(runs)],
            steps=cfg.node_classifier_steps,
            eval_every=cfg.node_classifier_eval_every,
            normalize=None
            if cfg.node_classifier_normalize == "none"
            else cfg.node_classifier_normalize,
            weight_decay=cfg.node_classifier_weight_decay,
        )
        if self.ds.multilabel:
            r = evaluation.node_multilabel_logistic_regression_runs(
                x, self.ds.labels, train, val, test, **kw
            )
        else:
            r = evaluation.node_logistic_regression_runs(
                x, self.ds.labels, train, val, test, num_classes=self.spec.num_classes, **kw
            )
        m = self.metric
        test_score, val_score = r[f"test_{m}"], r[f"val_{m}"]
        return {
            f"node_test_{m}": float(np.mean(test_score)),
            f"node_test_{m}_std": float(np.std(test_score)),
            # m-Mix's script prints the minimum, mean and maximum over its 50 classifiers
            f"node_test_{m}_min": float(np.min(test_score)),
            f"node_test_{m}_max": float(np.max(test_score)),
            f"node_val_{m}": float(np.mean(val_score)),
        }

    def final(self, features_fn, logits_fn, history: list[dict], epoch: int | None = None) -> dict:
        """The results; ``epoch``: the epoch whose parameters ``features_fn`` embeds when it
        is not the last (early stopping's best), default the last."""
        x = np.asarray(jax.device_get(features_fn(self.eval_graph)))  # embedded once
        if epoch is None:
            epoch = self.config.train.get("epochs", 0) if self.method.pretrains else 0
        m = self.metric
        # That epoch's classifiers when they ran already (node_every_epochs divides it).
        done = [h for h in history if h["epoch"] == epoch and f"node_test_{m}" in h]
        r = done[-1] if done else self._classify(x)
        # accuracy as test_top1 (the other tasks' key); PPI's micro-F1 under its own name
        name = "top1" if m == "acc" else m
        out = {f"test_{name}": r[f"node_test_{m}"], f"val_{name}": r[f"node_val_{m}"]}
        if self.config.eval.node_classifier_runs > 1:
            out[f"test_{name}_std_over_classifiers"] = r[f"node_test_{m}_std"]
        if self.config.eval.node_clustering:
            c = evaluation.kmeans_nmi_ari(x, self.ds.labels, seed=self.config.seed)
            out.update(cluster_nmi=c["nmi"], cluster_ari=c["ari"])
        return out


_task.register_task(
    "node", NodeClassificationTask, datasets=DATASETS, defaults=config_defaults,
    default_encoder="gcn",
)  # fmt: skip
