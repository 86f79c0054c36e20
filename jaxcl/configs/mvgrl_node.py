"""MVGRL on Cora (Hassani & Khasahmadi, ICML 2020, Table 2; m-Mix Table 1, row MVGRL).

The node setup of MVGRL's code (kavehhassani/mvgrl ``node/train.py``): features divided by
their row sums (DGL's citation loaders do this), one GCN layer of 512 units with PReLU per
view, the adjacency view ``D^-1/2 (A + I) D^-1/2`` and the exact dense PPR diffusion
(``alpha = 0.2``; on Citeseer thresholded and scaled as the code does:
:func:`apply_citeseer_diffusion`), Adam at lr 0.001 without weight decay, binary
cross-entropy on the bilinear discriminator's logits. Evaluation on the public Planetoid
split (MVGRL follows DGI) with MVGRL's classifier on the frozen embeddings ``h_adj +
h_diff``: the mean test accuracy of 50 logistic regressions, each 300 full-batch Adam steps
at lr 0.01 on the raw embeddings (weight decay 0.01 on Citeseer), scored after the last step
(:func:`apply_mvgrl_classifier`; GRACE's classifier, 5000 steps on unit-norm embeddings
selected on the validation nodes, with ``--config.eval.node_classifier_steps=5000
--config.eval.node_classifier_eval_every=20 --config.eval.node_classifier_normalize=l2
--config.eval.node_classifier_weight_decay=0``). Before commit fd540ad these configs used
GRACE's classifier; on the same embeddings it scores MVGRL's 0.8 points lower on Cora and
the m-Mix rows within ±0.7, and on Citeseer (without the weight decay) m-Mix's mp-mix 2.0
lower (``experiments/mmix/node_curves.py``, the README's m-Mix section).

What differs from the official code is listed in :class:`jaxcl.methods.MVGRL`: the full
graph every step instead of 4 sampled windows of 2000 nodes (``--config.method.windows=4``
scores such windows; on Cora, seed 0, it changed MVGRL by +0.1 and the m-Mix rows by -0.1 and
-0.2 points: the README's m-Mix section), and a fixed number of epochs instead of early
stopping on the training loss (patience 20, at most 3000 epochs; the trainer's
``--config.train.early_stopping_patience=20 --config.train.epochs=3000`` runs the code's).

Variants: none (``epochs`` below) or ``quick`` (a few epochs at width 64: a smoke test).
Data: as :mod:`jaxcl.configs.grace_node` (``$JAXCL_DATA_DIR``, else ``../shared/data``).
"""

from __future__ import annotations

import ml_collections

from jaxcl.configs.common import default_data_dir, parse_arg
from jaxcl.training import base_config


def make(
    dataset: str = "cora", arg: str | None = None, *, epochs: int = 300
) -> ml_collections.ConfigDict:
    """MVGRL's node-classification config for ``dataset``; ``arg`` empty or ``'quick'``."""
    if dataset not in ("cora", "citeseer", "pubmed"):
        raise ValueError(f"unknown data set {dataset!r}; use 'cora', 'citeseer' or 'pubmed'")
    choice = parse_arg(arg, variants=("quick",))
    c = base_config(dataset, "mvgrl", optimizer="adam_l2")
    apply_node_setup(c, lr=1e-3, epochs=epochs, width=512)
    if dataset == "pubmed":
        apply_pubmed(c, quick=choice.variant == "quick")
    if choice.variant == "quick":
        c.model.encoder_width = 64
        c.train.epochs = 20
        c.train.log_every_steps = 10
    return c


def apply_node_setup(c: ml_collections.ConfigDict, *, lr: float, epochs: int, width: int):
    """MVGRL's node setup, shared with the m-Mix node rows: row-normalised features, one
    GCN layer of ``width`` per view, Adam at a constant ``lr`` without weight decay, the
    public Planetoid split with 50 logistic regressions, and k-means clustering."""
    c.data.data_dir = default_data_dir("planetoid")
    c.data.normalize_features = True
    c.model.encoder_depth = 1
    c.model.encoder_width = width
    c.optim.schedule = "constant"
    c.optim.warmup_epochs = 0.0
    c.optim.lr = lr
    c.optim.weight_decay = 0.0
    c.train.epochs = epochs
    c.train.log_every_steps = 25
    c.train.checkpoint_every_steps = 100
    c.eval.node_split = "public"
    c.eval.node_clustering = True  # NMI / ARI of k-means (m-Mix Table 8)
    apply_mvgrl_classifier(c)
    if c.data.name == "citeseer":
        apply_citeseer_diffusion(c)


def apply_citeseer_diffusion(c: ml_collections.ConfigDict) -> None:
    """MVGRL's code's Citeseer view (``node/dataset.py``; m-Mix's node script loads its data
    with the same ``load``): the PPR entries below the threshold of ``1e-5 ... 1e-2`` that
    keeps about the mean degree per node dropped (``1e-2`` on Citeseer: 8.6 entries per
    node), then each column scaled to ``[0, 1]``. Neither paper describes it;
    ``--config.method.ppr_match_degree=False --config.method.ppr_minmax=False`` gives the
    plain exact ``S`` that these configs used up to commit de471c8."""
    c.method.ppr_match_degree = True
    c.method.ppr_minmax = True


def apply_mvgrl_classifier(c: ml_collections.ConfigDict) -> None:
    """The node classifier of MVGRL's and m-Mix's code (``node/train.py``, ``node/main.py``):
    the mean test accuracy of 50 logistic regressions, each 300 full-batch Adam steps at lr
    0.01 (weight decay 0.01 on Citeseer, else 0) on the raw embeddings, scored after the last
    step (no selection on the validation nodes)."""
    c.eval.node_classifier_runs = 50
    c.eval.node_classifier_steps = 300
    c.eval.node_classifier_eval_every = 300  # one evaluation: the last step
    c.eval.node_classifier_normalize = "none"
    c.eval.node_classifier_weight_decay = 0.01 if c.data.name == "citeseer" else 0.0
    c.repeats = 1


def apply_pubmed(c: ml_collections.ConfigDict, *, quick: bool) -> None:
    """Pubmed for MVGRL and the m-Mix node rows: its files are not here, so a random graph
    of its size (a tenth with ``quick``), and the PPR view truncated at 1e-4 as sparse
    edges (the dense 19,717^2 matrix would be 1.5 GiB and an O(N^3) inverse)."""
    c.data.synthetic = True
    if quick:
        c.data.synthetic_scale = 0.1
    c.method.update(diffusion="sparse", ppr_eps=1e-4)
