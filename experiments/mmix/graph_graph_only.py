"""m-Mix graph row ``graph_only`` (m-Mix Tables 2, 5, 9; :mod:`jaxcl.configs.mmix_graph`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/graph_graph_only.py:mutag --workdir=/tmp/mmix_gonly_mutag
    # other data: :ptc_mr, :imdb_binary, :imdb_multi; 2-core CPU scale: :mutag,cpu;
    # smoke test: :mutag,quick

Measured: not yet.
"""

from jaxcl.configs import mmix_graph


def get_config(arg: str | None = None):
    return mmix_graph.make("graph_only", arg)
