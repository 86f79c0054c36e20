"""m-Mix graph row ``mp_nodiv`` (m-Mix Tables 2, 5, 9; :mod:`jaxcl.configs.mmix_graph`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/graph_mp_nodiv.py:mutag --workdir=/tmp/mmix_graph_mp_nodiv_mutag
    # other data: :ptc_mr, :imdb_binary, :imdb_multi, :reddit_binary, :coil_del (Table 6);
    # 2-core CPU scale: :mutag,cpu;
    # smoke test: :mutag,quick

Measured with the official code's node features (atom-label and degree one-hots,
``'tags+degree'``, the default since commit d61f2ee; 40 epochs, 3 pretrainings, 10-fold linear
SVM after the last epoch; mean ± sample std; 2-core CPU shared between two runs, 2026-11-26):
MUTAG (``:mutag,cpu``) 87.3 ± 0.9 (86.8, 88.3, 86.8), paper 90.7 ± 1.3, 3 min 36 s for the
three; PTC_MR (``:ptc_mr,cpu``) 55.7 ± 0.5 (55.8, 56.1, 55.1), paper not given, 7 min 10 s.

At the paper's 200 epochs (the config's own epochs, ``:mutag`` / ``:ptc_mr`` with
``--config.repeats=3``; commit f63e938, 2026-11-27, 2 AMD EPYC cores, two runs at a time):
MUTAG 85.3 ± 1.3 (84.1, 85.2, 86.7), 7 min 3 s for the three; PTC_MR 57.4 ± 2.3 (56.7, 59.9,
55.5), 13 min 14 s. Against 40 epochs (above): MUTAG -2.0, PTC_MR +1.7; the paper's numbers
stay out of reach (README, m-Mix section).

Scored along training as m-Mix's graph script does (``--config.repeats=3
--config.eval.curve_every_epochs=10 --config.eval.folds_per_epoch=True``: after epochs 1, 11, ...,
191 and the last, fresh folds each time; 2026-11-27, 2 AMD EPYC cores, two runs at a time;
``experiments/mmix/graph_curves.py``, README's m-Mix section): MUTAG (``:mutag``, commit 8686a09)
last epoch 86.0 ± 1.3 (84.6, 86.1, 87.2), the curve's maximum 89.0 ± 0.9 (88.9, 88.2, 89.9; epochs
21, 51, 71), 23 min 13 s for the three.
The MUTAG curve runs' last epoch on 10 draws of the folds (``rescore_svm.py --fold-seeds 10``,
commit f6f9f6c; ``fold_draws_table.py``, README's m-Mix section):
86.10 ± 0.26 (86.23, 85.80, 86.26).
PTC_MR (the paper's 200 epochs) on 10 draws of the folds, scored by the run itself (``:ptc_mr
--config.repeats=3 --config.eval.fold_draws=10``, commit 22885c0, 2026-11-27, 2 AMD EPYC cores
shared by two runs, 40.4 min for the three): 57.47 ± 1.80 (55.39, 58.63, 58.38);
the paper has no PTC_MR cell for this row.

IMDB-BINARY at width 32 (``:imdb_binary --config.repeats=3 --config.eval.fold_draws=10
--config.eval.svm_solver=newton --config.model.encoder_width=32``, commit 3dfbeff, 2026-11-28, 2
AMD EPYC cores shared by two runs, 7.2 min for the three): 73.19 ± 1.19 (74.43, 73.07, 72.06);
width 512 (one draw, liblinear) 74.7; paper 75.1 ± 0.7 (README's m-Mix section).
IMDB-MULTI at width 32 (``:imdb_multi --config.repeats=3 --config.eval.fold_draws=10
--config.model.encoder_width=32``, its SVM the ``'newton'`` solver; commit 3dfbeff, 2026-11-28,
2 AMD EPYC cores shared by two runs, 6.5 min for the three): 49.82 ± 0.35 (49.53, 49.72, 50.20);
paper 52.0 ± 0.7 (README's m-Mix section).
IMDB-BINARY at width 512, its own 200 epochs, on 10 fold draws (``:imdb_binary --config.repeats=3
--config.eval.fold_draws=10 --config.eval.svm_solver=newton``, commit 9864e45, 2026-11-28, 2
AMD EPYC cores shared by two runs, 55 min for the three): 74.47 ± 0.37 (74.76, 74.05, 74.59);
paper 75.1 ± 0.7 (README's m-Mix section).
IMDB-MULTI at width 512, 40 epochs, on 10 fold draws (``:imdb_multi,cpu --config.repeats=3
--config.eval.fold_draws=10``, its SVM the ``'newton'`` solver; commit 7b7c21a, 2026-11-28, 2
AMD EPYC cores, partly shared, 17.7 min for the three): 51.05 ± 0.21 (51.01, 50.85, 51.27);
paper 52.0 ± 0.7.

Earlier, with the atom labels alone (``--config.data.node_features=tags``, the default up to
commit 4ba667f): measured on MUTAG (``:mutag,cpu``, 40 epochs, 3 pretrainings, 10-fold linear
SVM after the last epoch; mean ± sample std): 84.1 ± 0.6 (84.0, 84.6, 83.5); paper (m-Mix Table
5) 90.7 ± 1.3. Commit 32b4585, 2-core CPU, 2 min 53 s for the three. Other data: PTC_MR
(``:ptc_mr,cpu``) 58.3 ± 2.2 (59.3, 55.8, 59.8), paper not given, commit 2bd635b, 9 min for the
three, on cores shared with other runs. IMDB-BINARY (``:imdb_binary,cpu``; degree features
either way, so this number stands) 74.7 ± 0.4 (75.0, 74.9, 74.3), paper 75.1 ± 0.7, commit
35b2065, 23 min for the three. IMDB-MULTI (``:imdb_multi,cpu``, its SVM by
the ``'newton'`` solver) 50.8 ± 0.4 (50.3, 50.9, 51.1), paper 52.0 ± 0.7, commit 24b564b, 13 min.
"""

from jaxcl.configs import mmix_graph


def get_config(arg: str | None = None):
    return mmix_graph.make("mp_nodiv", arg)
