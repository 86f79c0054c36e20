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

from jaxcl.configs.common import apply_setup, parse_arg
from jaxcl.training import base_config

SHARED = {
    "model.encoder_depth": 5,
    "model.head_depth": 2,
    "model.embed_dim": 128,
    "optim.lr": 1e-3,
    "optim.weight_decay": 0.0,
    "optim.warmup_epochs": 5.0,
    "eval.linear_epochs": 100,
    "eval.linear_batch_size": 256,
    "eval.linear_lr": 1.0,
    "eval.linear_optimizer": "lars",
    "train.log_every_steps": 100,
    "train.checkpoint_every_steps": 1000,
}
FULL = {
    "model.encoder_width": 2048,
    "model.head_width": 2048,
    "train.batch_size": 512,
    "train.epochs": 500,
    "train.knn_every_epochs": 50,
}
CPU = {
    "model.encoder_width": 512,
    "model.head_width": 512,
    "train.batch_size": 1024,
    "train.epochs": 60,
    "train.knn_every_epochs": 20,
}


def make(method: str, arg: str | None) -> ml_collections.ConfigDict:
    """The config of ``method`` ('npair' or 'imix'); ``arg`` empty (full scale) or ``'cpu'``."""
    choice = parse_arg(arg, variants=("cpu",))
    c = base_config("fashion_mnist", method, optimizer="adam")
    apply_setup(c, SHARED)
    apply_setup(c, CPU if choice.variant == "cpu" else FULL)
    return c
