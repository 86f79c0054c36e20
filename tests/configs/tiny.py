"""A seconds-long run on scikit-learn's digits for the trainer's end-to-end tests.

    python -m jaxcl.main --config=tests/configs/tiny.py:dacl --workdir=/tmp/tiny
The argument picks the method (default dacl).
"""

import ml_collections

from jaxcl import methods
from jaxcl.training import base_config


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    name = arg or "dacl"
    c = base_config()
    c.data.name = "digits"
    c.model.encoder_depth = 2
    c.model.encoder_width = 32
    c.model.head_depth = 2
    c.model.head_width = 32
    c.model.embed_dim = 16
    c.optim.lr = 0.5
    c.optim.warmup_epochs = 1.0
    c.train.batch_size = 64
    c.train.epochs = 3
    c.train.log_every_steps = 5
    c.train.checkpoint_every_steps = 10
    c.eval.linear_epochs = 5
    c.eval.linear_batch_size = 64
    c.eval.knn_k = 5
    c.method = ml_collections.ConfigDict({"name": name, **methods.get(name).defaults})
    return c
