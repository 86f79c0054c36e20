"""GRACE on Citeseer (ESCo Table 2, row GRACE): TBD.

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main --config=experiments/grace/citeseer.py \
        --workdir=/tmp/grace_citeseer
    # ESCo-RFF / ESCo-SORF rows: --config=experiments/grace/citeseer.py:rff (or :sorf)
    # smoke test of the pipeline (minutes): --config=experiments/grace/citeseer.py:quick
"""

from jaxcl.configs import grace_node


def get_config(arg: str | None = None):
    arg = arg or ""
    loss = arg if arg in ("rff", "sorf") else "nt_xent"
    variant = None if arg in ("", "rff", "sorf") else arg
    return grace_node.make("citeseer", variant, loss=loss)
