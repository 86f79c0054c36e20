"""GRACE on Citeseer with ESCo's Table 4 hyperparameters (paper: 71.3, ESCo Table 2, row GRACE).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main --config=experiments/grace/citeseer.py \
        --workdir=/tmp/grace_citeseer
    # ESCo-RFF / ESCo-SORF rows: --config=experiments/grace/citeseer.py:rff (or :sorf)
    # smoke test of the pipeline (minutes): --config=experiments/grace/citeseer.py:quick

Measured (5 repeats, seeds 0-4, each with its own random 10/10/80 split; test accuracy of
the logistic regression at its best validation accuracy): 71.18 ± 0.57 (runs 71.69, 70.26,
70.86, 71.84, 71.24); 16.1 min for all 5 (190 s of training each), 2-core AMD EPYC CPU, no
accelerator, jax 0.10.2, 2026-11-21, at commit 8264810 (before ``nt_xent`` shared the
similarities of its two directions: same values to ~1e-6, a faster epoch, single seeds may
move; not rerun since).
"""

from jaxcl.configs import grace_node


def get_config(arg: str | None = None):
    arg = arg or ""
    loss = arg if arg in ("rff", "sorf") else "nt_xent"
    variant = None if arg in ("", "rff", "sorf") else arg
    return grace_node.make("citeseer", variant, loss=loss)
