"""m-Mix image row ``simclr`` (m-Mix Table 3: CIFAR-10 89.21, CIFAR-100 61.53).

    python -m jaxcl.main --config=experiments/mmix/image_simclr.py:cifar10 \
        --workdir=/tmp/mmix_image_simclr_cifar10
    # CIFAR-100: :cifar100; Fashion-MNIST on 2 CPU cores: :cpu

Setup: :mod:`jaxcl.configs.mmix_images`. Measured: not yet (CIFAR is not available here;
the config runs on tfds mock data in tests/test_image_task.py).
"""

from jaxcl.configs import mmix_images


def get_config(arg: str | None = None):
    return mmix_images.make("simclr", arg)
