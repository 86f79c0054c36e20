"""The paired-views task: every example comes with two given views (ESCo's synthetic data,
§5.1); training batches carry both, evaluation embeds the examples themselves and judges
them by k-fold cross-validated logistic regression."""

from __future__ import annotations

import numpy as np
from absl import logging

from jaxcl import data as data_lib
from jaxcl import evaluation, methods
from jaxcl.training import _task
from jaxcl.training._errors import ConfigError
from jaxcl.training._tabular_task import RowBatches, epoch_steps, rows_in_batches

DATASETS = ("esco_synthetic",)


def config_defaults(data: str, method, config) -> dict:
    """The paired task's keys for ``data`` and ``method`` (see ``register_task``)."""
    del data, config
    keys = {
        # ESCo §5.1 / App. B.1: 4000 examples; the generator's seed fixes the data set
        # (its MLPs and samples) independently of the training seed. ``standardize=False``
        # feeds the feature MLP's raw softmax outputs (~1e-3 each) to the encoder, as ESCo
        # Table 1's configs do; True (the generator's default) z-scores every column.
        # ``hidden_activation`` is the feature MLP's after its hidden layers (App. B.1 names
        # only softmax: "softmax" after every layer, or "relu" with softmax on the output).
        "data": {
            "num_samples": 4000,
            "num_features": 1024,
            "data_seed": 0,
            "standardize": True,
            "hidden_activation": "softmax",
        },
        "train": {},
        # Logistic regression (full-batch Adam on standardised features), k-fold CV.
        "eval": {"folds": 10, "linear_steps": 300, "linear_lr": 1e-2},
    }
    if method.pretrains:
        keys["train"]["batch_size"] = 256
        keys["train"]["eval_every_epochs"] = 0  # 0: only at the end
    return keys


def load_dataset(cfg) -> data_lib.PairedViews:
    if cfg.name == "esco_synthetic":
        return data_lib.esco_synthetic(
            cfg.num_samples,
            seed=cfg.data_seed,
            num_features=cfg.num_features,
            standardize=cfg.standardize,
            hidden_activation=cfg.hidden_activation,
        )
    raise ConfigError(f"config.data.name = {cfg.name!r}: unknown paired data set")


# Below this relative spread of the examples' features, float32 cannot carry the encoder's
# gradient: on ESCo's softmax-after-every-layer data (~3e-6) it is rounding noise.
DEGENERATE_SPREAD = 1e-3


def relative_spread(x: np.ndarray) -> float:
    """How much the examples differ, relative to the features' size: the median over
    columns of (standard deviation over examples) / (mean absolute value)."""
    x = np.asarray(x, np.float64)
    size = np.abs(x).mean(axis=0)
    ratio = x.std(axis=0)[size > 0] / size[size > 0]
    return float(np.median(ratio)) if ratio.size else 0.0


# Above this mean pairwise cosine of the normalised embeddings the encoder maps every
# example to (nearly) one point: ESCo's synthetic runs at lam >= 0.9 end at 0.9994-1.0; the
# untrained encoder on those inputs starts at 0.995.
COLLAPSED_COSINE = 0.99


def embedding_geometry(f, f_a, f_b) -> dict:
    """What the contrastive loss sees of the encoder's outputs, l2-normalised (float64):

    - ``mean_cosine``: mean cosine between two different examples' embeddings (``f``), from
      ``||sum_i u_i||^2 = n + sum_{i != j} u_i . u_j`` in O(n d); 1 when all coincide
      (collapse), about 0 when they are spread over the sphere (over the examples with a
      non-zero output; NaN when fewer than two have one);
    - ``view_sq_distance``: mean ``||u_a - u_b||^2`` between the two views of an example
      (``f_a``, ``f_b``), the alignment term of ESCo's loss (Eq. 9) before ``lam``: 0 when
      the views coincide, 2 for orthogonal views.
    """

    def unit(v):
        v = np.asarray(v, np.float64)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-300)

    u = unit(f)
    u = u[np.any(u != 0, axis=1)]  # an all-zero output has no direction
    n, total = len(u), u.sum(axis=0)
    mean_cosine = (total @ total - n) / (n * (n - 1)) if n > 1 else float("nan")
    view_sq_distance = ((unit(f_a) - unit(f_b)) ** 2).sum(axis=1).mean() if len(f_a) else np.nan
    return {"mean_cosine": float(mean_cosine), "view_sq_distance": float(view_sq_distance)}


