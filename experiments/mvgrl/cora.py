"""MVGRL on Cora (MVGRL Table 2: 86.8 ± 0.5; m-Mix's reproduction 84.1 ± 0.9).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main --config=experiments/mvgrl/cora.py \
        --workdir=/tmp/mvgrl_cora
    # smoke test (minutes): --config=experiments/mvgrl/cora.py:quick

Measured with the config's classifier (MVGRL's: 50 logistic regressions per pretraining on
the public split; 2-core CPU, 300 epochs, scored by ``experiments/mmix/node_curves.py``,
2026-11-26; seed 0 trained at 2ed7310, seed 1 at 2ef9463): 83.2 ± 0.5 (83.54, 82.77; seeds
0, 1). With GRACE's classifier (the config's until commit fd540ad): 82.4 ± 0.3 (82.74,
82.10; commits 7128494 and a3a27ff), and 82.4 ± 0.5 on the runs above; NMI / ARI 0.596 /
0.546 (m-Mix Table 8: 0.629 / 0.570). 3-9 min per run on shared cores, ``--config.seed=S``.
Paper: 86.8 ± 0.5; m-Mix's rerun 84.1 ± 0.9.
"""

from jaxcl.configs import mvgrl_node


def get_config(arg: str | None = None):
    return mvgrl_node.make("cora", arg)
