"""i-Mix's CIFAR table, row "moco" (see jaxcl/configs/imix_images.py for the setup, where
it follows the official code and where it differs).

    python -m jaxcl.main --config=experiments/imix/image_moco.py:cifar10 --workdir=DIR
    python -m jaxcl.main --config=experiments/imix/image_moco.py:cifar100 --workdir=DIR
    python -m jaxcl.main --config=experiments/imix/image_moco.py:cpu --workdir=DIR

Measured here (`:cpu`: Fashion-MNIST, narrow ResNet-18, 2 epochs; seeds 0 and 1;
commit 8170739, Eigen convolutions, 2 CPU cores shared with other jobs):
linear top-1 78.1 ± 0.7 (per seed 77.6 / 78.5), kNN top-1 72.9 ± 0.5;
8.4 / 6.2 min per run.

Paper number: not quoted (no copy of i-Mix's Table 1 was reachable here; see the setup's
docstring). Not run at paper scale here (no accelerator was lent). The CIFAR-10 config runs
on tfds mock data in tests/test_image_task.py.
"""

from jaxcl.configs.imix_images import make


def get_config(arg=None):
    return make("moco", arg)
