"""m-Mix image row ``binary`` (m-Mix Table 3: CIFAR-10 89.47, CIFAR-100 61.82).

    python -m jaxcl.main --config=experiments/mmix/image_binary.py:cifar10 \
        --workdir=/tmp/mmix_image_binary_cifar10
    # CIFAR-100: :cifar100; Fashion-MNIST on 2 CPU cores: :cpu

Setup: :mod:`jaxcl.configs.mmix_images`. Measured: CIFAR not yet (not available here; the config
runs on tfds mock data in tests/test_image_task.py). ``:cpu`` (Fashion-MNIST, seeds 0-2 with
``--config.seed``; commit e87ad16, 2026-11-29, 2 AMD EPYC Zen 3 cores shared by two or three
runs, 19-23 min a run): linear top-1 76.0 ± 0.8 (76.17 / 75.11 / 76.76) with the config's probe
(LARS with the trust ratio on the classifier, features z-scored); 77.7 ± 0.9 (77.13 / 77.28 /
78.80) when each run's final checkpoint is evaluated again with
``--config.eval.linear_trust_ratio=False`` (features still z-scored, commit 4301297); 77.6 ± 0.9
(77.00 / 77.13 / 78.63) with SimCLR's probe (``--config.eval.linear_trust_ratio=False
--config.eval.linear_standardize=False``, commit 1e696f2); kNN 71.3 ± 0.1. See
experiments/mmix/results/image_cpu.json (``rerun_normalised_mixing``) and the README.
Earlier, when the raw head outputs were mixed (before 4faf2b8; commits ab7840e / a32ebe8): 76.1
± 0.4 (76.0 / 75.8 / 76.5) with the config's probe.
"""

from jaxcl.configs import mmix_images


def get_config(arg: str | None = None):
    return mmix_images.make("binary", arg)
