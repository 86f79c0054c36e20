"""The graph-classification task (DACL §5.3, InfoGraph): padded batches of graphs, frozen
graph embeddings judged by 10-fold cross-validation.

Data parallel: each global batch of graphs is split into one padded sub-batch per device on
the ``data`` axis, all padded to one budget of the ladder, and stacked
(:class:`jaxcl.graphs.GraphBatcher` with ``num_shards``); each device holds its own
sub-batch, the encoders work per sub-batch, and batch-norm statistics and the loss are over
the global batch. Each host builds only its own devices' sub-batches. On one device the
batch is a plain padded ``GraphsTuple``.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from jaxcl import data as data_lib
from jaxcl import evaluation, graphs, methods
from jaxcl.data._synthetic_tu import DELAUNAY as SYNTHETIC_DELAUNAY
from jaxcl.data._synthetic_tu import TU_SIZES as SYNTHETIC_TU_SIZES
from jaxcl.training import _mesh, _task
from jaxcl.training._errors import ConfigError

# config.data.name -> (file name in the GIN text format, folder name in TU's format).
GRAPH_FILES = {
    "mutag": ("MUTAG", "MUTAG"),
    "ptc_mr": ("PTC", "PTC_MR"),
    "imdb_binary": ("IMDBBINARY", "IMDB-BINARY"),
    "imdb_multi": ("IMDBMULTI", "IMDB-MULTI"),
    "proteins": ("PROTEINS", "PROTEINS"),
    "nci1": ("NCI1", "NCI1"),
    # Not among the files here: runs with data.synthetic (data.synthetic_tu) until they are.
    "reddit_binary": ("REDDITBINARY", "REDDIT-BINARY"),
    "coil_del": ("COIL-DEL", "COIL-DEL"),  # TU's format only (data.graph_format = 'tu')
}


def data_root(cfg) -> str:
    """``config.data.data_dir``, else ``$JAXCL_DATA_DIR``; an error saying how to set it."""
    root = cfg.data_dir or os.environ.get("JAXCL_DATA_DIR", "")
    if not root:
        raise ConfigError(
            f"config.data.data_dir = '': {cfg.name} is read from a folder holding tu_gin/, "
            "tu_raw/ and planetoid/ (e.g. ../shared/data); pass --config.data.data_dir=DIR or "
            "set JAXCL_DATA_DIR"
        )
    return root


def config_defaults(data: str, method, config) -> dict:
    """The graph-classification task's keys (see ``register_task``)."""
    del data
    protocol = config.eval.get("graph_protocol", "linear") if config is not None else "linear"
    keys = {
        "data": {
            # The folder holding tu_gin/ and tu_raw/ ("" = $JAXCL_DATA_DIR).
            "data_dir": "",
            "graph_format": "gin",  # gin | tu: which file format to read
            # auto (one-hot tags, or one-hot degree where the tags do not vary, e.g. IMDB) |
            # tags | degree | constant (a 1 per node, as PyG code).
            "node_features": "auto",
            # Remove the nodes whose one-hot tag is this column (-1: none). GIN-format PTC +
            # 16 (its explicit hydrogens) = TU's PTC_MR.
            "drop_node_tag": -1,
            # Standard deviations above the mean batch size at which the padding ladder has
            # rungs (jaxcl.graphs.padding_budgets): more rungs, less padding, more compiles.
            "padding_anchors": (1.0, 3.0),
            # Random graphs of the named set's size instead of its files (data.synthetic_tu,
            # seeded by config.seed): for checking a config and timing, its labels are noise.
            "synthetic": False,
            # With synthetic: this fraction of the set's graphs and of its mean graph size
            # (a smoke test of a large set's config on small graphs).
            "synthetic_scale": 1.0,
        },
        # Graphs per batch (training, and the batches evaluation embeds).
        "train": {"batch_size": 128},
        "eval": {
            "graph_protocol": protocol,  # linear (DACL) | svm (InfoGraph)
            "folds": 10,
            # Draws of the outer folds per evaluation (fold seeds s, s + 1, ..., s is the
            # evaluation's own): cv_top1 is the mean over the draws (and cv_top1_draw_std
            # their sample std). On MUTAG one 10-fold number moves by 1-2 points with its
            # draw (README, m-Mix section); each draw repeats the classifier search.
            "fold_draws": 1,
            # Graph-edit triplets after training (m-Mix Table 6): for each subgraph size n
            # here, eval.edit_graphs graphs cut to their first n nodes, each against copies
            # with 1 and with 2 edges moved (data.edit_triplets); () = none.
            "edit_nodes": (),
            "edit_graphs": 1000,
        },
    }
    if method.pretrains:
        # Evaluated after each of the last `last_epochs` epochs (DACL §5.3).
        keys["eval"]["last_epochs"] = 5
        # Also after epochs 1, 1 + k, 1 + 2k, ... (0 = not): the accuracy curve m-Mix's graph
        # script prints and plots (its 0-based epochs 0, 10, 20, ...). Reported beside the
        # result, never in it: test_top1 stays the mean over the last `last_epochs` epochs.
        keys["eval"]["curve_every_epochs"] = 0
        # True: each evaluation draws its own outer folds (seeded by the seed and the epoch),
        # as that script's StratifiedKFold(shuffle=True, random_state=None) does; False: the
        # same folds (the run's seed) at every epoch.
        keys["eval"]["folds_per_epoch"] = False
    if protocol == "linear":
        keys["eval"].update(graph_linear_steps=100, graph_linear_lr=1e-2)
    else:
        # Parallel jobs of the SVM's search (-1 = every core, 1 = none; liblinear: scikit-
        # learn's processes, newton: threads over the outer folds): the same accuracies, sooner.
        keys["eval"]["svm_jobs"] = -1
        # liblinear (scikit-learn's LinearSVC, the published code) | newton (jaxcl's exact
        # minimiser of the same objective; much faster (svm_benchmark.py), differs where
        # liblinear stops early).
        keys["eval"]["svm_solver"] = "liblinear"
    return keys


