"""MetAug row ``oucl``: MetAug (only OUCL): no generators (:mod:`jaxcl.configs.metaug_images`).

    python -m jaxcl.main --config=experiments/metaug/oucl.py:cifar10,fc \
        --workdir=/tmp/metaug_oucl_cifar10_fc
    # backbones: conv, fc (split AlexNet), resnet50 (Table 2); data: cifar10, cifar100, stl10,
    # tiny_imagenet (prepare it first: jaxcl.data.prepare_tiny_imagenet(data_dir, zip))
    # Fashion-MNIST on 2 CPU cores: :cpu; smoke test: :quick

Paper: CIFAR-10 conv 85.98, fc 87.13; CIFAR-100 59.21 / 58.73; STL-10 84.09 / 84.72;
Tiny ImageNet 42.02 / 42.14 (Table 1); ResNet-50 (Table 2): CIFAR-10 88.79, STL-10 88.31.
Measured on Fashion-MNIST (one epoch, 937 steps at batch 64; linear probe on the concatenated
representations; seeds 0, 1, 2 with ``--config.seed``; mean ± sample std; 2-core CPU, no
accelerator):

* ``:cpu,fc`` (fc7): 73.9 ± 1.4 (72.8, 75.5, 73.3), kNN 62.2; commit ed9bef5, 2.4-3.3 min per
  seed (cores shared with other jobs).
* ``:cpu,conv`` (conv5): 78.1 ± 0.4 (77.7, 78.3, 78.4), kNN 66.8; commit e9897cf (seeds 0 and 1
  partly on cores shared with test runs), 1.8-2.8 min per seed
  (experiments/metaug/results/fashion_mnist_conv.json).
* Pretrained again at commit d33fcc3 (which did not land; MetAug's code is 5e778bb's; 2026-11-30,
  AMD EPYC Zen 4, 1.4-2.3 min of pretraining, cores shared): the records above to the digit (conv
  77.73 / 78.30 / 78.39, fc 72.81 / 75.46 / 73.34); with SimCLR's probe
  (``--config.eval.linear_trust_ratio=False --config.eval.linear_standardize=False``) conv 81.42 ±
  0.49, fc 80.59 ± 1.00 (experiments/metaug/results/fashion_mnist_oucl_no_margin_probe.json).

Not run at paper scale (CIFAR, STL-10, Tiny ImageNet are not available here); its ResNet-50
config runs two steps on tfds mock CIFAR-10 in tests/test_metaug.py, its Tiny ImageNet fc config
on a small archive in the official layout in tests/test_tiny_imagenet.py.
"""

from jaxcl.configs import metaug_images


def get_config(arg: str | None = None):
    return metaug_images.make("oucl", arg)
