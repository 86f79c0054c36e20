"""DACL Table 4, row No-Pretraining: GIN 4 x 512 on MUTAG, PTC-MR, IMDB-BINARY, IMDB-MULTI.

Setup: jaxcl/configs/dacl_graph.py. Launch (one data set per run; ",quick" for a smoke test):

    python -m jaxcl.main --config=experiments/dacl/graph_none.py:mutag --workdir=DIR

RESULTS_PLACEHOLDER
"""

from jaxcl.configs import dacl_graph


def get_config(arg=None):
    return dacl_graph.make("none", arg)
