"""DACL Table 2, row "simclr": linear top-1 in the paper, CIFAR-10 / CIFAR-100:
93.4 / 73.8 (ImageNet, Table 3: 73.4 top-1).

Paper scale (accelerators; a pod for ResNet-50 x4 at batch 4096), then Fashion-MNIST on 2
CPU cores:

    python -m jaxcl.main --config=experiments/dacl/image_simclr.py:cifar10 --workdir=DIR
    python -m jaxcl.main --config=experiments/dacl/image_simclr.py:cifar100 --workdir=DIR
    python -m jaxcl.main --config=experiments/dacl/image_simclr.py:imagenet --workdir=DIR
    python -m jaxcl.main --config=experiments/dacl/image_simclr.py:cpu --workdir=DIR

Setup and choices: jaxcl/configs/dacl_images.py. CIFAR needs a prepared tfds folder
(`tfds build cifar10 --file_format=array_record`; pass --config.data.data_dir=DIR).

Measured (:cpu, Fashion-MNIST): seed 0 (commit 5e497eb) linear top-1 78.7%, kNN 73.6%; seed
1 (commit 5a4ccc1) 79.4%, kNN 72.6%; mean ± std 79.1 ± 0.5. Wall time of seed 1 8.0 min on
quiet cores (seed 0 shared them with test runs), 2-core AMD EPYC CPU, no accelerator, jax
0.10.2, 2026-11-24. Across the four :cpu rows (No-Pretraining 74.0, DACL 78.0, SimCLR 79.1,
SimCLR+DACL 80.0, two seeds) the paper's ordering holds in both seeds; gaps of about one
point with two seeds are a first look, not a confirmation.

Not run at paper scale here (no accelerator was lent); the paper-scale configs are checked
on tfds mock data for two steps by tests/test_image_task.py.
"""

from jaxcl.configs.dacl_images import make


def get_config(arg=None):
    return make("simclr", arg)
