"""m-Mix node row ``binary``: MVGRL + binary (m-Mix Tables 1, 3, 5; :mod:`jaxcl.configs.mmix_node`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/node_binary.py:cora --workdir=/tmp/mmix_binary_cora
    # Citeseer: :citeseer; all nodes as partners (m-mix-op): :cora,op; smoke test: :cora,quick

Measured: not yet.
"""

from jaxcl.configs import mmix_node


def get_config(arg: str | None = None):
    return mmix_node.make("binary", arg)
