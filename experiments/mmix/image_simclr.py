"""m-Mix image row ``simclr`` (m-Mix Table 3: CIFAR-10 89.21, CIFAR-100 61.53).

    python -m jaxcl.main --config=experiments/mmix/image_simclr.py:cifar10 \
        --workdir=/tmp/mmix_image_simclr_cifar10
    # CIFAR-100: :cifar100; Fashion-MNIST on 2 CPU cores: :cpu

Setup: :mod:`jaxcl.configs.mmix_images`. Measured: CIFAR not yet (not available here; the config
runs on tfds mock data in tests/test_image_task.py). ``:cpu`` (Fashion-MNIST, seeds 0-2 with
``--config.seed``; commit e87ad16, 2026-11-29, 2 AMD EPYC Zen 3 cores shared by two or three
runs, 14-24 min a run): linear top-1 76.9 ± 0.8 (76.87 / 76.13 / 77.80) with the config's probe
(LARS with the trust ratio on the classifier, features z-scored); 78.6 ± 1.0 (78.83 / 77.52 /
79.53) when each run's final checkpoint is evaluated again with
``--config.eval.linear_trust_ratio=False`` (features still z-scored, commit 4301297); 78.5 ± 0.9
(78.81 / 77.44 / 79.16) with SimCLR's probe (``--config.eval.linear_trust_ratio=False
--config.eval.linear_standardize=False``, commit 1e696f2); kNN 72.3 ± 0.7. See
experiments/mmix/results/image_cpu.json (``rerun_normalised_mixing``) and the README.
Earlier (commits ab7840e / a32ebe8, the same code path): 76.6 ± 1.0 (76.4 / 75.7 / 77.6) with
the config's probe; the rerun differs by up to 0.5 per seed.
"""

from jaxcl.configs import mmix_images


def get_config(arg: str | None = None):
    return mmix_images.make("simclr", arg)
