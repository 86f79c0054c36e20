"""MetAug row ``metaug``: MetAug (:mod:`jaxcl.configs.metaug_images`).

    python -m jaxcl.main --config=experiments/metaug/metaug.py:cifar10,fc \
        --workdir=/tmp/metaug_metaug_cifar10_fc
    # backbones: conv, fc (split AlexNet), resnet50 (Table 2); data: cifar10, cifar100, stl10,
    # tiny_imagenet (prepare it first: jaxcl.data.prepare_tiny_imagenet(data_dir, zip))
    # Fashion-MNIST on 2 CPU cores: :cpu; smoke test: :quick

Paper: CIFAR-10 conv 87.87, fc 88.12; CIFAR-100 59.97 / 61.06; STL-10 85.41 / 85.62;
Tiny ImageNet 44.51 / 45.36 (Table 1); ResNet-50 (Table 2): CIFAR-10 91.09, STL-10 90.26.
Measured on Fashion-MNIST (one epoch, 937 steps at batch 64; linear probe on the concatenated
representations; seeds 0, 1, 2 with ``--config.seed``; mean ± sample std; 2-core CPU, no
accelerator):

* ``:cpu,fc`` (fc7): 73.8 ± 1.4 (73.50, 72.59, 75.37), kNN 61.3; ``:cpu,conv`` (conv5):
  78.4 ± 0.6 (77.73, 78.79, 78.63), kNN 67.4. Commit 11415b3 (the generators' step from the
  encoders' updated weights, Algorithm 1's order), 2026-11-29, 2 AMD EPYC Zen 3 cores, one
  run at a time, 4.2-5.1 min of pretraining per seed
  (experiments/metaug/results/fashion_mnist_metaug_algorithm1.json).
* With SimCLR's probe (each of these runs' final checkpoints evaluated again with
  ``--config.eval.linear_trust_ratio=False --config.eval.linear_standardize=False``, commit
  1e696f2): fc 80.5 ± 0.2 (80.48, 80.38, 80.74), conv 81.3 ± 0.3 (81.01, 81.69, 81.34); without
  the trust ratio but z-scored (``--config.eval.linear_trust_ratio=False``, commit 4301297): fc
  80.6 ± 0.3 (80.21, 80.83, 80.73), conv 81.5 ± 0.4 (81.12, 81.84, 81.59)
  (experiments/metaug/results/fashion_mnist_probe.json; README, "Linear probe").
* In the earlier order (the generators' step from the weights before the encoders' update):
  fc 74.0 ± 1.7 (72.5, 73.6, 75.8), kNN 61.9, commit ed9bef5; conv 78.1 ± 0.7 (77.5, 78.0,
  78.9), kNN 66.7, commit e9897cf (experiments/metaug/results/fashion_mnist_conv.json).
* Three epochs (``:cpu,conv --config.seed=0 --config.train.epochs=3``, SimCLR's probe, commit
  5764951, 23 min on shared cores): 80.65 (one epoch: 81.01), kNN 62.7; SimCLR's row 83.03
  (experiments/metaug/results/fashion_mnist_conv_epochs3.json).

Not run at paper scale (CIFAR, STL-10, Tiny ImageNet are not available here); its CIFAR-10 conv
and STL-10 fc configs run two steps on tfds mock data in tests/test_metaug.py.
"""

from jaxcl.configs import metaug_images


def get_config(arg: str | None = None):
    return metaug_images.make("metaug", arg)
