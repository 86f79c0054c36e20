"""DACL Table 1, Fashion-MNIST column: the setup shared by its five rows.

Each row has its own file in ``experiments/dacl/`` (``tabular_fmnist_<row>.py``) that calls
:func:`make`; that file holds the row's command, the paper's number and ours. Paper scale
(DACL §5.1): 12-layer fully connected encoder and 3-layer projection head, ReLU and batch
norm on every layer, 1000 epochs at batch 4096, LARS with lr 0.1 and cosine decay without
restarts, linear classifier 200 epochs at batch 256 with LARS lr 0.1. The paper does not
give the layer width; we use 1024 (128-d projection output, as in its image setup). Added
from its image setup (§5.2), where §5.1 is silent: 10 warm-up epochs and weight decay 1e-6.
The classifier's "LARS" is SimCLR's, without the trust ratio on the classifier (so momentum
SGD at lr 0.1), as :mod:`jaxcl.configs.dacl_images` explains. DACL+'s ``rho = 0.9`` is the
probability of keeping an anchor's entry: §5's grid {0.1, 0.3, 0.5} read as the
probability of swapping one, the reading under which the view stays closer to its anchor
(§3.1's "high rho"; see :func:`jaxcl.mixers.binary_mixup`). Gaussian noise ``scale`` is the
noise's standard deviation (§5 calls its grid the "mean"; see
:func:`jaxcl.mixers.gaussian_noise`).

The ``cpu`` variant keeps the architecture's depth but narrows it to 256 units and trains
80 epochs at batch 1024, so each row finishes in under 20 minutes on 2 CPU cores. With 16x
fewer updates than the paper, the pretraining learning rate is raised to 1.0 (LARS scales
every layer's step by 0.001 * |w| / |g|, so lr 0.1 barely moves the weights in ~4,700
steps).
"""

from __future__ import annotations

import ml_collections

from jaxcl.configs.common import MEASURED_PROBE, apply_setup, parse_arg
from jaxcl.training import base_config

# Hyperparameters of each row. The paper searched alpha in {0.5..0.9} (beta = alpha),
# rho in {0.1, 0.3, 0.5}, the Gaussian noise level in {0.05, 0.1, 0.3, 0.5} and
# tau in {0.1, 0.5, 1.0}, reporting the best in an appendix that is not available here.
ROWS = {
    "none": {},
    "gaussian": {"scale": 0.3, "temperature": 0.5},
    "dacl": {"alpha": 0.9, "temperature": 0.5},
    "dacl_plus": {"alpha": 0.9, "rho": 0.9, "temperature": 0.5},
    "supervised": {},
}

SHARED = {
    "model.encoder_depth": 12,
    "model.head_depth": 3,
    "model.embed_dim": 128,
    "optim.weight_decay": 1e-6,
    "eval.linear_epochs": 200,
    "eval.linear_batch_size": 256,
    "eval.linear_lr": 0.1,
    "eval.linear_optimizer": "lars",
    "train.log_every_steps": 100,
    "train.checkpoint_every_steps": 1000,
}
PAPER = {
    "model.encoder_width": 1024,
    "model.head_width": 1024,
    "train.batch_size": 4096,
    "train.epochs": 1000,
    "optim.lr": 0.1,
    "optim.warmup_epochs": 10.0,
    "train.knn_every_epochs": 50,
}
CPU = {
    "model.encoder_width": 256,
    "model.head_width": 256,
    "train.batch_size": 1024,
    "train.epochs": 80,
    "optim.lr": 1.0,
    "optim.warmup_epochs": 5.0,
    "train.knn_every_epochs": 20,
    **MEASURED_PROBE,  # the probe of these rows' recorded numbers
}


def make(method: str, arg: str | None) -> ml_collections.ConfigDict:
    """The config of one row; ``arg`` is empty (paper scale) or ``'cpu'``."""
    choice = parse_arg(arg, variants=("cpu",))
    c = base_config("fashion_mnist", method, optimizer="lars")
    c.method.update(ROWS[method])
    apply_setup(c, SHARED)
    apply_setup(c, CPU if choice.variant == "cpu" else PAPER)
    return c


# DACL Table 1's CIFAR-10 column: the same protocol on CIFAR-10's 3072 permuted pixels.
CIFAR10_PAPER = {
    "none": 26.8,
    "gaussian": 27.4,
    "dacl": 37.6,
    "dacl_plus": 39.7,
    "supervised": 35.2,
}


def make_cifar10(arg: str | None) -> ml_collections.ConfigDict:
    """Table 1's CIFAR-10 column: ``arg`` names the row (``dacl``, ...), read from a prepared
    tfds ``cifar10`` folder (``--config.data.data_dir``) through the same
    ``tfds.data_source`` as the image task, flattened and permuted as Fashion-MNIST is."""
    choice = parse_arg(arg, options=tuple(ROWS), variants=("quick",))
    row = choice.option or "dacl"
    c = base_config("tfds", row, optimizer="lars")
    c.data.tfds_name = "cifar10"
    c.method.update(ROWS[row])
    apply_setup(c, SHARED)
    apply_setup(c, PAPER)
    if choice.variant == "quick":  # a smoke run (tests: two steps on tfds mock data)
        apply_setup(
            c,
            {
                "model.encoder_width": 16,
                "model.head_width": 16,
                "train.batch_size": 8,
                "train.epochs": 1,
                "train.knn_every_epochs": 0,
                "optim.warmup_epochs": 0.0,
                "eval.linear_epochs": 2,
                "eval.linear_batch_size": 8,
            },
        )
    return c
