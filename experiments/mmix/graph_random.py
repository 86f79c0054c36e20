"""m-Mix graph row ``random`` (m-Mix Tables 2, 5, 9; :mod:`jaxcl.configs.mmix_graph`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/graph_random.py:mutag --workdir=/tmp/mmix_graph_random_mutag
    # other data: :ptc_mr, :imdb_binary, :imdb_multi, :reddit_binary, :coil_del (Table 6);
    # 2-core CPU scale: :mutag,cpu;
    # smoke test: :mutag,quick

Measured with the official code's node features (atom-label and degree one-hots,
``'tags+degree'``, the default since commit d61f2ee; 40 epochs, 3 pretrainings, 10-fold linear
SVM after the last epoch; mean ± sample std; 2-core CPU shared between two runs, 2026-11-26):
MUTAG (``:mutag,cpu``) 87.1 ± 0.8 (86.2, 87.8, 87.3), paper 89.9 ± 1.3, 2 min 30 s for the
three; PTC_MR (``:ptc_mr,cpu``) 57.5 ± 3.4 (60.8, 54.1, 57.5), paper 63.1 ± 1.4, 5 min 32 s.

At the paper's 200 epochs (the config's own epochs, ``:mutag`` / ``:ptc_mr`` with
``--config.repeats=3``; commit f63e938, 2026-11-27, 2 AMD EPYC cores, two runs at a time):
MUTAG 85.6 ± 0.5 (86.1, 85.1, 85.6), 5 min 41 s for the three; PTC_MR 58.0 ± 2.0 (56.1, 57.8,
60.1), 11 min 9 s. Against 40 epochs (above): MUTAG -1.5, PTC_MR +0.5; the paper's numbers stay
out of reach (README, m-Mix section).

Scored along training as m-Mix's graph script does (``--config.repeats=3
--config.eval.curve_every_epochs=10 --config.eval.folds_per_epoch=True``: after epochs 1, 11, ...,
191 and the last, fresh folds each time; 2026-11-27, 2 AMD EPYC cores, two runs at a time;
``experiments/mmix/graph_curves.py``, README's m-Mix section): MUTAG (``:mutag``, commit 8686a09)
last epoch 86.7 ± 0.0 (86.7, 86.7, 86.7), the curve's maximum 88.7 ± 0.3 (88.3, 88.9, 88.8; epochs
21, 1, 1), 19 min 49 s for the three; PTC_MR (``:ptc_mr``, commit 1ab0ba4) last epoch 57.1 ± 3.2
(54.9, 55.6, 60.8), the curve's maximum 61.3 ± 2.1 (59.3, 61.3, 63.4; epochs 71, 151, 151),
67 min 52 s for the three.
The MUTAG curve runs' last epoch on 10 draws of the folds (``rescore_svm.py --fold-seeds 10``,
commit f6f9f6c; ``fold_draws_table.py``, README's m-Mix section):
86.50 ± 0.21 (86.70, 86.28, 86.53).

At other hidden widths on 10 fold draws (``--config.repeats=3 --config.eval.fold_draws=10
--config.model.encoder_width=W``; the paper's 200 epochs; 2 AMD EPYC cores shared by two runs):
MUTAG width 32 88.36 ± 0.88 (commit 22885c0, 2026-11-27, 1.9 min for the three), 64 88.12 ±
0.02 (88.09, 88.13, 88.12; 1.6 min), 128 87.84 ± 0.03 (87.88, 87.82, 87.81; 2.3 min; both at
568375e, 2026-11-28), against 86.50 ± 0.21 at 512; PTC_MR width 32 55.50 ± 0.48 (55.59,
55.92, 54.98; 568375e, 2.3 min) against 57.74 ± 1.27 at 512 (README's m-Mix section).

IMDB-BINARY at width 32 (``:imdb_binary --config.repeats=3 --config.eval.fold_draws=10
--config.eval.svm_solver=newton --config.model.encoder_width=32``, commit 568375e, 2026-11-28, 2
AMD EPYC cores shared by two runs, 17.8 min for the three): 73.36 ± 1.14 (74.62, 73.03, 72.42);
width 512 (one draw, liblinear) 74.7; paper 74.2 ± 1.0 (README's m-Mix section).
IMDB-MULTI at width 32 (``:imdb_multi --config.repeats=3 --config.eval.fold_draws=10
--config.model.encoder_width=32``, its SVM the ``'newton'`` solver; commit 3dfbeff, 2026-11-28,
2 AMD EPYC cores shared by two runs, 4.2 min for the three): 49.66 ± 0.45 (49.29, 49.55, 50.16);
paper 52.0 ± 0.9 (README's m-Mix section).
IMDB-BINARY at width 512, its own 200 epochs, on 10 fold draws (``:imdb_binary --config.repeats=3
--config.eval.fold_draws=10 --config.eval.svm_solver=newton``, commit 9864e45, 2026-11-28, 2
AMD EPYC cores shared by two runs, 31 min for the three): 74.42 ± 0.60 (74.65, 73.74, 74.86);
paper 74.2 ± 1.0 (README's m-Mix section).
IMDB-MULTI at width 512 on 10 fold draws (``:imdb_multi,cpu --config.repeats=3
--config.eval.fold_draws=10``, 40 epochs, commit 9864e45, 2026-11-28, 2 AMD EPYC cores shared by
two runs, 36 min for the three): 51.07 ± 0.12 (51.09, 50.94, 51.19); paper 52.0 ± 0.9.

Earlier, with the atom labels alone (``--config.data.node_features=tags``, the default up to
commit 4ba667f): measured on MUTAG (``:mutag,cpu``, 40 epochs, 3 pretrainings, 10-fold linear
SVM after the last epoch; mean ± sample std): 83.7 ± 0.8 (84.6, 83.6, 83.0); paper (m-Mix Table
5) 89.9 ± 1.3. Commit 32b4585, 2-core CPU, 2 min 4 s for the three. Other data: PTC_MR
(``:ptc_mr,cpu``) 56.9 ± 0.4 (57.3, 56.9, 56.4), paper 63.1 ± 1.4, commit 2bd635b, 8 min for
the three, on cores shared with other runs. IMDB-BINARY (``:imdb_binary,cpu``; degree features
either way, so this number stands) 74.7 ± 0.4 (75.0, 74.3, 74.8), paper 74.2 ± 1.0, commit
ed4a9a5, 49 min for the three on shared cores. IMDB-MULTI (``:imdb_multi,cpu``, its SVM by
the ``'newton'`` solver) 50.9 ± 0.2 (50.7, 51.0, 51.0), paper 52.0 ± 0.9, commit 24b564b.
"""

from jaxcl.configs import mmix_graph


def get_config(arg: str | None = None):
    return mmix_graph.make("random", arg)
