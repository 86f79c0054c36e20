"""ESCo image row ``rff``: SimCLR with ESCo-RFF's loss (ESCo Fig. 6).

ESCo reports its image results only as bars (Fig. 6: CIFAR-10, CIFAR-100, STL-10 against
SimCLR's dotted line, no table), so there is no number to copy here.

    python -m jaxcl.main --config=experiments/esco/image_rff.py:cifar10 \
        --workdir=/tmp/esco_image_rff_cifar10
    # CIFAR-100: :cifar100; STL-10: :stl10; Fashion-MNIST on 2 CPU cores: :cpu

Setup: :mod:`jaxcl.configs.esco_images`. Measured (``:cpu``, Fashion-MNIST, seeds 0 and 1,
commit b1f6f6f, 2-core AMD EPYC CPU, no accelerator, jax 0.10.2, 2026-11-25): linear top-1
74.67 ± 0.55 (75.22, 74.13), kNN 70.19 ± 0.51; wall time 567 / 425 s per seed
(seed 0's on cores partly shared with another run). All three :cpu rows (SimCLR 75.85,
ESCo-RFF 74.67, ESCo-SORF 75.62) lie within about two seed spreads of each other. Seed 2 was
not run. CIFAR and STL-10 are configured at paper scale but not available here; STL-10 runs
on tfds mock data in tests/test_image_task.py.
"""

from jaxcl.configs import esco_images


def get_config(arg: str | None = None):
    return esco_images.make("rff", arg)
