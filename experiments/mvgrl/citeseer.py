"""MVGRL on Citeseer (MVGRL Table 2: 73.3 ± 0.5; m-Mix's reproduction 73.5 ± 0.6).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main --config=experiments/mvgrl/citeseer.py \
        --workdir=/tmp/mvgrl_citeseer
    # smoke test (minutes): --config=experiments/mvgrl/citeseer.py:quick

Measured: not yet.
"""

from jaxcl.configs import mvgrl_node


def get_config(arg: str | None = None):
    return mvgrl_node.make("citeseer", arg)
