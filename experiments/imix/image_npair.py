"""i-Mix's CIFAR table, row "npair" (see jaxcl/configs/imix_images.py for the setup, where
it follows the official code and where it differs).

    python -m jaxcl.main --config=experiments/imix/image_npair.py:cifar10 --workdir=DIR
    python -m jaxcl.main --config=experiments/imix/image_npair.py:cifar100 --workdir=DIR
    python -m jaxcl.main --config=experiments/imix/image_npair.py:cpu --workdir=DIR

Measured here (`:cpu`: Fashion-MNIST, narrow ResNet-18, 2 epochs; seeds 0, 1, 2 with
``--config.seed``; 2 CPU cores; seeds 0 and 1 at commit 8170739 with Eigen convolutions on
cores shared with other jobs, seed 2 at e9897cf, partly on cores shared with test runs):
linear top-1 79.5 ± 0.4 (per seed 79.7 / 79.7 / 79.0; mean ± sample std), kNN top-1 74.1 ±
0.1; 6.4 / 8.7 / 7.5 min per run. Pretrained again at commit c8dd6e1 (2026-11-30, AMD EPYC
Zen 4, 5.1 / 4.2 / 3.8 min of pretraining, cores partly shared): the same linear numbers
(79.66 / 79.72 / 79.00), kNN 74.0 ± 0.2 with the kNN bank of that day; with SimCLR's probe
(``--config.eval.linear_trust_ratio=False --config.eval.linear_standardize=False``) 81.28 ±
0.51 (81.42 / 81.71 / 80.72); ``experiments/imix/results/image_table_simclr_probe.json``.

6 epochs (``--config.train.epochs=6``, seeds 0, 1 and 2 at commits 662bfed, ba5fecf and 3dfbeff
(the same image code), 2026-11-28, 2 AMD EPYC cores, two runs at a time): linear top-1 80.5 ±
0.2 (80.8 / 80.5 / 80.4), kNN top-1 76.3 ± 0.5 (15-17 min a run);
``experiments/imix/results/image_table_epochs6.{json,png}``, by ``python
experiments/imix/image_table.py --tag _epochs6 --runs ...``.

Paper number (i-Mix's domain table, read from a third-party picture of it; see the setup's
docstring): CIFAR-10 93.3 ± 0.1, CIFAR-100 70.8 ± 0.4. Not run at paper scale here (no
accelerator was lent). The CIFAR-10 config runs on tfds mock data in
tests/test_image_task.py.
"""

from jaxcl.configs.imix_images import make


def get_config(arg=None):
    return make("npair", arg)
