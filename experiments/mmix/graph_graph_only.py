"""m-Mix graph row ``graph_only`` (m-Mix Tables 2, 5, 9; :mod:`jaxcl.configs.mmix_graph`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/graph_graph_only.py:mutag --workdir=/tmp/mmix_gonly_mutag
    # other data: :ptc_mr, :imdb_binary, :imdb_multi, :reddit_binary, :coil_del (Table 6);
    # 2-core CPU scale: :mutag,cpu;
    # smoke test: :mutag,quick

Measured with the official code's node features (atom-label and degree one-hots,
``'tags+degree'``, the default since commit d61f2ee; 40 epochs, 3 pretrainings, 10-fold linear
SVM after the last epoch; mean ± sample std; 2-core CPU shared between two runs, 2026-11-26):
MUTAG (``:mutag,cpu``) 87.2 ± 1.4 (85.6, 87.8, 88.3), paper 89.4 ± 0.7 (Table 9), 3 min 27 s
for the three.

IMDB-MULTI (``:imdb_multi,cpu``, ``--config.seed=0``; the config's exact Newton SVM solver;
commit 2004395, 2-core Intel Xeon, quiet cores, 2026-11-26): 50.9 ± 0.5 (50.4, 51.3, 51.1),
paper 50.7 ± 0.4 (Table 9), 13 min for the three. IMDB-BINARY (``:imdb_binary,cpu``,
liblinear SVM, same commit, cores shared with a CI run for the first half): 74.8 ± 0.5
(75.4, 74.7, 74.4), paper 73.5 ± 0.6, 36 min for the three.

Earlier, with the atom labels alone (``--config.data.node_features=tags``, the default up to
commit 4ba667f): measured on MUTAG (``:mutag,cpu``, 40 epochs, 3 pretrainings, 10-fold linear
SVM after the last epoch; mean ± sample std): 80.7 ± 2.1 (81.9, 82.0, 78.3); paper (m-Mix Table
9) 89.4 ± 0.7. Commit 32b4585, 2-core CPU, about 3 min for the three. Other data: not run.
"""

from jaxcl.configs import mmix_graph


def get_config(arg: str | None = None):
    return mmix_graph.make("graph_only", arg)
