"""DACL Tables 2 and 3 (images): the setup shared by their rows.

Each row has its own file in ``experiments/dacl/`` (``image_<row>.py``) that calls
:func:`make`; that file holds the row's commands, the paper's numbers and ours. The
argument picks the data set: ``cifar10`` (default) or ``cifar100`` (Table 2), ``imagenet``
(Table 3: every row but DACL+, which Table 3 does not have), or ``cpu`` (Fashion-MNIST with
a narrow ResNet-18, the real image set of a machine without the others; each row under 20
minutes on 2 CPU cores).

Paper scale (DACL §5.2, following SimCLR): ResNet-50 (4x) encoder (CIFAR stem on
CIFAR, 32x32; ImageNet stem, 224x224 crops; as SimCLR's ``resnet.py``, every block's last
batch norm starts at scale 0), 3-layer projection head to 128 dimensions whose hidden layers
are as wide as the encoder's 8192 features (SimCLR's ``ProjectionHead``),
batch 4096, LARS with lr 16.0 (= 1.0 x batch / 256) for CIFAR and 4.8 (= 0.3 x batch / 256)
for ImageNet, 10 warm-up epochs then cosine decay, weight decay 1e-6, 1000 epochs (CIFAR) or
100 (ImageNet). SimCLR's augmentations: random resized crop and flip, colour distortion,
Gaussian blur (p 0.5). Linear evaluation: CIFAR batch 256, 200 epochs, LARS lr 1.0, cosine,
no weight decay or warm-up; ImageNet batch 4096, 90 epochs, LARS lr 1.6. That LARS is SimCLR's
on its classifier: without the trust ratio (its ``head_supervised`` is exempt from layer
adaptation), i.e. momentum SGD, on the encoder's features as they are (not z-scored). The
domain-agnostic rows (No-Pretraining, Gaussian, DACL, DACL+) use no augmentation in linear
evaluation; SimCLR and SimCLR+DACL use random crop + flip.

What the paper leaves open, and what we use: colour strength 0.5 on CIFAR and 1.0 on
ImageNet, NT-Xent temperature 0.5 on CIFAR and 0.1 on ImageNet (SimCLR's own settings for
these data sets); DACL's alpha 0.9 and DACL+'s rho 0.9 (its tabular values; rho the
probability of keeping an anchor's pixel, see :mod:`jaxcl.configs.dacl_tabular`), Gaussian
noise of standard deviation 0.1 on pixels in [0, 1] (from §5's grid {0.05, 0.1, 0.3, 0.5};
the tabular row uses 0.3); SimCLR+DACL's two losses with weight 1 each
(§5.2: "the sum").

The ``cpu`` variant: Fashion-MNIST (28x28x1; the tfds folder prepared from the Debian idx
files), ResNet-18 with 8 channels in its first stage (CIFAR stem), 2-layer head of 256 to 64
dimensions, batch 256, 3 epochs, LARS lr 1.0 with half an epoch of warm-up, colour strength
0.5 and no blur (28x28 images). Linear evaluation without augmentation for every row (the
crop + flip protocol recomputes 60k features per epoch, too slow for 2 cores), 100 epochs
on the cached features, z-scored with training statistics and with LARS's trust ratio on the
classifier (the probe the rows were measured with; ``--config.eval.linear_trust_ratio=False
--config.eval.linear_standardize=False`` gives SimCLR's); kNN
(k 200) on 10k training images. Its ResNet-18 keeps every block's last batch-norm scale at 1,
as when its rows were measured.
"""

from __future__ import annotations

import ml_collections

from jaxcl.configs.common import MEASURED_PROBE, apply_setup, parse_arg
from jaxcl.training import base_config

