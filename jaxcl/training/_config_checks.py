"""The value check of each config key (where the key applies): ``CHECKS`` maps a key's
path to a function that raises ``ConfigError`` naming the key, the value and what was
expected. :func:`jaxcl.training.validate` applies them."""

from __future__ import annotations

import math
import numbers

from jaxcl import models, optim
from jaxcl.data._graph_build import NODE_FEATURE_KINDS
from jaxcl.models._alexnet import REPRESENTATIONS as ALEXNET_REPRESENTATIONS
from jaxcl.models._resnet import STAGES as RESNET_STAGES
from jaxcl.models._resnet import STEMS as RESNET_STEMS
from jaxcl.training._errors import ConfigError


def fail(path, value, expected):
    raise ConfigError(f"config.{path} = {value!r}: expected {expected}")


def number(path, value, *, minimum=None, exclusive=False, integer=False, maximum=None):
    integral = numbers.Integral if integer else numbers.Real
    kind = "an integer" if integer else "a number"
    if not isinstance(value, integral) or isinstance(value, bool):
        fail(path, value, kind)
    if not math.isfinite(value):
        fail(path, value, f"a finite {kind[2:] if integer else 'number'}")
    if minimum is not None and (value <= minimum if exclusive else value < minimum):
        fail(path, value, f"{kind} {'>' if exclusive else '>='} {minimum}")
    if maximum is not None and value > maximum:
        fail(path, value, f"{kind} <= {maximum}")


def _choice(path, value, allowed):
    if value not in allowed:
        fail(path, value, f"one of {list(allowed)}")


def flag(path, value):
    if not isinstance(value, bool):
        fail(path, value, "True or False")


def _anchors(path, value):
    if not (
        isinstance(value, tuple | list)
        and value
        and all(
            isinstance(a, int | float) and not isinstance(a, bool) and math.isfinite(a)
            for a in value
        )
    ):
        fail(path, value, "a non-empty tuple of finite numbers")


def _edit_sizes(path, value):
    if not (
        isinstance(value, tuple | list)
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 2 for n in value)
    ):
        fail(path, value, "a tuple of subgraph sizes, integers >= 2 (() for none)")


def _positive_int(path, value):
    number(path, value, minimum=1, integer=True)


def _positive(path, value):
    number(path, value, minimum=0, exclusive=True)


def _nonnegative(path, value):
    number(path, value, minimum=0)


def _nonnegative_int(path, value):
    number(path, value, minimum=0, integer=True)


def _momentum(path, value):  # 1 or more would let the velocity grow without bound
    number(path, value, minimum=0)
    if value >= 1:
        fail(path, value, "a number in [0, 1)")


def _count_or_all(path, value):  # devices, processes: a positive count, or -1 for all
    number(path, value, minimum=-1, integer=True)
    if value == 0:
        fail(path, value, "a positive count, or -1 for all")


# The value check of each key, where the key applies.
CHECKS = {
    "seed": _nonnegative_int,
    "repeats": _positive_int,
    "mesh.data": _count_or_all,
    "model.compute_dtype": lambda p, v: _choice(p, v, models.COMPUTE_DTYPES),
    "model.encoder_depth": _positive_int,
    "model.encoder_width": _positive_int,
    "model.head_depth": _positive_int,
    "model.head_width": _positive_int,
    "model.embed_dim": _positive_int,
    "model.encoder_out_dim": _positive_int,
    "model.gin_kernel_init": lambda p, v: _choice(p, v, ("lecun_normal", "glorot_uniform")),
    "model.gin_sparse_layout": lambda p, v: _choice(p, v, ("auto", "on", "off")),
    "model.resnet_depth": lambda p, v: _choice(p, v, sorted(RESNET_STAGES)),
    "model.resnet_stem": lambda p, v: _choice(p, v, RESNET_STEMS),
    "model.width_multiplier": _positive_int,
    "model.base_width": _nonnegative_int,
    "model.zero_init_residual": flag,
    "model.representation": lambda p, v: _choice(p, v, ALEXNET_REPRESENTATIONS),
    "model.alexnet_width": _positive,
    "optim.schedule": lambda p, v: _choice(p, v, optim.SCHEDULES),
    "optim.lr": _positive,
    "optim.weight_decay": _nonnegative,
    "optim.momentum": _momentum,
    "optim.trust_coefficient": _positive,
    "optim.decay_all": flag,
    "optim.warmup_epochs": _nonnegative,
    "train.batch_size": _positive_int,
    "train.epochs": _nonnegative_int,
    "train.log_every_steps": _positive_int,
    "train.checkpoint_every_steps": _positive_int,
    "train.keep_checkpoints": _positive_int,
    "train.knn_every_epochs": _nonnegative_int,
    "train.reuse_host_memory": flag,
    "train.eigen_cpu_convolutions": flag,
    "train.early_stopping_patience": _nonnegative_int,
    "data.graph_format": lambda p, v: _choice(p, v, ("gin", "tu")),
    "data.node_features": lambda p, v: _choice(p, v, NODE_FEATURE_KINDS),
    "data.drop_node_tag": lambda p, v: number(p, v, minimum=-1, integer=True),
    "data.padding_anchors": _anchors,
    "data.normalize_features": flag,
    "data.synthetic": flag,
    "data.synthetic_scale": lambda p, v: number(p, v, minimum=0, exclusive=True, maximum=1),
    "data.permutation_seed": _nonnegative_int,
    "data.num_samples": _positive_int,
    "data.num_features": _positive_int,
    "data.data_seed": _nonnegative_int,
    "data.standardize": flag,
    "data.hidden_activation": lambda p, v: _choice(p, v, ("softmax", "relu", "tanh")),
    "data.workers": _nonnegative_int,
    "data.image_size": _nonnegative_int,
    "eval.eval_batch_size": _positive_int,
    "eval.linear_epochs": _positive_int,
    "eval.linear_batch_size": _positive_int,
    "eval.linear_lr": _positive,
    "eval.linear_optimizer": lambda p, v: _choice(p, v, ("lars", "adam", "sgd")),
    "eval.linear_trust_ratio": flag,
    "eval.linear_standardize": flag,
    "eval.linear_augment": flag,
    "eval.knn_k": _positive_int,
    "eval.knn_max_train": _positive_int,
    "eval.graph_protocol": lambda p, v: _choice(p, v, ("linear", "svm")),
    "eval.last_epochs": _positive_int,
    "eval.curve_every_epochs": _nonnegative_int,
    "eval.folds_per_epoch": flag,
    "eval.fold_draws": _positive_int,
    "eval.folds": lambda p, v: number(p, v, minimum=2, integer=True),
    "eval.graph_linear_steps": _positive_int,
    "eval.graph_linear_lr": _positive,
    "eval.svm_jobs": _count_or_all,
    "eval.svm_solver": lambda p, v: _choice(p, v, ("liblinear", "newton")),
    "eval.edit_nodes": _edit_sizes,
    "eval.edit_graphs": _positive_int,
    "eval.node_split": lambda p, v: _choice(p, v, ("random", "public")),
    "eval.node_every_epochs": _nonnegative_int,
    "eval.linear_steps": _positive_int,
    "train.eval_every_epochs": _nonnegative_int,
    "eval.node_classifier_runs": _positive_int,
    "eval.node_classifier_steps": _positive_int,
    "eval.node_classifier_eval_every": _positive_int,
    "eval.node_classifier_normalize": lambda p, v: _choice(p, v, ("l2", "standardize", "none")),
    "eval.node_classifier_weight_decay": _nonnegative,
    "eval.node_clustering": flag,
}
