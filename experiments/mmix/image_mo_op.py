"""m-Mix image row ``mo_op`` (m-Mix Table 3: CIFAR-10 90.09, CIFAR-100 62.86).

    python -m jaxcl.main --config=experiments/mmix/image_mo_op.py:cifar10 \
        --workdir=/tmp/mmix_image_mo_op_cifar10
    # CIFAR-100: :cifar100; Fashion-MNIST on 2 CPU cores: :cpu

Setup: :mod:`jaxcl.configs.mmix_images`. Measured: CIFAR not yet (not available here; the
config runs on tfds mock data in tests/test_image_task.py). ``:cpu`` (Fashion-MNIST, seeds
0-2, 2-core CPU shared with other jobs, 8-16 min a run, commits ab7840e / a32ebe8):
linear top-1 76.2 ± 1.2 (75.5 / 75.4 / 77.6), kNN 71.7 ± 0.7;
see experiments/mmix/results/image_cpu.json and the README. Measured when the raw head
outputs were mixed (the l2-normalised ones since 2026-11-29); not rerun yet.
"""

from jaxcl.configs import mmix_images


def get_config(arg: str | None = None):
    return mmix_images.make("mo_op", arg)
