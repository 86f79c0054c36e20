"""m-Mix node row ``binary``: MVGRL + binary (m-Mix Tables 1, 3, 5; :mod:`jaxcl.configs.mmix_node`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/node_binary.py:cora --workdir=/tmp/mmix_binary_cora
    # Citeseer: :citeseer; all nodes as partners (m-mix-op): :cora,op; smoke test: :cora,quick
    # Pubmed's size, on a random graph (not run; its files are not here): :pubmed

Paper (m-Mix Table 3): Cora 84.9 ± 0.9, Citeseer 74.1 ± 0.5. Citeseer with MVGRL's code's
Citeseer view of the diffusion (the config's since 8c6cdb0; trained at de471c8 with
``--config.method.ppr_match_degree=True --config.method.ppr_minmax=True``, 200 epochs, seeds
0-1, 7.4 / 7.3 min on 2 shared AMD EPYC cores, 2026-11-27; seed 2 at 901890c, 7.2 min, with the
config's defaults; the runs' own results): 71.0 ± 0.6 (71.70, 70.90, 70.50), NMI / ARI 0.418 /
0.388, where MVGRL gives 73.2 ± 0.8 with that view. The Citeseer numbers below are with the
plain PPR view. Measured with the configs' classifier (MVGRL's, 50 logistic regressions per
pretraining; 2-core CPU, 200 epochs, scored by ``experiments/mmix/node_curves.py``, 2026-11-26;
seed 0 trained at 2ed7310, seed 1 at 2ef9463): Cora 82.8 ± 0.8 (83.17, 81.89, 83.26) over seeds
0-2 (seeds 1-2 trained at 78c14ed), Citeseer 71.3 ± 0.6 (71.7, 70.9) over seeds 0-1 (seed 0
trained at 2ef9463, seed 1 at 78c14ed). With GRACE's classifier (the configs' until commit
fd540ad): Cora 83.2 (seed 0; a seed-1 value of 80.80 quoted here before has no record), Citeseer
69.5 ± 0.5 (seed 0, ± over the classifiers); NMI/ARI Cora 0.548 / 0.490, Citeseer 0.409 / 0.406.
3-9 min per run on shared cores; trained at commits 89a2d3a..32b4585, evaluated at a3a27ff
(Cora) / 32b4585 (Citeseer) with ``--config.seed=S``. The paper's ordering does not hold here:
see the README's m-Mix section.
"""

from jaxcl.configs import mmix_node


def get_config(arg: str | None = None):
    return mmix_node.make("binary", arg)
