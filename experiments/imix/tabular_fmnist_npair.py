"""i-Mix on tabular data (Fashion-MNIST proxy), row "N-pair", 5-layer MLP with batch norm.

Full scale (our widths and schedule, for accelerators), then the 2-CPU-core variant:

    python -m jaxcl.main --config=experiments/imix/tabular_fmnist_npair.py --workdir=DIR
    python -m jaxcl.main --config=experiments/imix/tabular_fmnist_npair.py:cpu --workdir=DIR

The i-Mix slides here give the paper's tabular numbers as N-pair 68.5 and
N-pair + i-Mix 72.1, without naming the data set; there is no paper number for this
Fashion-MNIST proxy.

Setup and choices: jaxcl/configs/imix_tabular.py.

Measured (:cpu, one run, seed 0): linear-probe test top-1 74.0%, kNN top-1 79.6%; wall time
9.9 min (9.5 min training), 2-core AMD EPYC CPU, no accelerator, jax 0.10.2, 2026-11-21.
"""

from jaxcl.configs.imix_tabular import make


def get_config(arg=None):
    return make("npair", arg)
