"""DACL Table 1, Fashion-MNIST column: the setup shared by its five rows.

Each row has its own file in ``experiments/dacl/`` that calls :func:`make`. Paper scale
(DACL §5.1): 12-layer fully connected encoder and 3-layer projection head, ReLU and batch
norm on every layer, 1000 epochs at batch 4096, LARS with lr 0.1 and cosine decay without
restarts, linear classifier 200 epochs at batch 256 with LARS lr 0.1. The paper does not
give the layer width; we use 1024 (128-d projection output, as in its image setup).

The ``cpu`` variant keeps the architecture's depth but narrows it to 256 units and trains
80 epochs at batch 1024, so each row finishes in under 20 minutes on 2 CPU cores. With 16x
fewer updates than the paper, the pretraining learning rate is raised to 1.0 (LARS scales
every layer's step by 0.001 * |w| / |g|, so lr 0.1 barely moves the weights in ~4,700
steps).

Measured with ``:cpu`` (one run each, seed 0; 2-core AMD EPYC CPU, jax 0.10.2, 2026-11-21;
linear-probe test top-1, the supervised row its own classifier):

==============================  =====  =====  =========
row                             paper  ours   wall time
==============================  =====  =====  =========
No-Pretraining                  66.6   63.2   0.4 min
Gaussian-noise                  75.8   81.0   12.8 min
DACL                            81.4   83.1   13.4 min
DACL+                           82.4   83.2   13.0 min
Full network supervised         79.1   89.2   4.5 min
==============================  =====  =====  =========

The paper's ordering holds (No-Pretraining < Gaussian-noise < DACL <= DACL+). Three rows
differ from the paper by more than 3 points; our reading of each (single runs, so a point
or so is noise):

* Full supervised training: 89 % is what a deep MLP with batch norm usually reaches on
  Fashion-MNIST. The paper's 79.1 % after 1000 epochs of a 12 x 1024 network may reflect
  over-fitting (it describes no regularisation or early stopping for this row), which 80
  epochs of a narrower network avoid; we have not run the paper-scale row to check. The
  paper's claim that DACL's linear probe beats full supervised training does not
  reproduce here.
* Gaussian-noise: 81.0 % against 75.8 %. We add the noise to standardised pixels with
  sigma 0.3 (the paper searched 0.05 to 0.5 without naming the scale); the gap to DACL
  is 2.1 points here against 5.6 in the paper.
* No-Pretraining: a random 12 x 256 network here against 12 x 1024 there; narrower random
  features give a weaker linear probe (63.2 % against 66.6 %).
"""

from __future__ import annotations

import ml_collections

from jaxcl import methods
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


def make(method: str, variant: str | None) -> ml_collections.ConfigDict:
    """The config of one row; ``variant`` is None (paper scale) or ``'cpu'``."""
    if variant not in (None, "", "cpu"):
        raise ValueError(f"unknown variant {variant!r}; use no variant (paper scale) or 'cpu'")
    c = base_config()
    c.data.name = "fashion_mnist"
    c.method = ml_collections.ConfigDict(
        {"name": method, **methods.get(method).defaults, **ROWS[method]}
    )
    c.model.encoder_depth = 12
    c.model.head_depth = 3
    c.model.embed_dim = 128
    c.optim.name = "lars"
    c.optim.weight_decay = 1e-6
    c.eval.linear_epochs = 200
    c.eval.linear_batch_size = 256
    c.eval.linear_lr = 0.1
    c.eval.linear_optimizer = "lars"
    if variant == "cpu":
        c.model.encoder_width = c.model.head_width = 256
        c.train.batch_size = 1024
        c.train.epochs = 80
        c.optim.lr = 1.0
        c.optim.warmup_epochs = 5.0
        c.train.log_every_steps = 100
        c.train.checkpoint_every_steps = 1000
        c.train.knn_every_epochs = 20
    else:
        c.model.encoder_width = c.model.head_width = 1024
        c.train.batch_size = 4096
        c.train.epochs = 1000
        c.optim.lr = 0.1
        c.optim.warmup_epochs = 10.0
        c.train.log_every_steps = 100
        c.train.checkpoint_every_steps = 1000
        c.train.knn_every_epochs = 50
    return c
