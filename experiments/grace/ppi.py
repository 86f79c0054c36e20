"""GRACE on PPI, inductive (the base of m-Mix Table 4's PPI row; micro-F1 on the test graphs).

PPI's files are not among the data sets here, so this config runs on random graphs of PPI's
sizes (``data.synthetic``: 24 graphs, 20 for training, 56,944 nodes, 50 features, 121
labels; :func:`jaxcl.data.synthetic_ppi`). Their labels are noise: the micro-F1 it prints is
chance, and only time and memory mean anything. With PPI's GraphSAGE files (``ppi.zip``) in
``<data_dir>/ppi``, ``--config.data.synthetic=False`` trains on the real graphs. The setup and
which parts of it are our reading: :mod:`jaxcl.configs.mmix_node` (PPI); GRACE + mp-mix on
the same setup: ``experiments/mmix/grace_mp.py:ppi``.

    python -m jaxcl.main --config=experiments/grace/ppi.py --workdir=/tmp/grace_ppi
    # smoke test (a twentieth of the graphs, narrow, seconds): :quick

Measured: not run at full size (no files here; on the random graphs the score is chance).
"""

from jaxcl.configs import grace_node


def get_config(arg: str | None = None):
    return grace_node.make("ppi", arg)
