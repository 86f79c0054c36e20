"""MetAug row ``metaug``: MetAug (:mod:`jaxcl.configs.metaug_images`).

    python -m jaxcl.main --config=experiments/metaug/metaug.py:cifar10,fc \
        --workdir=/tmp/metaug_metaug_cifar10_fc
    # backbones: conv, fc (split AlexNet), resnet50 (Table 2); data: cifar10, cifar100, stl10,
    # tiny_imagenet (prepare it first: jaxcl.data.prepare_tiny_imagenet(data_dir, zip))
    # Fashion-MNIST on 2 CPU cores: :cpu; smoke test: :quick

Paper: CIFAR-10 conv 87.87, fc 88.12; CIFAR-100 59.97 / 61.06; STL-10 85.41 / 85.62;
Tiny ImageNet 44.51 / 45.36 (Table 1); ResNet-50 (Table 2): CIFAR-10 91.09, STL-10 90.26.
Measured on Fashion-MNIST (``:cpu``: one epoch, 937 steps at batch 64; linear probe on the
concatenated fc7 representations; seeds 0, 1, 2): 74.0 ± 1.3 (72.5, 73.6, 75.8), kNN 61.9.
Commit ed9bef5, 2-core CPU, 3.6-6.9 min per seed (cores shared with other jobs). Not run at
paper scale (CIFAR, STL-10, Tiny ImageNet are not available here; the CIFAR-10 conv config runs on
mock data in tests/test_metaug.py, the Tiny ImageNet fc one of the only-OUCL row on a small archive
in its layout in tests/test_tiny_imagenet.py).
"""

from jaxcl.configs import metaug_images


def get_config(arg: str | None = None):
    return metaug_images.make("metaug", arg)
