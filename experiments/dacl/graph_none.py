"""DACL Table 4, row No-Pretraining: GIN 4 x 512 on MUTAG, PTC-MR, IMDB-BINARY, IMDB-MULTI.

Setup: jaxcl/configs/dacl_graph.py. Launch (one data set per run; ",quick" for a smoke test):

    python -m jaxcl.main --config=experiments/dacl/graph_none.py:mutag --workdir=DIR

Measured (5 repeats, mean ± std over repeats, numpy's std; a repeat's score is its mean
10-fold accuracy over the last 5 epochs); 2-core AMD EPYC CPU, no accelerator, jax 0.10.2,
2026-11-21, at commit 8264810 and again at commit f5c6528 (the final code pads graph batches
to other budgets, which changes only the order of floating-point sums): the same numbers
to two decimals both times. Wall time is for all 5 repeats (f5c6528: 15, 15, 19, 19 s).

=============  ==============  ==============  =========
data set       paper           ours            wall time
=============  ==============  ==============  =========
MUTAG          81.70 ± 2.58    82.40 ± 1.18    16 s
PTC-MR         53.07 ± 1.27    54.41 ± 1.53    16 s
IMDB-BINARY    52.67 ± 2.08    53.50 ± 4.13    19 s
IMDB-MULTI     33.72 ± 0.80    33.81 ± 0.54    21 s
=============  ==============  ==============  =========
"""

from jaxcl.configs import dacl_graph


def get_config(arg=None):
    return dacl_graph.make("none", arg)
