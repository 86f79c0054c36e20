"""DACL Table 4, row DACL: GIN 4 x 512 on MUTAG, PTC-MR, IMDB-BINARY, IMDB-MULTI.

Setup: jaxcl/configs/dacl_graph.py. Launch (one data set per run; ",quick" for a smoke test):

    python -m jaxcl.main --config=experiments/dacl/graph_dacl.py:mutag --workdir=DIR

Measured (5 repeats, mean ± std over repeats, numpy's std; a repeat's score is its mean
10-fold accuracy over the last 5 epochs); 2-core AMD EPYC CPU, no accelerator, jax 0.10.2,
2026-11-21. Wall time is for all 5 repeats; * marks runs made while other jobs shared the
2 cores (seed 0 of each was rerun alone with the committed code and matched exactly).

=============  ==============  ==============  =========
data set       paper           ours            wall time
=============  ==============  ==============  =========
MUTAG          85.31 ± 1.34    85.76 ± 1.91    1.9 min
PTC-MR         59.24 ± 2.57    58.43 ± 1.08    12.4 min*
IMDB-BINARY    64.71 ± 2.13    64.10 ± 1.28    ~8 min*
IMDB-MULTI     40.16 ± 1.50    40.59 ± 0.65    8.5 min
=============  ==============  ==============  =========

IMDB-BINARY: seeds 0-3 ran while other jobs shared the cores and seed 4 alone (83 s of
training); the wall time is an estimate from seed 4.

The table was measured at commit 8264810. Later commits compute ``nt_xent`` and the padding
ladder in a different floating-point order (same values to ~1e-6), which single seeds
amplify over 20 epochs: rerun with the code of the same session's later commits, MUTAG
gives 85.87 ± 1.23 (seeds 83.84, 86.73, 85.88, 85.43, 87.47; 15 min while other jobs
shared the cores) against 85.76 ± 1.91 above, seed 0 moving from 86.38 to 83.84.
"""

from jaxcl.configs import dacl_graph


def get_config(arg=None):
    return dacl_graph.make("dacl_graph", arg)
