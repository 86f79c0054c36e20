"""m-Mix image row ``binary`` (m-Mix Table 3: CIFAR-10 89.47, CIFAR-100 61.82).

    python -m jaxcl.main --config=experiments/mmix/image_binary.py:cifar10 \
        --workdir=/tmp/mmix_image_binary_cifar10
    # CIFAR-100: :cifar100; Fashion-MNIST on 2 CPU cores: :cpu

Setup: :mod:`jaxcl.configs.mmix_images`. Measured: CIFAR not yet (not available here; the
config runs on tfds mock data in tests/test_image_task.py). ``:cpu`` (Fashion-MNIST, seeds
0-2, 2-core CPU shared with other jobs, 12-15 min a run, commits ab7840e / a32ebe8):
linear top-1 76.1 ± 0.4 (76.0 / 75.8 / 76.5), kNN 71.6 ± 0.2;
see experiments/mmix/results/image_cpu.json and the README. Measured when the raw head
outputs were mixed (the l2-normalised ones since 2026-11-29); not rerun yet.
"""

from jaxcl.configs import mmix_images


def get_config(arg: str | None = None):
    return mmix_images.make("binary", arg)
