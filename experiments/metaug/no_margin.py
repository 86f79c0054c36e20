"""MetAug row ``no_margin``: MetAug without R_sigma (alpha = 0)
(:mod:`jaxcl.configs.metaug_images`).

    python -m jaxcl.main --config=experiments/metaug/no_margin.py:cifar10,fc \
        --workdir=/tmp/metaug_no_margin_cifar10_fc
    # backbones: conv, fc (split AlexNet), resnet50 (Table 2); data: cifar10, cifar100, stl10
    # Fashion-MNIST on 2 CPU cores: :cpu; smoke test: :quick

Paper: not in the paper's tables (App. A.2's 'None' margin on CIFAR-100 fc: 60.40 with OUCL).
Measured (Fashion-MNIST, :cpu): running at commit time; see the README's MetAug results.
"""

from jaxcl.configs import metaug_images


def get_config(arg: str | None = None):
    return metaug_images.make("no_margin", arg)
