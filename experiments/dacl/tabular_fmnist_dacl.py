"""DACL Table 1, Fashion-MNIST column, row "DACL" (paper: 81.4%).

Paper scale (accelerators), then the 2-CPU-core variant:

    python -m jaxcl.main --config=experiments/dacl/tabular_fmnist_dacl.py --workdir=DIR
    python -m jaxcl.main --config=experiments/dacl/tabular_fmnist_dacl.py:cpu --workdir=DIR

Setup and choices: jaxcl/configs/dacl_tabular.py.

Measured (:cpu, one run, seed 0): linear-probe test top-1 83.1%, kNN top-1 82.1%; wall time
13.4 min (13.0 min training), 2-core AMD EPYC CPU, no accelerator, jax 0.10.2, 2026-11-21.
Rerun after the engine's rework (commit 581d1e1, 2026-11-24): 82.9%, kNN 82.0%; 14.1 min
(other jobs shared the cores part of the time).

Across the five rows (each file holds its own number) the paper's ordering holds:
No-Pretraining < Gaussian-noise < DACL <= DACL+; the supervised row does not fall below DACL
here (see tabular_fmnist_supervised.py for our reading).
"""

from jaxcl.configs.dacl_tabular import make


def get_config(arg=None):
    return make("dacl", arg)