def _load(config, node_features: str | None = None) -> data_lib.GraphDataset:
    """The data set named by ``config.data``: its files (with ``node_features``, by default
    ``config.data.node_features``), or ``synthetic_tu``'s graphs."""
    cfg = config.data
    if not cfg.synthetic:
        gin_name, tu_name = GRAPH_FILES[cfg.name]
        root = data_root(cfg)
        kind = node_features or cfg.node_features
        if cfg.graph_format == "tu":
            return data_lib.load_tu(os.path.join(root, "tu_raw"), tu_name, node_features=kind)
        return data_lib.load_gin(os.path.join(root, "tu_gin"), gin_name, node_features=kind)
    if cfg.name not in SYNTHETIC_TU_SIZES:
        raise ConfigError(
            f"config.data.synthetic = True: there are no synthetic graphs of {cfg.name!r}, "
            f"only of {', '.join(sorted(SYNTHETIC_TU_SIZES))}; set config.data.synthetic=False "
            "to read its files"
        )
    own = "attributes" if cfg.name in SYNTHETIC_DELAUNAY else "degree"
    if cfg.node_features not in ("auto", own):
        what = "the points' coordinates" if own == "attributes" else "one-hot degrees"
        raise ConfigError(
            f"config.data.node_features = {cfg.node_features!r}: the synthetic graphs of "
            f"{cfg.name!r} (config.data.synthetic = True) have no node tags, their features "
            f"are {what}; use {own!r} or 'auto'"
        )
    try:
        return data_lib.synthetic_tu(cfg.name, seed=config.seed, scale=cfg.synthetic_scale)
    except ValueError as e:  # the name is known: the scale is what it refuses
        raise ConfigError(f"config.data.synthetic_scale = {cfg.synthetic_scale!r}: {e}") from e


def draw_seeds(first: int, draws: int) -> list[int]:
    """Fold seeds ``first, first + 1, ...`` of ``draws`` draws, wrapped below 2**32 (the
    largest seed liblinear and NumPy take; ``_fold_seed`` may start just below it)."""
    return [(first + k) % 2**32 for k in range(draws)]


