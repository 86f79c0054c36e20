"""GRACE on Pubmed's size with ESCo's Table 4 hyperparameters (paper, ESCo Table 2: GRACE
86.1 in 842 s / 14.5 GB, ESCo-RFF 86.1 in 204 s / 3.8 GB, ESCo-SORF 86.3 in 259 s / 4.1 GB).

Pubmed's Planetoid files are not among the data sets here, so this config runs on a random
graph of Pubmed's size (``data.synthetic``: 19,717 nodes, 44,324 undirected edges, 500
features with 50 nonzeros per node, 3 classes; :func:`jaxcl.data.synthetic_planetoid`). Its
labels are noise: the accuracy it prints is chance, and only time and memory mean anything.
With Pubmed's ``ind.pubmed.*`` files in ``planetoid/``, ``--config.data.synthetic=False``
trains on the real graph.

    python -m jaxcl.main --config=experiments/grace/pubmed.py --workdir=/tmp/grace_pubmed
    # ESCo-RFF / ESCo-SORF rows: --config=experiments/grace/pubmed.py:rff (or :sorf)
    # smoke test (minutes): --config=experiments/grace/pubmed.py:quick

Time per epoch and peak memory of the three rows at this size
(``python experiments/benchmarks/grace_scale_benchmark.py``, 5 timed epochs per row after a
warm-up, 2-core AMD EPYC CPU, no accelerator, jax 0.10.2, commit c88c10f, 2026-11-25, 152 s;
``experiments/benchmarks/results/grace_scale_benchmark.{json,png}``):

| row | s / epoch | 1500 epochs | peak RSS | XLA plan | paper (GPU) |
|---|---|---|---|---|---|
| GRACE | 14.20 | 5.9 h | 7.72 GiB | 4.91 GiB | 842 s, 14.5 GB |
| ESCo-RFF | 2.16 | 0.90 h | 1.46 GiB | 0.75 GiB | 204 s, 3.8 GB |
| ESCo-SORF | 2.12 | 0.88 h | 1.49 GiB | 0.75 GiB | 259 s, 4.1 GB |

ESCo is 6.6x faster than GRACE here and needs 5.3x less memory; the paper's ratios are 3.2-4.1x
and 3.5-3.8x. The full 1500-epoch runs were not made (the labels are noise).
"""

from jaxcl.configs import grace_node


def get_config(arg: str | None = None):
    c = grace_node.make("pubmed", arg)
    c.data.synthetic = True
    return c
