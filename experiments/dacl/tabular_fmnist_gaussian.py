"""DACL Table 1, Fashion-MNIST column, row "Gaussian-noise" (paper: 75.8%).

Paper scale (accelerators), then the 2-CPU-core variant:

    python -m jaxcl.main --config=experiments/dacl/tabular_fmnist_gaussian.py --workdir=DIR
    python -m jaxcl.main --config=experiments/dacl/tabular_fmnist_gaussian.py:cpu --workdir=DIR

Setup and choices: jaxcl/configs/dacl_tabular.py.

Measured (:cpu, one run, seed 0): linear-probe test top-1 81.0%, kNN top-1 80.0%; wall time
12.8 min (12.4 min training), 2-core AMD EPYC CPU, no accelerator, jax 0.10.2, 2026-11-21.

Why 81.0% here against the paper's 75.8%: we add the noise to standardised pixels with
sigma 0.3 (the paper searched 0.05 to 0.5 without naming the scale); the gap to DACL is 2.1
points here against 5.6 in the paper (single runs).
"""

from jaxcl.configs.dacl_tabular import make


def get_config(arg=None):
    return make("gaussian", arg)