# Each row's method and hyperparameters (the image-specific keys exist only for SimCLR rows).
ROWS = {
    "none": ("none", {}),
    "gaussian": ("gaussian", {"scale": 0.1, "temperature": 0.5}),
    "dacl": ("dacl", {"alpha": 0.9, "temperature": 0.5}),
    "dacl_plus": ("dacl_plus", {"alpha": 0.9, "rho": 0.9, "temperature": 0.5}),
    "simclr": ("simclr", {"temperature": 0.5}),
    "simclr_dacl": ("simclr_dacl", {"temperature": 0.5, "alpha": 0.9, "dacl_weight": 1.0}),
}
AUGMENTED = ("simclr", "simclr_dacl")
DATA = {"cifar10": "cifar10", "cifar100": "cifar100", "imagenet": "imagenet2012"}

SHARED = {
    "model.head_depth": 3,
    "model.embed_dim": 128,
    "train.log_every_steps": 50,
    "train.checkpoint_every_steps": 1000,
    "eval.linear_optimizer": "lars",
}
CIFAR = {
    "model.resnet_depth": 50,
    "model.width_multiplier": 4,
    "model.resnet_stem": "cifar",
    "model.zero_init_residual": True,  # SimCLR's tf2/resnet.py: init_zero on each block's last BN
    "model.head_width": 8192,  # SimCLR's head: hidden layers as wide as the features (2048 x 4)
    "train.batch_size": 4096,
    "train.epochs": 1000,
    "train.knn_every_epochs": 50,
    "optim.lr": 16.0,
    "optim.warmup_epochs": 10.0,
    "optim.weight_decay": 1e-6,
    "method.color_strength": 0.5,
    "method.blur_p": 0.5,
    "eval.linear_epochs": 200,
    "eval.linear_batch_size": 256,
    "eval.linear_lr": 1.0,
    "data.workers": 8,
}
IMAGENET = {
    **CIFAR,
    "model.resnet_stem": "imagenet",
    "train.epochs": 100,
    "train.knn_every_epochs": 10,
    "optim.lr": 4.8,
    "method.color_strength": 1.0,
    "method.temperature": 0.1,
    "eval.linear_epochs": 90,
    "eval.linear_batch_size": 4096,
    "eval.linear_lr": 1.6,
    "eval.eval_batch_size": 1024,
    "data.image_size": 224,
    "data.workers": 32,
}
CPU = {
    "model.resnet_depth": 18,
    "model.base_width": 8,
    "model.resnet_stem": "cifar",
    "model.head_depth": 2,
    "model.head_width": 256,
    "model.embed_dim": 64,
    "train.batch_size": 256,
    "train.epochs": 3,
    "train.knn_every_epochs": 0,
    "optim.lr": 1.0,
    "optim.warmup_epochs": 0.5,
    "optim.weight_decay": 1e-6,
    "method.color_strength": 0.5,
    "method.blur_p": 0.0,
    "eval.linear_epochs": 100,
    "eval.linear_batch_size": 256,
    "eval.linear_lr": 0.1,
    "eval.knn_max_train": 10000,
    "data.workers": 1,
    **MEASURED_PROBE,  # the probe of these rows' recorded numbers
}


def make(row: str, arg: str | None) -> ml_collections.ConfigDict:
    """The config of one row; ``arg``: ``cifar10`` (default), ``cifar100``, ``imagenet``
    (every row but dacl_plus) or ``cpu``."""
    datasets = ("cifar10", "cifar100") + (("imagenet",) if row != "dacl_plus" else ())
    choice = parse_arg(arg, datasets=datasets, variants=("cpu",))
    method, hp = ROWS[row]
    data = "fashion_mnist_images" if choice.variant == "cpu" else DATA[choice.dataset or "cifar10"]
    c = base_config(data, method, optimizer="lars")
    c.method.update(hp)
    apply_setup(c, SHARED)
    setup = CPU if choice.variant == "cpu" else IMAGENET if data == "imagenet2012" else CIFAR
    apply_setup(c, setup)
    if "linear_augment" in c.eval:
        c.eval.linear_augment = row in AUGMENTED and choice.variant != "cpu"
    return c
