"""MetAug Tables 1 and 2: SimCLR, MetAug (only OUCL), MetAug without R_sigma, MetAug.

One row per ``row``: ``simclr`` (NT-Xent on the same view-specific encoders), ``oucl``
(MetAug only OUCL), ``no_margin`` (MetAug with ``alpha = 0``), ``metaug``. The argument names
the data set (``cifar10``, default; ``cifar100``; ``stl10``; ``tiny_imagenet``), the backbone
(``conv``, ``fc`` (default): the split AlexNet cut after conv5 or fc7, App. B.1;
``resnet50``: Table 2, one ResNet-50 per view) and the scale (``cpu``: Fashion-MNIST on 2 CPU
cores; ``quick``: a smoke test of ``cpu``).

Paper scale (§4.1, App. B, the official code's defaults where the paper is silent): views
RGB, L and ab of Lab after CMC's crop (area 0.2-1) and flip; batch 64; memory queue of 4096
past features per view; Adam (App. B.2) at 1e-3 with weight decay 1e-4 (the official
``weight_decay``, decoupled here: AdamW), cosine over 300 epochs (the official ``EPOCHS``,
the epoch its linear probe loads; the paper gives no length). The
official code does not use Adam: its ``train_MetAug.py`` trains the encoders with SGD (lr
0.03, momentum 0.9, weight decay 1e-4 added to the gradient, the rate divided by 10 at
epochs 120, 160 and 200) and its generators with SGD 0.03 too; we follow the paper's
optimiser. OUCL Eq. 10 with ``gamma = 0.4`` (App. A.4) and ``beta = 16`` (the official
temperature); ``delta = 1e-5`` (Table 5's best), ``alpha = 1e-11`` and "Large" margins (the
official defaults); the fast weights' SGD step 1e-3 (the official ``bb_learning_rate``; the
official loss is 16 times ours, see :class:`jaxcl.methods.MetAug`), generators on Adam 1e-3;
the generators' step from the encoders' updated weights (Algorithm 1's order). Linear
evaluation on the concatenated representations of the uncropped views: Adam 1e-3, 100
epochs, batch 256, one run scored after its last epoch. The paper averages the last 20 of
its probe's epochs over 20 trials (Table 1's ± are 95% intervals over those), and the
official ``LinearProbing_MetAug.py`` trains SGD 0.1 (momentum 0.9, the rate x0.2 at epochs
30, 40, 50) for 60 epochs on crops (area 0.2-1) and flips; neither is done here. Table 2's
ResNet-50 rows (``resnet50``): one ResNet-50 with the CIFAR stem per view (also at STL-10's
96 px) and a 2-layer projection head of 2048 (the paper describes neither).
Tiny ImageNet (Table 1's first column) has no tfds builder: prepare it once from
``tiny-imagenet-200.zip`` with ``jaxcl.data.prepare_tiny_imagenet(data_dir, zip)``. Its rows
train the CIFAR split AlexNet on the 64x64 images as they are, as the STL-10 rows do at 96 px
(our reading: the official script resizes every data set to 224 px for CMC's ImageNet
AlexNet, which the paper does not mention; its App. B describes the CIFAR network).

The ``cpu`` variant (Fashion-MNIST 28x28x1, the issue's setting): two crop + flip views of the
grayscale image (``views='gray'``), the split AlexNet at a quarter of its channels (12 ... 32
channels, fc 512), generators 128 -> 512 -> 512 -> 128, batch 64, queue 4096, one epoch
(937 steps) of Adam 1e-3 with half an epoch of warm-up and a cosine decay; linear probe on
cached features (LARS, 100 epochs) and kNN.
"""

from __future__ import annotations

import ml_collections

from jaxcl.configs.common import MEASURED_PROBE, apply_setup, parse_arg
from jaxcl.training import base_config

ROWS = {
    "simclr": ("split_simclr", {}),
    "oucl": ("metaug_oucl", {}),
    "no_margin": ("metaug", {"alpha": 0.0}),
    "metaug": ("metaug", {}),
}
BACKBONES = ("fc", "conv", "resnet50")
PAPER = {
    "method.views": "lab_rgb",
    "method.crop_min_scale": 0.2,
    "model.embed_dim": 128,
    "train.batch_size": 64,
    "train.epochs": 300,
    "train.log_every_steps": 100,
    "train.checkpoint_every_steps": 2000,
    "optim.lr": 1e-3,
    "optim.weight_decay": 1e-4,
    "optim.warmup_epochs": 0.0,
    "optim.schedule": "cosine",
    "eval.linear_optimizer": "adam",
    "eval.linear_epochs": 100,
    "eval.linear_batch_size": 256,
    "eval.linear_lr": 1e-3,
    "data.workers": 8,
}
CPU = {
    **PAPER,
    "method.views": "gray",
    "model.alexnet_width": 0.25,
    "model.generator_width": 512,
    "train.epochs": 1,
    "optim.warmup_epochs": 0.5,
    "eval.linear_optimizer": "lars",
    "eval.linear_lr": 0.1,
    "eval.knn_max_train": 10000,
    "data.workers": 1,
    **MEASURED_PROBE,  # the probe of these rows' recorded numbers
}
QUICK = {
    **CPU,
    "method.queue_size": 256,
    "model.alexnet_width": 0.125,
    "model.generator_width": 64,
    "train.epochs": 1,
    "train.log_every_steps": 10,
    "eval.linear_epochs": 5,
    "eval.knn_max_train": 1000,
    "data.pretrain_split": "train[:1024]",
    "data.train_split": "train[:1024]",
    "data.test_split": "test[:512]",
}


def make(row: str, arg: str | None) -> ml_collections.ConfigDict:
    """The config of one row; ``arg`` as the module docstring says."""
    if row not in ROWS:
        raise ValueError(f"unknown MetAug row {row!r}; rows: {sorted(ROWS)}")
    choice = parse_arg(
        arg,
        datasets=("cifar10", "cifar100", "stl10", "tiny_imagenet"),
        variants=("cpu", "quick"),
        options=BACKBONES,
    )
    method, hp = ROWS[row]
    small = choice.variant in ("cpu", "quick")
    data = "fashion_mnist_images" if small else choice.dataset or "cifar10"
    backbone = choice.option or "fc"
    encoder = "resnet" if backbone == "resnet50" else "alexnet_half"
    c = base_config(data, method, encoder=encoder, optimizer="adam")
    c.method.update(hp)
    apply_setup(c, {"cpu": CPU, "quick": QUICK}.get(choice.variant, PAPER))
    if encoder == "alexnet_half":
        c.model.representation = backbone
    else:
        c.model.resnet_depth = 50
    return c
