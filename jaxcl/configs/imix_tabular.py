"""i-Mix on tabular data: N-pair vs N-pair + i-Mix with a 5-layer MLP with batch norm.

The setup shared by ``experiments/imix/tabular_fmnist_{npair,imix}.py``, on DACL's tabular
proxy of Fashion-MNIST (pixels permuted by a fixed permutation, flattened, standardised).
The i-Mix material available here (slides with the paper's Algorithm 1) fixes the 5-layer
MLP with batch norm, the N-pair loss with virtual soft labels, lam ~ Beta(alpha, alpha) with
one lam per batch, and no domain augmentation for tabular data: the two views are the
input itself, so the N-pair baseline learns from the instance-discrimination loss alone and
i-Mix's mixing is the only augmentation (our reading; ``method.view_noise > 0`` adds Gaussian
noise to both views instead). Widths, optimiser and schedule are ours: 5 x 2048 encoder,
2-layer head to 128, Adam with warm-up + cosine, tau 0.2, alpha 1.0.

The ``cpu`` variant narrows the MLP to 512 units and trains 60 epochs at batch 1024.
"""

from __future__ import annotations

import ml_collections

from jaxcl import methods
from jaxcl.training import base_config


def make(method: str, variant: str | None) -> ml_collections.ConfigDict:
    """The config of ``method`` ('npair' or 'imix'); ``variant`` None or ``'cpu'``."""
    if variant not in (None, "", "cpu"):
        raise ValueError(f"unknown variant {variant!r}; use no variant (full scale) or 'cpu'")
    c = base_config()
    c.data.name = "fashion_mnist"
    c.method = ml_collections.ConfigDict({"name": method, **methods.get(method).defaults})
    c.model.encoder_depth = 5
    c.model.head_depth = 2
    c.model.embed_dim = 128
    c.optim.name = "adam"
    c.optim.lr = 1e-3
    c.optim.weight_decay = 0.0
    c.optim.warmup_epochs = 5.0
    c.eval.linear_epochs = 100
    c.eval.linear_batch_size = 256
    c.eval.linear_lr = 1.0
    c.eval.linear_optimizer = "lars"
    c.train.log_every_steps = 100
    c.train.checkpoint_every_steps = 1000
    if variant == "cpu":
        c.model.encoder_width = c.model.head_width = 512
        c.train.batch_size = 1024
        c.train.epochs = 60
        c.train.knn_every_epochs = 20
    else:
        c.model.encoder_width = c.model.head_width = 2048
        c.train.batch_size = 512
        c.train.epochs = 500
        c.train.knn_every_epochs = 50
    return c
