"""GRACE + mp-mix (m-Mix Table 4: DBLP 85.6 ± 0.1 against their GRACE rerun's 83.8 ± 0.2; the
PPI row is unreadable in our copy of the paper, whose text gives mp-mix +1.6 over GRACE
there; neither data set is available here).
Setup: :func:`jaxcl.configs.mmix_node.make_grace`.

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/grace_mp.py:cora --workdir=/tmp/grace_mmix_cora
    # Citeseer: :citeseer; smoke test: :cora,quick
    # DBLP's size, on a random graph (not run; its files are not here): :dblp
    # PPI's sizes, inductive, micro-F1 (not run; random graphs): :ppi (smoke test :ppi,quick)

Measured: not yet (no paper number on Cora or Citeseer to compare with). ``:dblp`` (GRACE's
own DBLP setup, m-Mix's augmentations) runs on a tenth of the random graph in the tests;
the w/o-div column: ``--config.method.diversity=0``.
"""

from jaxcl.configs import mmix_node


def get_config(arg: str | None = None):
    return mmix_node.make_grace(arg)
