"""DACL Table 1, Fashion-MNIST column, row "Full network supervised training" (paper: 79.1%).

Paper scale (accelerators), then the 2-CPU-core variant:

    python -m jaxcl.main --config=experiments/dacl/tabular_fmnist_supervised.py --workdir=DIR
    python -m jaxcl.main --config=experiments/dacl/tabular_fmnist_supervised.py:cpu --workdir=DIR

Setup and choices: jaxcl/configs/dacl_tabular.py.

Measured (:cpu, one run, seed 0): classifier test top-1 89.2%; wall time
4.5 min (4.4 min training), 2-core AMD EPYC CPU, no accelerator, jax 0.10.2, 2026-11-21.

Why 89% here against the paper's 79.1%: 89% is what a deep MLP with batch norm usually
reaches on Fashion-MNIST. The paper's 79.1% after 1000 epochs of a 12 x 1024 network may
reflect over-fitting (it describes no regularisation or early stopping for this row), which
80 epochs of a narrower network avoid; we have not run the paper-scale row to check. The
paper's claim that DACL's linear probe beats full supervised training does not reproduce
here (single runs, so a point or so is noise).
"""

from jaxcl.configs.dacl_tabular import make


def get_config(arg=None):
    return make("supervised", arg)
