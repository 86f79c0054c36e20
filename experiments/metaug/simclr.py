"""MetAug row ``simclr``: SimCLR (NT-Xent) on the same view-specific encoders
(:mod:`jaxcl.configs.metaug_images`).

    python -m jaxcl.main --config=experiments/metaug/simclr.py:cifar10,fc \
        --workdir=/tmp/metaug_simclr_cifar10_fc
    # backbones: conv, fc (split AlexNet), resnet50 (Table 2); data: cifar10, cifar100, stl10,
    # tiny_imagenet (prepare it first: jaxcl.data.prepare_tiny_imagenet(data_dir, zip))
    # Fashion-MNIST on 2 CPU cores: :cpu; smoke test: :quick

Paper: CIFAR-10 conv 80.58, fc 80.07; CIFAR-100 50.03 / 49.82; STL-10 75.57 / 77.15;
Tiny ImageNet 36.24 / 39.83 (Table 1, SimCLR's row, on its own AlexNet; ResNet-50 Table 2:
CIFAR-10 84.63, STL-10 83.75).
Measured on Fashion-MNIST (one epoch, 937 steps at batch 64; linear probe on the concatenated
representations; seeds 0, 1, 2 with ``--config.seed``; mean ± sample std; 2-core CPU, no
accelerator):

* ``:cpu,fc`` (fc7): 75.7 ± 0.7 (75.0, 76.3, 75.8), kNN 62.5; commit ed9bef5, 2.5-3.4 min per
  seed (cores shared with other jobs).
* ``:cpu,conv`` (conv5): 79.5 ± 0.4 (79.2, 79.3, 79.9), kNN 69.0; commit e9897cf (seeds 0 and 1
  partly on cores shared with test runs), 1.7-2.0 min per seed
  (experiments/metaug/results/fashion_mnist_conv.json).

Pretrained again at commit e87ad16 (2026-11-29, 2 AMD EPYC Zen 3 cores shared with other runs,
3.3-5.8 min per seed): fc 75.5 ± 1.0 (74.48, 76.45, 75.60), conv 79.3 ± 0.7 (78.63, 80.07,
79.29) with the config's probe; with SimCLR's (the runs' final checkpoints evaluated again with
``--config.eval.linear_trust_ratio=False --config.eval.linear_standardize=False``, commit
1e696f2) fc 82.5 ± 0.5 (82.13, 83.14, 82.32), conv 82.3 ± 0.5 (81.90, 82.88, 82.17); without the
trust ratio but z-scored (``--config.eval.linear_trust_ratio=False``, commit 4301297) fc 82.4 ±
0.4 (82.20, 82.87, 82.12), conv 82.4 ± 0.4 (82.08, 82.85, 82.16); kNN fc 62.3, conv 68.8
(experiments/metaug/results/fashion_mnist_probe.json; README, "Linear probe").

Three epochs (``:cpu,conv --config.seed=0 --config.train.epochs=3``, SimCLR's probe, commit
5764951, 7.3 min on shared cores): 83.03 (one epoch: 81.90), kNN 67.6; MetAug's row 80.65
(experiments/metaug/results/fashion_mnist_conv_epochs3.json).

Not run at paper scale (CIFAR, STL-10, Tiny ImageNet are not available here); its configs
validate in tests/test_metaug.py (its views and encoders are the other rows', which run on tfds
mock data there).
"""

from jaxcl.configs import metaug_images


def get_config(arg: str | None = None):
    return metaug_images.make("simclr", arg)
