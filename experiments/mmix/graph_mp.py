"""m-Mix graph row ``mp`` (m-Mix Tables 2, 5, 9; :mod:`jaxcl.configs.mmix_graph`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/graph_mp.py:mutag --workdir=/tmp/mmix_graph_mp_mutag
    # other data: :ptc_mr, :imdb_binary, :imdb_multi, :reddit_binary, :coil_del (Table 6);
    # 2-core CPU scale: :mutag,cpu;
    # smoke test: :mutag,quick

With L_div averaged per graph, then over the graphs (Eq. 9; since commit e541546), 40 epochs,
3 pretrainings, ``--config.seed=0``, 2026-11-29, 2 AMD EPYC Zen 3 cores shared with two or
three other runs: MUTAG (``:mutag,cpu``, commit e87ad16, 5 min 49 s) 86.6 ± 0.8 (87.28, 86.75,
85.64), against 84.9 ± 3.8 below; PTC_MR (``:ptc_mr,cpu``, commit 2946a66, 16 min 19 s) 59.0 ±
0.5 (59.59, 58.71, 58.71), against 59.3 ± 0.7; IMDB-MULTI (``:imdb_multi,cpu``, commit
2946a66, 37 min 51 s) 50.8 ± 0.9 (49.87, 51.67, 51.00), against 50.6 ± 0.9; IMDB-BINARY
(``:imdb_binary,cpu``, liblinear SVM, commit 8dd1c77, quiet cores, 17 min 15 s) 74.4 ± 0.6
(74.9, 73.8, 74.6), against 74.2 ± 1.1. The other numbers below were measured with L_div
averaged over the batch's nodes and were not rerun.

Measured with the official code's node features (atom-label and degree one-hots,
``'tags+degree'``, the default since commit d61f2ee; 40 epochs, 3 pretrainings, 10-fold linear
SVM after the last epoch; mean ± sample std; 2-core CPU shared between two runs, 2026-11-26):
MUTAG (``:mutag,cpu``) 84.9 ± 3.8 (85.7, 88.3, 80.8), paper 92.0 ± 0.5, 4 min 55 s for the
three; PTC_MR (``:ptc_mr,cpu``) 59.3 ± 0.7 (58.5, 59.9, 59.6), paper 64.6 ± 0.4, 7 min 26 s;
IMDB-MULTI (``:imdb_multi,cpu``, its SVM by the ``'newton'`` solver) 50.6 ± 0.9 (49.7, 51.4,
50.8), paper 52.9 ± 0.4, commit 24b564b, 15 min for the three (an earlier run scored by
liblinear was stopped after one pretraining, 49.7, which took 66 min, 56 of them the SVM). MUTAG
again with the slab layout (on CPU since commit 4c9c235, ``sparse_layout='auto'``), quiet cores:
the same three accuracies (85.7, 88.3, 80.8) in 1 min 43 s.

At the paper's 200 epochs (the config's own epochs, ``:mutag`` / ``:ptc_mr`` with
``--config.repeats=3``; commit f63e938, 2026-11-27, 2 AMD EPYC cores, two runs at a time):
MUTAG 86.9 ± 1.5 (87.8, 85.2, 87.8), 11 min 28 s for the three; PTC_MR 59.6 ± 2.2 (61.9, 57.5,
59.3), 20 min 27 s. Against 40 epochs (above): MUTAG +2.0, PTC_MR +0.3; the paper's numbers
stay out of reach (README, m-Mix section).

Scored along training as m-Mix's graph script does (``--config.repeats=3
--config.eval.curve_every_epochs=10 --config.eval.folds_per_epoch=True``: after epochs 1, 11, ...,
191 and the last, fresh folds each time; 2026-11-27, 2 AMD EPYC cores, two runs at a time;
``experiments/mmix/graph_curves.py``, README's m-Mix section): MUTAG (``:mutag``, commit 753385d)
last epoch 85.6 ± 0.9 (86.1, 84.6, 86.2), the curve's maximum 89.4 ± 0.6 (89.4, 88.8, 89.9; epochs
1, 181, 71), 30 min 18 s for the three; PTC_MR (``:ptc_mr``, commit 8686a09) last epoch 57.9 ± 1.2
(59.0, 57.9, 56.7), the curve's maximum 62.1 ± 0.9 (61.9, 63.1, 61.4; epochs 121, 151, 51), 69 min
15 s for the three.
The MUTAG curve runs' last epoch on 10 draws of the folds (``rescore_svm.py --fold-seeds 10``,
commit 7b9fb55; ``fold_draws_table.py``, README's m-Mix section):
86.75 ± 0.19 (86.92, 86.55, 86.79).
The same draws at other hidden widths (m-Mix's appendix searches 32, ..., 2048;
``--config.repeats=3 --config.model.encoder_width=W --config.eval.fold_draws=10``, commit
22885c0, 2026-11-27, 2 AMD EPYC cores shared by two runs): MUTAG width 32 88.28 ± 0.43 (87.87,
88.25, 88.73; 2.6 min for the three), 64 88.01 ± 0.31, 128 88.11 ± 0.34, 256 86.55 ± 0.22;
PTC_MR width 32 56.06 ± 0.78 (56.96, 55.50, 55.73; 4.3 min) against 57.86 ± 0.41 at 512.

IMDB-BINARY at width 32 (``:imdb_binary --config.repeats=3 --config.eval.fold_draws=10
--config.eval.svm_solver=newton --config.model.encoder_width=32``, commit 568375e, 2026-11-28, 2
AMD EPYC cores shared by two runs, 6.6 min for the three): 73.44 ± 0.60 (73.91, 72.76, 73.66);
width 512 (one draw, liblinear) 74.2; paper 75.6 ± 0.5 (README's m-Mix section).
IMDB-MULTI at width 32 (``:imdb_multi --config.repeats=3 --config.eval.fold_draws=10
--config.model.encoder_width=32``, its SVM the ``'newton'`` solver; commit 3dfbeff, 2026-11-28,
2 AMD EPYC cores shared by two runs, 6.6 min for the three): 50.00 ± 0.42 (50.07, 49.56, 50.39);
paper 52.9 ± 0.4 (README's m-Mix section).
IMDB-BINARY at width 512, its own 200 epochs, on 10 fold draws (``:imdb_binary --config.repeats=3
--config.eval.fold_draws=10 --config.eval.svm_solver=newton``, commit 3dfbeff, 2026-11-28, 2
AMD EPYC cores shared by two runs, 50.6 min for the three): 74.34 ± 0.26 (74.14, 74.26, 74.63);
paper 75.6 ± 0.5.
IMDB-MULTI at width 512 on 10 fold draws (``:imdb_multi,cpu --config.repeats=3
--config.eval.fold_draws=10``, 40 epochs, commit 3dfbeff, 2026-11-28, 2 AMD EPYC cores shared by
two runs, 30 min for the three): 50.98 ± 0.02 (50.99, 50.95, 51.00); paper 52.9 ± 0.4.

Earlier, with the atom labels alone (``--config.data.node_features=tags``, the default up to
commit 4ba667f): measured on MUTAG (``:mutag,cpu``, 40 epochs, 3 pretrainings, 10-fold linear
SVM after the last epoch; mean ± sample std): 81.2 ± 1.6 (81.9, 79.4, 82.5); paper (m-Mix Table
5) 92.0 ± 0.5. Commit 32b4585, 2-core CPU, 2 min 54 s for the three. Other data: PTC_MR
(``:ptc_mr,cpu``) 55.3 ± 1.6 (56.7, 53.5, 55.8), paper 64.6 ± 0.4, commit 2bd635b, 10 min for
the three, on cores shared with other runs; IMDB-BINARY (``:imdb_binary,cpu``; degree features
either way, so this number stands) 74.2 ± 1.1 (75.0, 73.0, 74.7), paper 75.6 ± 0.5, commit
2bd635b, 41 min for the three, on cores shared with other runs. With the official graph
script's sign of the diversity loss (``--config.method.diversity=-1``, commit 1b50d33, 3
pretrainings): MUTAG 83.4 ± 0.8 (82.5, 83.6, 84.1), PTC_MR 55.5 ± 0.7 (55.2, 55.0, 56.3); see
the README's m-Mix section.

Table 6 (graph-edit triplets, triplet accuracy / pair AUC at n = 10, 15, 20, 50; commit
eaaaf30, cores shared with other runs; README's m-Mix section): synthetic COIL-DEL
(``:coil_del,cpu``, 3 pretrainings, 40 min) 0.707 / 0.648, 0.704 / 0.647, 0.698 / 0.649, 0.697
/ 0.643; paper (real COIL-DEL) AUC 0.854, 0.813, 0.794, 0.663. MUTAG (``:mutag,cpu
--config.eval.edit_nodes='(10,15,20)' --config.data.node_features=tags``, the atom labels
alone, 7 min) 0.702 / 0.605, 0.695 / 0.593, 0.699 / 0.626.
"""

from jaxcl.configs import mmix_graph


def get_config(arg: str | None = None):
    return mmix_graph.make("mp", arg)
