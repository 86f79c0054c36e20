"""m-Mix image row ``mo_op`` (m-Mix Table 3: CIFAR-10 90.09, CIFAR-100 62.86).

    python -m jaxcl.main --config=experiments/mmix/image_mo_op.py:cifar10 \
        --workdir=/tmp/mmix_image_mo_op_cifar10
    # CIFAR-100: :cifar100; Fashion-MNIST on 2 CPU cores: :cpu

Setup: :mod:`jaxcl.configs.mmix_images`. Measured: not yet (CIFAR is not available here;
the config runs on tfds mock data in tests/test_image_task.py).
"""

from jaxcl.configs import mmix_images


def get_config(arg: str | None = None):
    return mmix_images.make("mo_op", arg)
