"""m-Mix graph row ``mp_nodiv`` (m-Mix Tables 2, 5, 9; :mod:`jaxcl.configs.mmix_graph`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/graph_mp_nodiv.py:mutag --workdir=/tmp/mmix_graph_mp_nodiv_mutag
    # other data: :ptc_mr, :imdb_binary, :imdb_multi; 2-core CPU scale: :mutag,cpu;
    # smoke test: :mutag,quick

Measured: not yet.
"""

from jaxcl.configs import mmix_graph


def get_config(arg: str | None = None):
    return mmix_graph.make("mp_nodiv", arg)
