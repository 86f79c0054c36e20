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

Time per epoch and peak memory of the three rows at this size:
``python experiments/benchmarks/grace_scale_benchmark.py`` (results in the closing notes of
issue #14 and in ``experiments/benchmarks/results/grace_scale_benchmark.json``).
"""

from jaxcl.configs import grace_node


def get_config(arg: str | None = None):
    c = grace_node.make("pubmed", arg)
    c.data.synthetic = True
    return c
