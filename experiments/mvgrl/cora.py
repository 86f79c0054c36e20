"""MVGRL on Cora (MVGRL Table 2: 86.8 ± 0.5; m-Mix's reproduction 84.1 ± 0.9).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main --config=experiments/mvgrl/cora.py \
        --workdir=/tmp/mvgrl_cora
    # smoke test (minutes): --config=experiments/mvgrl/cora.py:quick

Measured (2-core CPU, 300 epochs, mean of 50 logistic regressions per pretraining on the
public split): 82.4 ± 0.3 (82.74, 82.10; seeds 0, 1); NMI / ARI 0.596 / 0.546 (m-Mix Table
8: 0.629 / 0.570). 3-9 min per run on shared cores, commits 7128494 (seed 0) and a3a27ff
(seed 1), ``--config.seed=S``.
Paper: 86.8 ± 0.5; m-Mix's rerun 84.1 ± 0.9.
"""

from jaxcl.configs import mvgrl_node


def get_config(arg: str | None = None):
    return mvgrl_node.make("cora", arg)
