"""ESCo image row ``simclr``: SimCLR, the baseline of ESCo Fig. 6.

ESCo reports its image results only as bars (Fig. 6: CIFAR-10, CIFAR-100, STL-10 against
SimCLR's dotted line, no table), so there is no number to copy here.

    python -m jaxcl.main --config=experiments/esco/image_simclr.py:cifar10 \
        --workdir=/tmp/esco_image_simclr_cifar10
    # CIFAR-100: :cifar100; STL-10: :stl10; Fashion-MNIST on 2 CPU cores: :cpu

Setup: :mod:`jaxcl.configs.esco_images`. Measured: not yet.
"""

from jaxcl.configs import esco_images


def get_config(arg: str | None = None):
    return esco_images.make("simclr", arg)
