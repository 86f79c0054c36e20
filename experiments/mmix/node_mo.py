"""m-Mix node row ``mo``: MVGRL + mo (m-Mix Tables 1, 3, 5; :mod:`jaxcl.configs.mmix_node`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/node_mo.py:cora --workdir=/tmp/mmix_mo_cora
    # Citeseer: :citeseer; all nodes as partners (m-mix-op): :cora,op; smoke test: :cora,quick
    # Pubmed's size, on a random graph (not run; its files are not here): :pubmed

Paper (m-Mix Table 5): Cora 85.4 ± 0.4, Citeseer 75.1 ± 0.4. Citeseer with MVGRL's code's
Citeseer view of the diffusion (the config's since 8c6cdb0; trained at de471c8 with
``--config.method.ppr_match_degree=True --config.method.ppr_minmax=True``, 200 epochs, seeds
0-1, 7.8 / 7.5 min on 2 shared AMD EPYC cores, 2026-11-27; seed 2 at 901890c, 7.5 min, with the
config's defaults; the runs' own results): 71.1 ± 0.6 (71.70, 70.50, 71.20), NMI / ARI 0.420 /
0.403, where MVGRL gives 73.2 ± 0.8 with that view. The Citeseer numbers below are with the
plain PPR view. Measured with the configs' classifier (MVGRL's, 50 logistic regressions per
pretraining; 2-core CPU, 200 epochs, scored by ``experiments/mmix/node_curves.py``, 2026-11-26;
seed 0 trained at 2ed7310, seed 1 at 2ef9463): Cora 82.7 ± 0.7 (82.34, 82.20, 83.56) over seeds
0-2 (seed 2 trained at 78c14ed), Citeseer 71.8 ± 0.7 (72.3, 71.3) over seeds 0-1 (seed 0 trained
at 2ef9463, seed 1 at 78c14ed). With GRACE's classifier (the configs' until commit fd540ad):
Cora 82.5 ± 0.7 (82.95, 81.96; sample std) over seeds 0 and 1, Citeseer 69.4 ± 0.4 (seed 0, ±
over the classifiers); NMI/ARI Cora 0.529 / 0.429, Citeseer 0.418 / 0.418. 3-9 min per run on
shared cores; trained at commits 89a2d3a..32b4585, evaluated at a3a27ff (Cora) / 32b4585
(Citeseer) with ``--config.seed=S``. The paper's ordering does not hold here: see the README's
m-Mix section.
"""

from jaxcl.configs import mmix_node


def get_config(arg: str | None = None):
    return mmix_node.make("mo", arg)
