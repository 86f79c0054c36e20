"""m-Mix graph row ``mp`` (m-Mix Tables 2, 5, 9; :mod:`jaxcl.configs.mmix_graph`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/graph_mp.py:mutag --workdir=/tmp/mmix_graph_mp_mutag
    # other data: :ptc_mr, :imdb_binary, :imdb_multi, :reddit_binary; 2-core CPU scale: :mutag,cpu;
    # smoke test: :mutag,quick

Measured on MUTAG (``:mutag,cpu``, 40 epochs, 3 pretrainings, 10-fold linear SVM after the
last epoch; mean ± sample std): 81.2 ± 1.6 (81.9, 79.4, 82.5); paper (m-Mix Table 5) 92.0 ±
0.5. Commit 32b4585, 2-core CPU, 2 min 54 s for the three. Other data: not run.
"""

from jaxcl.configs import mmix_graph


def get_config(arg: str | None = None):
    return mmix_graph.make("mp", arg)