class GraphClassificationTask:
    """Padded batches of graphs; frozen graph embeddings judged by 10-fold cross-validation.

    After each of the last ``eval.last_epochs`` pretraining epochs the graph embeddings of
    the whole data set are classified with ``eval.graph_protocol``: ``'linear'`` (DACL §5.3:
    a linear classifier, full batch, ``eval.graph_linear_steps`` Adam updates) or ``'svm'``
    (InfoGraph/m-Mix: linear SVM with C chosen by inner CV). The result is the mean over
    those epochs of the 10-fold mean accuracy.

    With ``eval.curve_every_epochs = k`` the embeddings are also scored after epochs 1, 1 +
    k, 1 + 2k, ..., as m-Mix's graph script does every 10 epochs; the results then carry the
    whole curve (``curve_epochs``, ``curve_top1``) and its maximum (``curve_max_top1`` at
    ``curve_max_epoch``), which is what a table read off that script's curve would report:
    the best of many test-set evaluations, an optimistic number, kept apart from
    ``test_top1``.
    """

    kind = "graph"

    def __init__(self, config, method, mesh):
        self.config = config
        self.method = method
        self.mesh = mesh
        # 'tags+degree': the tags first, the degrees of the graphs as finally kept after
        # (drop_node_tag removes nodes, and so changes their neighbours' degrees).
        then_degrees = config.data.node_features == "tags+degree"
        self.ds = _load(config, node_features="tags" if then_degrees else None)
        if config.data.drop_node_tag >= 0:
            self.ds = data_lib.drop_tagged_nodes(self.ds, config.data.drop_node_tag)
        if then_degrees:
            self.ds = data_lib.with_degree_features(self.ds)
        self.name = config.data.name
        self.spec = methods.DataSpec("graph", self.ds.num_features, self.ds.num_classes)
        _task.check_folds(config.eval.folds, self.ds.labels, self.name)
        batch_size, self.shards = config.train.batch_size, mesh.size
        if batch_size % self.shards:
            raise ConfigError(
                f"config.train.batch_size = {batch_size}: must be a multiple of the "
                f"{self.shards} devices on the data axis (one sub-batch of graphs each)"
            )
        self.local_shards = _mesh.local_rows(self.shards) if self.shards > 1 else None
        # What the method batches: usually the graphs as read; graph-level MVGRL adds the
        # diffusion view's edges and weights.
        batched, weights = method.graph_dataset(self.ds)
        if len(batched.graphs) != len(self.ds.graphs):
            raise ValueError(
                f"{method.name}.graph_dataset returned {len(batched.graphs)} graphs for "
                f"{len(self.ds.graphs)}: it must keep every graph, in order"
            )
        self.train_batcher = graphs.GraphBatcher(
            batched,
            batch_size,
            edge_weights=weights,
            seed=config.seed,
            shuffle=True,
            anchors=tuple(config.data.padding_anchors),
            num_shards=self.shards,
        )
        # Evaluation: the same graphs in data-set order, on the one budget that fits them
        # all. It runs forward only, so one compile beats less padding (PTC_MR's quick rows
        # compiled the embedding 4 times, once per rung of the ladder its batches reached).
        self.eval_batcher = self._in_order(batched, weights)
        self.steps_per_epoch = len(self.train_batcher) if method.pretrains else 0
        self.examples_per_step = config.train.batch_size

    def describe(self) -> str:
        nodes = np.mean([g.num_nodes for g in self.ds.graphs])
        return (
            f"{len(self.ds)} graphs ({nodes:.1f} nodes on average), {self.spec.num_features} "
            f"node features, {self.spec.num_classes} classes, {len(self.train_batcher.budgets)} "
            "padding budgets"
        )

    def batches(self, epoch: int):
        """This host's sub-batches of each global batch (all of it on one device)."""
        return self.train_batcher.epoch(epoch, shards=self.local_shards)

    def batch_sharding(self):
        if self.shards == 1:
            return _mesh.replicated(self.mesh)
        return _mesh.batch_sharding(self.mesh)

    def place(self, batch):
        if self.shards == 1:
            return _mesh.replicate(batch, self.mesh)
        return _mesh.place_local(batch, self.mesh, self.shards)

    def evaluate_at(self, epoch: int) -> bool:
        if not self.method.pretrains:
            return False
        every = self.config.eval.get("curve_every_epochs", 0)
        on_curve = bool(every) and (epoch - 1) % every == 0
        return on_curve or self._last_epoch(epoch)

    def check_history(self, history, upto_epoch: int) -> None:
        """ConfigError before a run (or rerun) goes on when its score would average
        evaluations it can no longer make: epochs up to ``upto_epoch`` (the restored one)
        evaluated with other eval settings, or not at all (``upto_epoch`` itself, unevaluated,
        is made up)."""
        if not self.method.pretrains:
            return
        wanted = [e for e in range(1, self.config.train.epochs + 1) if self._last_epoch(e)]
        if len(wanted) < 2:  # one epoch: the last parameters are evaluated at the end
            return
        have = {h["epoch"] for h in history.entries}
        lost = [
            e for e in wanted
            if e <= upto_epoch and e not in have and (e < upto_epoch or history.recorded(e))
        ]  # fmt: skip
        if not lost:
            return
        kept = sorted(have & set(wanted))
        raise ConfigError(
            f"eval.last_epochs = {self.config.eval.last_epochs}: the score is the mean of "
            f"epochs {wanted[0]}-{wanted[-1]}'s evaluations, made during training, and only "
            f"epochs {kept} of them are recorded with this run's eval settings (changed since, "
            "or the history removed), while only the latest checkpoint's parameters are left "
            "to evaluate. Rerun with the eval settings the run was trained with, with "
            "eval.last_epochs = 1, or in a new --workdir"
        )

    def _last_epoch(self, epoch: int) -> bool:
        """Whether ``epoch`` is one of the last ``eval.last_epochs`` (those averaged)."""
        return epoch > self.config.train.epochs - self.config.eval.last_epochs

    def _fold_seed(self, epoch: int) -> int:
        if not self.config.eval.get("folds_per_epoch", False):
            return self.config.seed
        return int(np.random.SeedSequence([self.config.seed, epoch]).generate_state(1)[0])

    def _in_order(self, views, weights, within=None) -> graphs.GraphBatcher:
        """A batcher of ``views`` in order, padded to one budget: ``within`` where that fits
        them (no new compile), else their own (``graphs.pass_budget``)."""
        budget = graphs.pass_budget(views, self.config.train.batch_size, num_shards=self.shards)
        if within is not None and all(a <= b for a, b in zip(budget, within, strict=True)):
            budget = within
        return graphs.GraphBatcher(
            views,
            self.config.train.batch_size,
            edge_weights=weights,
            shuffle=False,
            budgets=[budget],
            num_shards=self.shards,
        )

    def embeddings(self, features_fn, batcher=None) -> np.ndarray:
        """The graph embeddings of the data set (or of ``batcher``'s graphs), in order."""
        out = []
        batcher = batcher or self.eval_batcher
        for indices, batch in zip(
            batcher.batch_indices(0), batcher.epoch(0, shards=self.local_shards), strict=True
        ):
            emb = features_fn(self.place(batch))
            out.append(np.asarray(jax.device_get(emb))[batcher.graph_rows(indices)])
        return np.concatenate(out)

    def evaluate(self, features_fn, epoch: int) -> dict:
        x = self.embeddings(features_fn)
        draws = self.config.eval.get("fold_draws", 1)
        seeds = draw_seeds(self._fold_seed(epoch), draws)
        runs = [self._cross_validate(x, seed) for seed in seeds]
        if draws == 1:
            return {"cv_top1": float(runs[0]["mean"]), "cv_top1_std": float(runs[0]["std"])}
        means = [r["mean"] for r in runs]
        return {
            "cv_top1": float(np.mean(means)),
            # over every fold of every draw
            "cv_top1_std": float(np.std(np.concatenate([r["per_fold"] for r in runs]))),
            "cv_top1_draw_std": float(np.std(means, ddof=1)),
            "cv_top1_draws": [float(m) for m in means],  # kept in the history, not logged
        }

    def _cross_validate(self, x: np.ndarray, seed: int) -> dict:
        """One k-fold estimate of the protocol's classifier on ``x`` with fold seed ``seed``."""
        y = self.ds.labels
        cfg = self.config.eval
        if cfg.graph_protocol == "svm":
            return evaluation.svm_kfold_accuracy(
                x, y, num_folds=cfg.folds, seed=seed, n_jobs=cfg.svm_jobs, solver=cfg.svm_solver
            )
        return evaluation.kfold_linear_accuracy(
            x,
            y,
            num_classes=self.spec.num_classes,
            num_folds=cfg.folds,
            steps=cfg.graph_linear_steps,
            learning_rate=cfg.graph_linear_lr,
            seed=seed,
        )

    def final(self, features_fn, logits_fn, history: list[dict], epoch: int | None = None) -> dict:
        """The results; ``epoch``: the one epoch whose parameters ``features_fn`` embeds when
        they are not the last (early stopping's best), default the last ``eval.last_epochs``."""
        curve = [h for h in history if "cv_top1" in h]
        if epoch is None:
            # all of them: check_history refused the run before it began otherwise
            last = [h for h in curve if self._last_epoch(h["epoch"])]
        else:
            last = [h for h in curve if h["epoch"] == epoch][-1:]
        if not last:  # no pretraining (or fewer epochs than evaluated ones), or not scored yet
            epoch = epoch or 0
            last = [{"epoch": epoch, **self.evaluate(features_fn, epoch)}]
        scores = [h["cv_top1"] for h in last]
        out = {
            "test_top1": float(np.mean(scores)),
            "per_epoch_top1": scores,
            "evaluated_epochs": [h["epoch"] for h in last],
        }
        if all("cv_top1_draws" in h for h in last):  # eval.fold_draws > 1: each draw's mean
            out["per_epoch_fold_draw_top1"] = [h["cv_top1_draws"] for h in last]
        if self.method.pretrains and self.config.eval.get("curve_every_epochs", 0):
            best = max(curve, key=lambda h: h["cv_top1"])  # the first of equal maxima
            out.update(
                curve_epochs=[h["epoch"] for h in curve],
                curve_top1=[h["cv_top1"] for h in curve],
                curve_max_top1=best["cv_top1"],
                curve_max_epoch=best["epoch"],
            )
        for n in self.config.eval.edit_nodes:
            out.update(self.edit_scores(features_fn, int(n)))
        return out

    def edit_scores(self, features_fn, num_nodes: int) -> dict:
        """m-Mix Table 6 on subgraphs of ``num_nodes`` nodes: triplet accuracy and pair AUC
        of the embeddings (cosine), and of the WL kernel on the same triplets (its initial
        labels the node features where they are one-hot, else one label for all nodes)."""
        triplets = data_lib.edit_triplets(
            self.ds, num_nodes, num_graphs=self.config.eval.edit_graphs, seed=self.config.seed
        )[:3]
        emb = []
        for part in triplets:  # cut graphs, mostly within the data set's budget: no compile
            batcher = self._in_order(
                *self.method.graph_views(part), within=self.eval_batcher.budgets[0]
            )
            emb.append(self.embeddings(features_fn, batcher))
        anchors, pos, neg = (t.graphs for t in triplets)
        # WL labels nodes by discrete features (atom types, degrees), else by structure alone
        initial = "features" if evaluation.discrete_labels(anchors) else "constant"
        wl = evaluation.similarity_scores(
            evaluation.wl_kernel_similarity(anchors, pos, initial=initial),
            evaluation.wl_kernel_similarity(anchors, neg, initial=initial),
        )
        r = evaluation.edit_triplet_scores(*emb)
        key = f"edit_n{num_nodes}"
        return {
            f"{key}_triplets": len(anchors),
            f"{key}_triplet_acc": r["triplet_acc"],
            f"{key}_pair_auc": r["pair_auc"],
            f"{key}_wl_triplet_acc": wl["triplet_acc"],
            f"{key}_wl_pair_auc": wl["pair_auc"],
        }


_task.register_task(
    "graph",
    GraphClassificationTask,
    datasets=tuple(GRAPH_FILES),
    defaults=config_defaults,
    default_encoder="gin",
)
