"""A seconds-long run on scikit-learn's digits for the trainer's end-to-end tests.

    python -m jaxcl.main --config=tests/configs/tiny.py:dacl --workdir=/tmp/tiny
The argument picks the method (default dacl).
"""

import ml_collections

from jaxcl import methods
from jaxcl.configs.common import apply_setup, parse_arg
from jaxcl.training import base_config

SETUP = {
    "model.encoder_depth": 2,
    "model.encoder_width": 32,
    "model.head_depth": 2,
    "model.head_width": 32,
    "model.embed_dim": 16,
    "optim.lr": 0.5,
    "optim.warmup_epochs": 1.0,
    "train.batch_size": 64,
    "train.epochs": 3,
    "train.log_every_steps": 5,
    "train.checkpoint_every_steps": 10,
    "eval.linear_epochs": 5,
    "eval.linear_batch_size": 64,
    "eval.knn_k": 5,
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    name = parse_arg(arg, options=tuple(sorted(methods.REGISTRY))).option or "dacl"
    c = base_config("digits", name)
    apply_setup(c, SETUP)
    return c
