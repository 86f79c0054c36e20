"""MVGRL on Pubmed's size (MVGRL Table 2: 80.1 ± 0.7; m-Mix's reproduction 80.1 ± 0.8, Table 5).

Pubmed's Planetoid files are not among the data sets here, so this config runs on a random
graph of Pubmed's size (``data.synthetic``: 19,717 nodes, 44,324 undirected edges, 500
features; :func:`jaxcl.data.synthetic_planetoid`) whose labels are noise: its accuracy is
chance. With Pubmed's ``ind.pubmed.*`` files in ``planetoid/``, ``--config.data.synthetic=False``.
The diffusion view is PPR truncated at 1e-4 as sparse weighted edges (MVGRL's code slices
windows of 2000 nodes out of the dense 19,717 x 19,717 matrix instead; see
:mod:`jaxcl.configs.mmix_node`).

    python -m jaxcl.main --config=experiments/mvgrl/pubmed.py --workdir=/tmp/mvgrl_pubmed
    # smoke test on a tenth of the graph: --config=experiments/mvgrl/pubmed.py:quick

Measured: not run (no data); the ``quick`` variant runs in tests/test_mmix_method.py.
"""

from jaxcl.configs import mvgrl_node


def get_config(arg: str | None = None):
    return mvgrl_node.make("pubmed", arg)
