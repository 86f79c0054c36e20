"""DACL Table 2, row "gaussian": linear top-1 in the paper, CIFAR-10 / CIFAR-100:
56.1 / 29.8 (ImageNet, Table 3: 10.2 top-1).

Paper scale (accelerators; a pod for ResNet-50 x4 at batch 4096), then Fashion-MNIST on 2
CPU cores:

    python -m jaxcl.main --config=experiments/dacl/image_gaussian.py:cifar10 --workdir=DIR
    python -m jaxcl.main --config=experiments/dacl/image_gaussian.py:cifar100 --workdir=DIR
    python -m jaxcl.main --config=experiments/dacl/image_gaussian.py:imagenet --workdir=DIR
    python -m jaxcl.main --config=experiments/dacl/image_gaussian.py:cpu --workdir=DIR

Setup and choices: jaxcl/configs/dacl_images.py. CIFAR needs a prepared tfds folder
(`tfds build cifar10 --file_format=array_record`; pass --config.data.data_dir=DIR).

Measured (:cpu, Fashion-MNIST; commit 4248b1f, seeds 0 / 1 / 2; 2-core AMD EPYC Zen 4 CPU,
partly shared with test runs; jax 0.10.2; 2026-11-30): linear top-1 with SimCLR's probe 79.36 /
80.07 / 79.01% (79.5 ± 0.5), with the probe the :cpu rows were measured with (trust ratio,
z-scored; the config's default) 77.83 / 78.50 / 77.12% (77.8 ± 0.7); kNN 73.09 / 73.57 / 72.69%.
Pretraining 6.9 / 6.3 / 6.1 min. All six rows and the paper's order step by step: README,
"Results" (`python experiments/dacl/image_table.py`,
`experiments/dacl/results/image_table_fmnist_cpu.json`).

Not run at paper scale here (no accelerator was lent); the paper-scale configs are checked
on tfds mock data for two steps by tests/test_image_task.py.
"""

from jaxcl.configs.dacl_images import make


def get_config(arg=None):
    return make("gaussian", arg)
