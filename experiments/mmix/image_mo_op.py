"""m-Mix image row ``mo_op`` (m-Mix Table 3: CIFAR-10 90.09, CIFAR-100 62.86).

    python -m jaxcl.main --config=experiments/mmix/image_mo_op.py:cifar10 \
        --workdir=/tmp/mmix_image_mo_op_cifar10
    # CIFAR-100: :cifar100; Fashion-MNIST on 2 CPU cores: :cpu

Setup: :mod:`jaxcl.configs.mmix_images`. Measured: CIFAR not yet (not available here; the config
runs on tfds mock data in tests/test_image_task.py). ``:cpu`` (Fashion-MNIST, seeds 0-2 with
``--config.seed``; commit e87ad16, 2026-11-29, 2 AMD EPYC Zen 3 cores shared by two or three
runs, 20-23 min a run): linear top-1 76.4 ± 1.0 (76.18 / 75.43 / 77.45) with the config's probe
(LARS with the trust ratio on the classifier, features z-scored); 78.2 ± 0.8 (77.58 / 77.81 /
79.10) when each run's final checkpoint is evaluated again with
``--config.eval.linear_trust_ratio=False`` (features still z-scored, commit 4301297); 78.1 ± 0.8
(77.55 / 77.69 / 79.03) with SimCLR's probe (``--config.eval.linear_trust_ratio=False
--config.eval.linear_standardize=False``, commit 1e696f2); kNN 71.9 ± 0.7. See
experiments/mmix/results/image_cpu.json (``rerun_normalised_mixing``) and the README.
Earlier, when the raw head outputs were mixed (before 4faf2b8; commits ab7840e / a32ebe8): 76.2
± 1.2 (75.5 / 75.4 / 77.6) with the config's probe.
"""

from jaxcl.configs import mmix_images


def get_config(arg: str | None = None):
    return mmix_images.make("mo_op", arg)
