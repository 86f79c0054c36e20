"""MetAug row ``oucl``: MetAug (only OUCL): no generators (:mod:`jaxcl.configs.metaug_images`).

    python -m jaxcl.main --config=experiments/metaug/oucl.py:cifar10,fc \
        --workdir=/tmp/metaug_oucl_cifar10_fc
    # backbones: conv, fc (split AlexNet), resnet50 (Table 2); data: cifar10, cifar100, stl10
    # Fashion-MNIST on 2 CPU cores: :cpu; smoke test: :quick

Paper: CIFAR-10 conv 85.98, fc 87.13; CIFAR-100 59.21 / 58.73; STL-10 84.09 / 84.72 (Table 1);
ResNet-50 (Table 2): CIFAR-10 88.79, STL-10 88.31.
Measured (Fashion-MNIST, :cpu): running at commit time; see the README's MetAug results.
"""

from jaxcl.configs import metaug_images


def get_config(arg: str | None = None):
    return metaug_images.make("oucl", arg)
