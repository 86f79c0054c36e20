"""MVGRL + m-Mix on Cora and Citeseer (m-Mix, Zhang et al., KDD 2022, Tables 1, 3, 5).

One row of the paper per ``row``: ``random`` (random-mix), ``binary`` (binary-mix), ``mo``
(mo-mix, ``C = 0.2``), ``mp_nodiv`` (mp-mix without the diversity loss) and ``mp`` (mp-mix).
Partners: the graph's neighbours (m-mix-wp, the paper's default "m-mix") or, with the
option ``op``, every node (m-mix-op, Table 3; no threshold unless
``--config.method.threshold`` is set: the paper gives no value for theta).

The setup, Appendix A where it says, MVGRL's where it does not: features divided by their
row sums; one GCN layer per view (adjacency ``D^-1/2 (A + I) D^-1/2``, exact dense PPR
diffusion with ``alpha = 0.2``) of ``width`` units with PReLU; Adam at 3e-4 without weight
decay; ``tau = 1``; the full graph every step for a fixed number of epochs (the paper: up to
2000 with early stopping; the official code's early stopping is commented out). Evaluation:
the public Planetoid split, the mean of 50 logistic regressions (the paper's protocol) on the
mixed branch plus view b, ``g(mix(z^a)) + z^b`` (the paper's Table 10;
``--config.method.eval_features=encoder`` for ``z^a + z^b``), and k-means NMI / ARI (Table 8); the
pretraining is repeated over seeds with ``--config.seed``.

Variants: none, ``quick`` (a smoke test: 10 epochs at width 32).
Data: as :mod:`jaxcl.configs.grace_node`.
"""

from __future__ import annotations

import ml_collections

from jaxcl.configs import grace_node
from jaxcl.configs.common import parse_arg
from jaxcl.configs.mvgrl_node import apply_node_setup
from jaxcl.training import base_config, conform

ROWS = {
    "random": dict(mixing="random", diversity=0.0),
    "binary": dict(mixing="binary", diversity=0.0),
    "mo": dict(mixing="mo", diversity=0.0),
    "mp_nodiv": dict(mixing="mp", diversity=0.0),
    "mp": dict(mixing="mp", diversity=1.0),
}
DATASETS = ("cora", "citeseer")


def make(row: str, arg: str | None = None, *, epochs: int = 200, width: int = 512):
    """The config of one m-Mix row; ``arg`` names the data set, optionally ``op``/``quick``."""
    if row not in ROWS:
        raise ValueError(f"unknown m-Mix row {row!r}; rows: {sorted(ROWS)}")
    choice = parse_arg(
        arg, datasets=DATASETS, variants=("quick",), options=("op",), dataset_required=True
    )
    c = base_config(choice.dataset, "mvgrl_mmix", optimizer="adam_l2")
    apply_node_setup(c, lr=3e-4, epochs=epochs, width=width)
    c.method.update(ROWS[row])
    c.method.partners = choice.option or "wp"
    if choice.variant == "quick":
        c.model.encoder_width = 32
        c.train.epochs = 10
        c.train.log_every_steps = 5
    return c


def make_grace(arg: str | None = None) -> ml_collections.ConfigDict:
    """GRACE + mp-mix (m-Mix Table 4; ``arg``: ``cora`` or ``citeseer``, optionally
    ``quick``): GRACE's row of :mod:`jaxcl.configs.grace_node` (ESCo Table 4's settings)
    with its first view mixed by mp-mix and the diversity loss. The paper reports this row
    on DBLP and PPI only, which are not available here."""
    choice = parse_arg(arg, datasets=DATASETS, variants=("quick",), dataset_required=True)
    quick = "quick" if choice.variant == "quick" else None
    c = grace_node.make(choice.dataset, quick)
    c.method.name = "grace_mmix"
    c = conform(c)
    c.method.update(mixing="mp", diversity=1.0)
    return c
