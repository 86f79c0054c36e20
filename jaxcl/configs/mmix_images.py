"""m-Mix Table 3, images: SimCLR, SimCLR + binary-mix, SimCLR + mo-mix-op.

One row per ``row``: ``simclr``, ``binary``, ``mo_op``; the argument picks ``cifar10``
(default) or ``cifar100``, or ``cpu`` (Fashion-MNIST, the real image set here).

Paper scale (m-Mix §4.3 and the official ``image/`` code): ResNet-18 with the CIFAR stem,
projection head Linear(512, 512) - BN - ReLU - Linear(512, 128), SimCLR's augmentations
(random resized crop, flip, colour jitter, grayscale; no blur at 32x32), batch 256, Adam
lr 1e-3 with weight decay 1e-6, 500 epochs, NT-Xent at temperature 0.4 (the code's default),
mo-mix with C = 0.2 and threshold 0.95 (``main.py``'s default theta; the repository's one
launch line, ``image/run.sh``, passes ``--threshold 0.9`` on CIFAR-10: ``--config.method.
threshold=0.9``; see :class:`jaxcl.methods.SimCLRMix`). Linear evaluation: 100 epochs of
Adam at 1e-3 without weight decay on the frozen encoder, batch 256, with crop + flip. The
code's ``linear.py`` differs: batch 512, Adam 1e-3 with weight decay 1e-6, and the
pretraining's whole augmentation (colour jitter and grayscale too), which our streamed probe
does not offer.

The ``cpu`` variant: Fashion-MNIST (28x28x1), ResNet-18 with 8 channels in its first stage,
head 256 -> 64, batch 256, 3 epochs of Adam at 1e-3 after half an epoch of warm-up, linear
evaluation on cached features (100 epochs), kNN on 10k training images: as DACL's image
``cpu`` rows (:mod:`jaxcl.configs.dacl_images`), with m-Mix's optimiser.
"""

from __future__ import annotations

import ml_collections

from jaxcl.configs.common import MEASURED_PROBE, apply_setup, parse_arg
from jaxcl.training import base_config

ROWS = {
    "simclr": ("simclr", {}),
    "binary": ("simclr_mmix", {"mixing": "binary", "threshold": -1.0}),
    "mo_op": ("simclr_mmix", {"mixing": "mo", "self_weight": 0.2, "threshold": 0.95}),
}
PAPER = {
    "model.resnet_depth": 18,
    "model.resnet_stem": "cifar",
    "model.head_depth": 2,
    "model.head_width": 512,
    "model.embed_dim": 128,
    "train.batch_size": 256,
    "train.epochs": 500,
    "train.knn_every_epochs": 50,
    "train.log_every_steps": 50,
    "train.checkpoint_every_steps": 1000,
    "optim.lr": 1e-3,
    "optim.weight_decay": 1e-6,
    "optim.warmup_epochs": 0.0,
    "optim.schedule": "constant",
    "method.temperature": 0.4,
    "method.color_strength": 0.5,
    "method.blur_p": 0.0,
    "eval.linear_optimizer": "adam",
    "eval.linear_epochs": 100,
    "eval.linear_batch_size": 256,
    "eval.linear_lr": 1e-3,
    "data.workers": 8,
}
CPU = {
    **PAPER,
    "model.base_width": 8,
    "model.head_width": 256,
    "model.embed_dim": 64,
    "train.epochs": 3,
    "train.knn_every_epochs": 0,
    "optim.warmup_epochs": 0.5,
    "optim.schedule": "cosine",
    "eval.linear_optimizer": "lars",
    "eval.linear_lr": 0.1,
    "eval.knn_max_train": 10000,
    "data.workers": 1,
    **MEASURED_PROBE,  # the probe of these rows' recorded numbers
}


def make(row: str, arg: str | None) -> ml_collections.ConfigDict:
    """The config of one row; ``arg``: ``cifar10`` (default), ``cifar100`` or ``cpu``."""
    if row not in ROWS:
        raise ValueError(f"unknown m-Mix image row {row!r}; rows: {sorted(ROWS)}")
    choice = parse_arg(arg, datasets=("cifar10", "cifar100"), variants=("cpu",))
    method, hp = ROWS[row]
    data = "fashion_mnist_images" if choice.variant == "cpu" else choice.dataset or "cifar10"
    c = base_config(data, method, optimizer="adam")
    c.method.update(hp)
    apply_setup(c, CPU if choice.variant == "cpu" else PAPER)
    c.eval.linear_augment = choice.variant != "cpu"
    return c
