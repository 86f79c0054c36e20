"""m-Mix node row ``mp_nodiv``: MVGRL + mp-mix without L_div (m-Mix Tables 1, 5, 9).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/node_mp_nodiv.py:cora --workdir=/tmp/mmix_mp_nodiv_cora
    # Citeseer: :citeseer; all nodes as partners (m-mix-op): :cora,op; smoke test: :cora,quick

Measured: not yet.
"""

from jaxcl.configs import mmix_node


def get_config(arg: str | None = None):
    return mmix_node.make("mp_nodiv", arg)
