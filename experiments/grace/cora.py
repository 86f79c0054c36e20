"""GRACE on Cora with ESCo's Table 4 hyperparameters (paper: 83.9, ESCo Table 2, row GRACE).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main --config=experiments/grace/cora.py \
        --workdir=/tmp/grace_cora
    # ESCo-RFF / ESCo-SORF rows: --config=experiments/grace/cora.py:rff (or :sorf)
    # smoke test of the pipeline (minutes): --config=experiments/grace/cora.py:quick

Measured: not yet with this file (5 repeats x 400 full-graph epochs; an epoch takes 1.0 s on
2 CPU cores, experiments/benchmarks/grace_benchmark.py, so about 40 minutes in all).
"""

from jaxcl.configs import grace_node


def get_config(arg: str | None = None):
    arg = arg or ""
    loss = arg if arg in ("rff", "sorf") else "nt_xent"
    variant = None if arg in ("", "rff", "sorf") else arg
    return grace_node.make("cora", variant, loss=loss)