class PairedTask(RowBatches):
    """Batches ``Batch(x=[batch, 2, features], y)`` of both views; the frozen encoder's
    features of the examples ``x`` judged by ``eval.folds``-fold cross-validated logistic
    regression (ESCo §5.1: "logistic regression with cross-validation", 10 folds)."""

    kind = "paired"

    def __init__(self, config, method, mesh):
        self.config = config
        self.method = method
        self.mesh = mesh
        self.ds = load_dataset(config.data)
        self.name = self.ds.name
        self.spec = methods.DataSpec("paired", self.ds.num_features, self.ds.num_classes)
        _task.check_folds(config.eval.folds, self.ds.y, self.name)
        self.pairs = np.stack([self.ds.x_a, self.ds.x_b], axis=1)
        spread = relative_spread(self.ds.x)
        if spread < DEGENERATE_SPREAD:
            logging.warning(
                "%s: the examples' features differ by %.1e of their size (median column std"
                " / mean |x|): in float32 the encoder's gradient will be mostly rounding noise"
                " and results will depend on the hardware. Standardise the features"
                " (config.data.standardize=True) or change the data (for ESCo's synthetic"
                " data, config.data.hidden_activation='relu').",
                self.ds.name,
                spread,
            )
        self.steps_per_epoch = self.examples_per_step = 0
        if method.pretrains:
            self.steps_per_epoch, self.examples_per_step = epoch_steps(
                config, mesh, len(self.ds.x), self.name
            )

    def describe(self) -> str:
        ds = self.ds
        return (
            f"{len(ds.x)} examples with two views each, {ds.num_features} features, "
            f"{ds.num_classes} classes"
        )

    def training_rows(self):
        return self.pairs, self.ds.y

    def evaluate_at(self, epoch: int) -> bool:
        every = self.config.train.get("eval_every_epochs", 0)
        return bool(every) and epoch % every == 0

    def evaluate(self, features_fn, epoch: int) -> dict:
        f = rows_in_batches(features_fn, self.ds.x, self.mesh).astype(np.float64)
        geometry = embedding_geometry(
            f,
            rows_in_batches(features_fn, self.ds.x_a, self.mesh),
            rows_in_batches(features_fn, self.ds.x_b, self.mesh),
        )
        if geometry["mean_cosine"] > COLLAPSED_COSINE or np.isnan(geometry["mean_cosine"]):
            logging.warning(
                "%s, epoch %d: the encoder has collapsed: its l2-normalised outputs have mean"
                " pairwise cosine %.6f (1 = one point for all examples; nan = no direction,"
                " the outputs are zero). The linear probe"
                " below reads what is left of their differences after standardising each"
                " feature; its accuracy is not that of a trained representation.",
                self.name,
                epoch,
                geometry["mean_cosine"],
            )
        # Standardised with the statistics of all examples (no labels involved), so that
        # one learning rate suits every encoder's scale.
        f = (f - f.mean(axis=0)) / np.where(f.std(axis=0) > 0, f.std(axis=0), 1.0)
        cfg = self.config.eval
        r = evaluation.kfold_linear_accuracy(
            f.astype(np.float32),
            self.ds.y,
            num_classes=self.ds.num_classes,
            num_folds=cfg.folds,
            steps=cfg.linear_steps,
            learning_rate=cfg.linear_lr,
            seed=self.config.seed,
        )
        return {"cv_top1": float(r["mean"]), "cv_top1_std": float(r["std"]), **geometry}

    def final(self, features_fn, logits_fn, history: list[dict]) -> dict:
        del logits_fn
        epochs = self.config.train.get("epochs", 0)
        done = [h for h in history if "cv_top1" in h]
        # The last epoch's evaluation when it ran already (eval_every_epochs divides epochs).
        last = done[-1] if done and done[-1]["epoch"] == epochs else None
        if last is None or "mean_cosine" not in last:  # or from a run before the key
            last = self.evaluate(features_fn, epochs)
        curve = [h["cv_top1"] for h in done]
        return {
            "test_top1": last["cv_top1"],
            "fold_std": last["cv_top1_std"],
            "mean_cosine": last["mean_cosine"],
            "view_sq_distance": last["view_sq_distance"],
            "per_epoch_top1": curve,
            "evaluated_epochs": [h["epoch"] for h in done],
        }


_task.register_task(
    "paired", PairedTask, datasets=DATASETS, defaults=config_defaults, default_encoder="mlp_plain"
)
