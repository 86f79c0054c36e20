"""MVGRL on Cora (MVGRL Table 2: 86.8 ± 0.5; m-Mix's reproduction 84.1 ± 0.9): TBD.

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main --config=experiments/mvgrl/cora.py \
        --workdir=/tmp/mvgrl_cora
    # smoke test (minutes): --config=experiments/mvgrl/cora.py:quick
"""

from jaxcl.configs import mvgrl_node


def get_config(arg: str | None = None):
    return mvgrl_node.make("cora", arg or None)
