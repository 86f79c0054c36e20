"""GRACE on Cora with ESCo's Table 4 hyperparameters (paper: 83.9, ESCo Table 2, row GRACE).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main --config=experiments/grace/cora.py \
        --workdir=/tmp/grace_cora
    # ESCo-RFF / ESCo-SORF rows: --config=experiments/grace/cora.py:rff (or :sorf)
    # smoke test of the pipeline (minutes): --config=experiments/grace/cora.py:quick

Measured (5 repeats, each with its own initialisation, augmentations and 10/10/80 split;
mean ± std over repeats, numpy's std), 2-core AMD EPYC CPU, no accelerator, jax 0.10.2,
2026-11-21:

- commit e6979f0 (sparse layout on CPU, ``nt_xent`` from the same-view matrices' upper
  blocks, ``train.reuse_host_memory``): 84.07 ± 1.25 (seeds
  84.27, 85.75, 84.41, 84.04, 81.87) against the paper's 83.9; 16 min for all 5 repeats
  alone on the machine (187 s of training each, 0.47 s per epoch);
- commit 460874f (dense layout): 84.06 ± 1.23 (84.23, 85.75, 84.41, 83.99, 81.92); 32 min
  while other jobs shared the cores.

The same model both times; float32 rounding differs. experiments/benchmarks/grace_benchmark.py
times an epoch alone at 0.46 s (0.52 s with ``--host-memory default``, 0.73 s at 460874f).
"""

from jaxcl.configs import grace_node


def get_config(arg: str | None = None):
    return grace_node.make("cora", arg)
