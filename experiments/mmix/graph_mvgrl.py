"""m-Mix graph row ``mvgrl`` (m-Mix Tables 2, 5, 9; :mod:`jaxcl.configs.mmix_graph`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/graph_mvgrl.py:mutag --workdir=/tmp/mmix_graph_mvgrl_mutag
    # other data: :ptc_mr, :imdb_binary, :imdb_multi, :reddit_binary, :coil_del (Table 6);
    # 2-core CPU scale: :mutag,cpu;
    # smoke test: :mutag,quick

Measured on MUTAG (``:mutag,cpu``, 40 epochs, 3 pretrainings, 10-fold linear SVM after the
last epoch; mean ± sample std): 81.7 ± 1.1 (81.4, 80.8, 82.9); paper (m-Mix Table 5) 89.7 ±
0.8. Commit 32b4585, 2-core CPU, 3 min 32 s for the three. Other data: PTC_MR
(``:ptc_mr,cpu``) 58.0 ± 1.2 (59.3, 57.9, 57.0), paper 62.8 ± 1.0, commit 2bd635b, 7 min for
the three, on cores shared with other runs; IMDB-BINARY (``:imdb_binary,cpu``) 74.0 ± 0.6
(74.4, 73.6), paper 73.8 ± 0.4, commit cc68416, 2 of the 3 pretrainings finished in the
session, on cores shared with other runs. IMDB-MULTI: not run.

Table 6 (graph-edit triplets, triplet accuracy / pair AUC at n = 10, 15, 20, 50; commit
eaaaf30, cores shared with other runs; README's m-Mix section): synthetic COIL-DEL
(``:coil_del,cpu --config.repeats=2``, 2 pretrainings, 23 min) 0.722 / 0.633, 0.718 /
0.641, 0.723 / 0.660, 0.715 / 0.668 (the paper's MVGRL column is lost in its printed
table). MUTAG (``:mutag,cpu --config.eval.edit_nodes='(10,15,20)'``, 12 min) 0.676 /
0.588, 0.649 / 0.581, 0.699 / 0.634.
"""

from jaxcl.configs import mmix_graph


def get_config(arg: str | None = None):
    return mmix_graph.make("mvgrl", arg)
