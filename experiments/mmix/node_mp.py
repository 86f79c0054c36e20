"""m-Mix node row ``mp``: MVGRL + mp (m-Mix Tables 1, 3, 5; :mod:`jaxcl.configs.mmix_node`).

    JAXCL_DATA_DIR=../shared/data python -m jaxcl.main \
        --config=experiments/mmix/node_mp.py:cora --workdir=/tmp/mmix_mp_cora
    # Citeseer: :citeseer; all nodes as partners (m-mix-op): :cora,op; smoke test: :cora,quick
    # Pubmed's size, on a random graph (not run; its files are not here): :pubmed

Paper (m-Mix Table 5): Cora 85.9 ± 0.3, Citeseer 75.8 ± 0.3. Citeseer with MVGRL's code's
Citeseer view of the diffusion (the config's since 8c6cdb0; trained at de471c8 with
``--config.method.ppr_match_degree=True --config.method.ppr_minmax=True``, 200 epochs, 7.6
min each on 2 shared AMD EPYC cores, 2026-11-27, the runs' own results): 71.5 ± 0.6 (72.00,
71.70, 70.80; seeds 0-2), NMI / ARI 0.417 / 0.402, where MVGRL rises to 73.2 ± 0.8 with that
view: mp-mix lies 1.7 below MVGRL. The Citeseer numbers below are with the plain PPR view.
Measured with the configs'
classifier (MVGRL's, 50 logistic regressions per pretraining; 2-core CPU, 200 epochs, scored
by ``experiments/mmix/node_curves.py`` and ``node_table.py``, 2026-11-26; seed 0 trained at
2ed7310, seed 1 at 2ef9463, seeds 2-4 and Citeseer's seeds 1-2 at 554822d): Cora 82.5 ± 0.7
(82.42, 81.30, 82.97, 82.46, 83.17; seeds 0-4), Citeseer 71.4 ± 0.8 (72.10, 71.60, 70.60;
seeds 0-2); NMI / ARI Cora 0.544 / 0.466 (seeds 0, 2-4), Citeseer 0.425 / 0.417 (seeds 1,
2). Below the control without mixing on Cora (``--config.method.mixing=none``: 83.1 ± 1.0),
level with it on Citeseer (71.2 ± 0.3). With
GRACE's classifier (the configs' until commit fd540ad): Cora 81.7 ± 0.8 (82.28, 81.13; sample std)
over seeds 0 and 1, Citeseer 70.1 ± 0.4 (seed 0, ± over the classifiers); NMI/ARI of the runs of
2026-11-24 Cora 0.560 / 0.500 (paper 0.648 / 0.592), Citeseer 0.417 / 0.421 (paper 0.474 /
0.463). 3-9 min per run
on shared cores; trained at commits 89a2d3a..32b4585, evaluated at a3a27ff (Cora) / 32b4585
(Citeseer) with ``--config.seed=S``. The paper's ordering does not hold here: see the
README's m-Mix section. With the official script's windows cut out as sub-graphs
(``--config.method.windows=4 --config.method.window_edges=cut``, commits 5dde05f / 717b6cc,
13-18 min a run on 2 shared AMD EPYC cores): Cora 82.9 ± 0.5 (83.24, 82.30, 83.12; seeds
0-2), level with the control without mixing (83.2 ± 0.7) and below MVGRL (84.1 ± 0.1).
With ``:cora,op`` (all nodes as partners, no threshold: the paper
gives no theta), seed 0: 73.1 (commit 32b4585, 5 min).
"""

from jaxcl.configs import mmix_node


def get_config(arg: str | None = None):
    return mmix_node.make("mp", arg)
