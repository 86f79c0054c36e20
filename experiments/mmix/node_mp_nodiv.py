"""m-Mix node row ``mp_nodiv``: MVGRL + mp-mix without L_div (m-Mix Tables 1, 5, 9).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/node_mp_nodiv.py:cora --workdir=/tmp/mmix_mp_nodiv_cora
    # Citeseer: :citeseer; all nodes as partners (m-mix-op): :cora,op; smoke test: :cora,quick
    # Pubmed's size, on a random graph (not run; its files are not here): :pubmed

Paper (m-Mix Table 1): Cora 85.1 ± 0.8, Citeseer 74.4 ± 0.9. Citeseer with MVGRL's code's
Citeseer view of the diffusion (the config's since 8c6cdb0; trained at de471c8 with
``--config.method.ppr_match_degree=True --config.method.ppr_minmax=True``, 200 epochs, seeds
0-1, 8.1 / 5.4 min on 2 shared AMD EPYC cores, 2026-11-27; seed 2 at 901890c, 4.3 min, with the
config's defaults; the runs' own results): 71.5 ± 0.6 (72.20, 71.00, 71.30), NMI / ARI 0.421 /
0.392, where MVGRL gives 73.2 ± 0.8 with that view. The Citeseer numbers below are with the
plain PPR view. Measured with the configs' classifier (MVGRL's, 50 logistic regressions per
pretraining; 2-core CPU, 200 epochs, scored by ``experiments/mmix/node_curves.py``, 2026-11-26;
seed 0 trained at 2ed7310, seed 1 at 2ef9463): Cora 83.0 ± 0.9 (82.16, 82.89, 83.86) over seeds
0-2 (seeds 1-2 trained at 78c14ed), Citeseer 72.0 ± 0.6 (72.4, 71.5) over seeds 0-1 (seed 0
trained at 2ef9463, seed 1 at 78c14ed). With GRACE's classifier (the configs' until commit
fd540ad): Cora 82.9 (seed 0; a seed-1 value of 81.68 quoted here before has no record), Citeseer
69.8 ± 0.5 (seed 0, ± over the classifiers); NMI/ARI Cora 0.554 / 0.493, Citeseer 0.414 / 0.413.
3-9 min per run on shared cores; trained at commits 89a2d3a..32b4585, evaluated at a3a27ff
(Cora) / 32b4585 (Citeseer) with ``--config.seed=S``. The paper's ordering does not hold here:
see the README's m-Mix section.
"""

from jaxcl.configs import mmix_node


def get_config(arg: str | None = None):
    return mmix_node.make("mp_nodiv", arg)
