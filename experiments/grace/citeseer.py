"""GRACE on Citeseer with ESCo's Table 4 hyperparameters (paper: 71.3, ESCo Table 2, row GRACE).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main --config=experiments/grace/citeseer.py \
        --workdir=/tmp/grace_citeseer
    # ESCo-RFF / ESCo-SORF rows: --config=experiments/grace/citeseer.py:rff (or :sorf)
    # smoke test of the pipeline (minutes): --config=experiments/grace/citeseer.py:quick

Measured (5 repeats, seeds 0-4, each with its own random 10/10/80 split; test accuracy of
the logistic regression at its best validation accuracy), 2-core AMD EPYC CPU, no
accelerator, jax 0.10.2, 2026-11-21:

- commit 0cd3fe6 (sparse layout on CPU, ``nt_xent`` from the same-view matrices' upper
  blocks, ``train.reuse_host_memory``): 71.37 ± 0.62 (runs 71.84, 70.26, 71.50, 72.02,
  71.24) against the paper's 71.3; 5.2 min for all 5 alone on the machine (59 s of
  training each);
- rerun after the engine's rework (commit 581d1e1, 2026-11-24): the same five runs to
  the last digit, 5.4 min;
- commit 8264810: 71.18 ± 0.57 (71.69, 70.26, 70.86, 71.84, 71.24); 16.1 min (190 s of
  training each).

The same model both times; float32 rounding differs.
"""

from jaxcl.configs import grace_node


def get_config(arg: str | None = None):
    return grace_node.make("citeseer", arg)
