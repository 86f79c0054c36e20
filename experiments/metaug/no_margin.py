"""MetAug row ``no_margin``: MetAug without R_sigma (alpha = 0)
(:mod:`jaxcl.configs.metaug_images`).

    python -m jaxcl.main --config=experiments/metaug/no_margin.py:cifar10,fc \
        --workdir=/tmp/metaug_no_margin_cifar10_fc
    # backbones: conv, fc (split AlexNet), resnet50 (Table 2); data: cifar10, cifar100, stl10,
    # tiny_imagenet (prepare it first: jaxcl.data.prepare_tiny_imagenet(data_dir, zip))
    # Fashion-MNIST on 2 CPU cores: :cpu; smoke test: :quick

Paper: not in the paper's tables (App. A.2's 'None' margin on CIFAR-100 fc: 60.40 with OUCL).
Measured on Fashion-MNIST (one epoch, 937 steps at batch 64; linear probe on the concatenated
representations; seeds 0, 1, 2 with ``--config.seed``; mean ± sample std; 2-core CPU, no
accelerator; in the step's earlier order, the generators' step from the encoders' weights
before their update (Algorithm 1's order since 11415b3; its conv cut rerun below):

* ``:cpu,fc`` (fc7): 74.2 ± 1.0 (74.5, 73.1, 75.1), kNN 62.7; commit ed9bef5, 3.6-6.3 min per
  seed (cores shared with other jobs).
* ``:cpu,conv`` (conv5): 78.6 ± 0.8 (79.0, 77.7, 79.2), kNN 67.8; commit e9897cf (seeds 0 and 1
  partly on cores shared with test runs), 3.4-4.9 min per seed
  (experiments/metaug/results/fashion_mnist_conv.json).
* ``:cpu,conv`` again in Algorithm 1's order (commit d33fcc3, which did not land: 5e778bb's MetAug
  code; 2026-11-30, AMD EPYC Zen 4, 7.9-9.5 min of pretraining, cores shared): 78.3 ± 1.2 (77.94 /
  79.55 / 77.28), kNN 66.9; with SimCLR's probe (``--config.eval.linear_trust_ratio=False
  --config.eval.linear_standardize=False``) 81.35 ± 0.69
  (experiments/metaug/results/fashion_mnist_oucl_no_margin_probe.json).
* ``:cpu,fc`` in Algorithm 1's order (commit 623e191, 2026-12-01, AMD EPYC Zen 3, 11.5-12.3 min of
  pretraining, cores shared with test runs): 72.9 ± 0.6 (72.22 / 73.20 / 73.41), kNN 61.7; with
  SimCLR's probe 79.85 ± 0.40 (79.39 / 80.05 / 80.10): below MetAug's fc row (80.53) and SimCLR's
  (82.53) in every seed (same record).

Not run at paper scale (CIFAR, STL-10, Tiny ImageNet are not available here); MetAug's step with
alpha = 0; MetAug's CIFAR-10 conv and STL-10 fc configs run two steps on tfds mock data in
tests/test_metaug.py.
"""

from jaxcl.configs import metaug_images


def get_config(arg: str | None = None):
    return metaug_images.make("no_margin", arg)
