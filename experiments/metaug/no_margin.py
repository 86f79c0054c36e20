"""MetAug row ``no_margin``: MetAug without R_sigma (alpha = 0)
(:mod:`jaxcl.configs.metaug_images`).

    python -m jaxcl.main --config=experiments/metaug/no_margin.py:cifar10,fc \
        --workdir=/tmp/metaug_no_margin_cifar10_fc
    # backbones: conv, fc (split AlexNet), resnet50 (Table 2); data: cifar10, cifar100, stl10,
    # tiny_imagenet (prepare it first: jaxcl.data.prepare_tiny_imagenet(data_dir, zip))
    # Fashion-MNIST on 2 CPU cores: :cpu; smoke test: :quick

Paper: not in the paper's tables (App. A.2's 'None' margin on CIFAR-100 fc: 60.40 with OUCL).
Measured on Fashion-MNIST (``:cpu``: one epoch, 937 steps at batch 64; linear probe on the
concatenated fc7 representations; seeds 0, 1, 2): 74.3 ± 0.8 (74.5, 73.1, 75.1), kNN 62.7.
Commit ed9bef5, 2-core CPU, 3.6-6.3 min per seed (cores shared with other jobs). Not run at
paper scale (CIFAR, STL-10, Tiny ImageNet are not available here; the CIFAR-10 conv config runs on
mock data in tests/test_metaug.py, the Tiny ImageNet fc one of the only-OUCL row on a small archive
in its layout in tests/test_tiny_imagenet.py).
"""

from jaxcl.configs import metaug_images


def get_config(arg: str | None = None):
    return metaug_images.make("no_margin", arg)
