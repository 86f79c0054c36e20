"""m-Mix node row ``random``: MVGRL + random (m-Mix Tables 1, 3, 5; :mod:`jaxcl.configs.mmix_node`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/node_random.py:cora --workdir=/tmp/mmix_random_cora
    # Citeseer: :citeseer; all nodes as partners (m-mix-op): :cora,op; smoke test: :cora,quick
    # Pubmed's size, on a random graph (not run; its files are not here): :pubmed

Paper (m-Mix Table 5): Cora 84.1 ± 1.6, Citeseer 73.8 ± 1.1. Citeseer with MVGRL's code's
Citeseer view of the diffusion (the config's since 8c6cdb0; trained at de471c8 with
``--config.method.ppr_match_degree=True --config.method.ppr_minmax=True``, 200 epochs, seeds
0-1, 7.6 / 7.3 min on 2 shared AMD EPYC cores, 2026-11-27; seed 2 at 901890c, 7.3 min, with the
config's defaults; the runs' own results): 70.9 ± 0.8 (71.70, 70.20, 70.70), NMI / ARI 0.423 /
0.372, where MVGRL gives 73.2 ± 0.8 with that view. The Citeseer numbers below are with the
plain PPR view. Measured with the configs' classifier (MVGRL's, 50 logistic regressions per
pretraining; 2-core CPU, 200 epochs, scored by ``experiments/mmix/node_curves.py``, 2026-11-26;
seed 0 trained at 2ed7310, seed 1 at 2ef9463): Cora 82.8 ± 1.3 (82.29, 81.79, 84.19) over seeds
0-2 (seed 2 trained at 78c14ed), Citeseer 71.5 ± 0.6 (71.9, 71.1) over seeds 0-1 (seed 0 trained
at 2ef9463, seed 1 at 78c14ed). With GRACE's classifier (the configs' until commit fd540ad):
Cora 82.1 ± 0.4 (82.37, 81.77; sample std) over seeds 0 and 1, Citeseer 70.1 ± 0.4 (seed 0, ±
over the classifiers); NMI/ARI Cora 0.569 / 0.497, Citeseer 0.405 / 0.395. 3-9 min per run on
shared cores; trained at commits 89a2d3a..32b4585, evaluated at a3a27ff (Cora) / 32b4585
(Citeseer) with ``--config.seed=S``. The paper's ordering does not hold here: see the README's
m-Mix section.
"""

from jaxcl.configs import mmix_node


def get_config(arg: str | None = None):
    return mmix_node.make("random", arg)
