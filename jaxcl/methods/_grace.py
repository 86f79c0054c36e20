"""GRACE on one full graph: two views by edge dropping and feature masking, InfoNCE over nodes.

Trains on the whole graph every step (the node task) and is judged by a logistic regression
on the frozen node embeddings.
"""

from __future__ import annotations

import dataclasses

import jax
import jraph
import numpy as np

from jaxcl import graphs, losses, models
from jaxcl.methods import _paired
from jaxcl.methods._base import Method, check_choice, check_range, register
from jaxcl.methods._windows import check_windows, draw_windows, over_windows

# sparse_layout='auto' is on, on CPU, up to this fraction of nonzero node features.
_AUTO_SPARSE_DENSITY = 0.1


@dataclasses.dataclass(frozen=True)
class GRACEInputs:
    """GRACE's batch in the sparse layout (``sparse_layout``): see :class:`GRACE`.

    Attributes:
      graph: the node graph, ``nodes`` a :class:`~jaxcl.graphs.SparseMatrix`.
      adjacency: :func:`~jaxcl.graphs.adjacency_pattern` of its edges.
    """

    graph: jraph.GraphsTuple
    adjacency: graphs.SparseMatrix


jax.tree_util.register_dataclass(GRACEInputs, data_fields=["graph", "adjacency"], meta_fields=[])


def _graph_and_adjacency(batch):
    if isinstance(batch, GRACEInputs):
        return batch.graph, batch.adjacency
    return batch, None


@register
class GRACE(Method):
    """GRACE: two views by edge dropping and feature masking; InfoNCE over both views' nodes.

    Each step draws two views of the graph (GRACE §3.2.1): view ``k`` drops every directed
    edge with probability ``p_ek`` (PyG's ``dropout_adj``) and zeroes every feature column
    with probability ``p_fk`` (``drop_feature``). A GCN (``config.model.encoder = 'gcn'``,
    ``encoder_depth`` layers of widths ``(2d, ..., d)``, ``activation`` after every layer)
    embeds each view, the head ``fc2(ELU(fc1(.)))`` projects, and the loss is GRACE's: for
    every node, its other view is the positive and all other nodes of both views are
    negatives, cosine similarity over ``temperature``, both directions averaged. That is
    exactly :func:`jaxcl.losses.nt_xent` (tested against a transcription of GRACE's
    ``semi_loss``). :class:`GRACEESCo` (``grace_esco``) replaces the loss by ESCo's.

    Evaluation embeds the unaugmented graph with the encoder (the head is discarded).

    ``windows = B`` (default 0: the whole graph) scores the loss on B runs of
    ``window_size`` consecutive node ids per step (drawn from the step's key, as
    :class:`jaxcl.methods.MVGRL` does), each window's nodes contrasted among themselves and
    the mean taken; message passing stays whole-graph. For graphs whose N x N logits do not
    fit (PPI's 44,906 training nodes; m-Mix: "on large graphs, we have to sample some
    subgraphs"); with PPI's graphs stored one after another, a window lies within one or
    two of them.

    ``sparse_layout`` says how the trainer's node task holds the graph
    (:meth:`node_inputs`): ``'on'`` gives :class:`GRACEInputs` with the node features as a
    :class:`jaxcl.graphs.SparseMatrix` (the first GCN layer's product and its gradient
    read only the nonzero entries) and the edges' :func:`jaxcl.graphs.adjacency_pattern`
    (propagation as sparse products instead of per-edge gathers and scatters); ``'off'``
    the plain graph; ``'auto'`` (the default) ``'on'`` on CPU when at most 10% of the
    features are nonzero, ``'off'`` on accelerators (not measured there). The model and its
    results are the same either way, up to float32 rounding.

    References:
      Zhu et al., "Deep Graph Contrastive Representation Learning" (GRACE), ICML GRL+
      workshop 2020, Eq. 1-2 and Algorithm 1; code CRIPAC-DIG/GRACE ``model.py``,
      ``train.py``. ESCo (ICLR 2022 submission), §5.2.2, Appendix B.3, Table 4.
    """

    name = "grace"
    data_kinds = ("node",)
    defaults = {
        "temperature": 0.5,
        "p_e1": 0.2,
        "p_e2": 0.4,
        "p_f1": 0.3,
        "p_f2": 0.4,
        # GRACE's config.yaml: 'relu' for Cora and PubMed, 'prelu' for CiteSeer.
        "activation": "prelu",
        # on | off | auto: sparse features and propagation (auto: on CPU when <= 10% nonzero).
        "sparse_layout": "auto",
        # the loss on this many windows of window_size consecutive node ids (0: all nodes)
        "windows": 0,
        "window_size": 2000,
    }

    def __init__(self, config):
        super().__init__(config)
        hp = self.hp
        check_choice(self.name, "activation", hp.activation, ("prelu", "relu"))
        check_choice(self.name, "sparse_layout", hp.sparse_layout, ("auto", "on", "off"))
        for key in ("p_e1", "p_e2", "p_f1", "p_f2"):
            if not 0.0 <= hp[key] <= 1.0:
                raise ValueError(f"config.method.{key} = {hp[key]!r}: expected a number in [0, 1]")
        check_range(self.name, hp, "temperature", 0.0, low_open=True)
        check_windows(hp)

    def build(self, spec, rngs):
        m = self.config.model
        encoder = models.grace_encoder(
            spec.num_features,
            out_dim=m.encoder_width,
            num_layers=m.encoder_depth,
            activation=self.hp.activation,
            rngs=rngs,
        )
        widths = (m.head_width,) * (m.head_depth - 1) + (m.embed_dim,)
        head = models.ELUProjection(m.encoder_width, widths, rngs=rngs)
        return models.ContrastiveModel(encoder, head)

    def node_inputs(self, dataset, graph):
        """The graph, or :class:`GRACEInputs` when ``sparse_layout`` resolves to on."""
        if not self.use_sparse_layout(dataset.node_features):
            return graph
        sparse = graph._replace(nodes=graphs.SparseMatrix.from_dense(dataset.node_features))
        return GRACEInputs(sparse, graphs.adjacency_pattern(graph))

    def use_sparse_layout(self, x) -> bool:
        """Whether ``sparse_layout`` asks for the sparse layout, for node features ``x``."""
        choice = self.hp.sparse_layout
        if choice == "auto":
            x = np.asarray(x)
            density = np.count_nonzero(x) / max(x.size, 1)
            return jax.default_backend() == "cpu" and density <= _AUTO_SPARSE_DENSITY
        return choice == "on"

    def features(self, model, x):
        graph, adjacency = _graph_and_adjacency(x)
        return model.encoder(graph, adjacency=adjacency)

    def views(self, graph: jraph.GraphsTuple, key: jax.Array):
        """The two augmented views: ``((x_1, edge_mask_1), (x_2, edge_mask_2))``."""
        hp = self.hp
        ke1, ke2, kf1, kf2 = jax.random.split(key, 4)
        x = graph.nodes
        return (
            (graphs.mask_features(kf1, x, hp.p_f1), graphs.drop_edges(ke1, graph, hp.p_e1)),
            (graphs.mask_features(kf2, x, hp.p_f2), graphs.drop_edges(ke2, graph, hp.p_e2)),
        )

    def contrastive_loss(self, h1: jax.Array, h2: jax.Array, key: jax.Array) -> jax.Array:
        """The loss between the projected views ``h1``, ``h2`` (``[num_nodes, embed_dim]``)."""
        del key
        return losses.nt_xent(h1, h2, temperature=self.hp.temperature)

    def encode_views(self, model, batch, key: jax.Array):
        """``(z_1, z_2, edge_mask_1, graph)``: the encoder's embeddings of the two views drawn
        from ``key`` (see :meth:`views`), the first view's kept edges, and the graph."""
        graph, adjacency = _graph_and_adjacency(batch)
        (x1, m1), (x2, m2) = self.views(graph, key)
        z1 = model.encoder(graph._replace(nodes=x1), edge_mask=m1, adjacency=adjacency)
        z2 = model.encoder(graph._replace(nodes=x2), edge_mask=m2, adjacency=adjacency)
        return z1, z2, m1, graph

    def loss(self, model, batch, key, extra):
        k_views, k_loss = jax.random.split(key)
        z1, z2, _, _ = self.encode_views(model, batch, k_views)
        k_loss, ids = draw_windows(self.hp, k_loss, z1.shape[0])

        def objective(a, b):
            return self.contrastive_loss(model.head(a), model.head(b), k_loss)

        loss = over_windows(objective, z1, z2, ids)
        return loss, {"loss": loss}


@register
class GRACEESCo(GRACE):
    """GRACE with ESCo's loss (ESCo §5.2.2, Table 2): everything as :class:`GRACE` but the loss.

    :func:`jaxcl.losses.esco_loss` with trade-off ``lam``, Gaussian-kernel bandwidth
    ``temperature``, ``rf_method`` random features (``'rff'``, ``'sorf'``, ``'positive'`` or
    ``'exact'``) of ``num_features`` frequencies drawn afresh every step (once per run with
    ``redraw_features=False``), both directions averaged. The negatives: by default both
    views without the anchor itself (``esco_negatives='both'``: GRACE's own set, and ESCo
    App. B.3's "all the other nodes within the graph"; with ``rf_method='exact'`` and
    ``lam = 1 / (2 * temperature)`` the loss is GRACE's), else the other view only
    (``'cross'``, ESCo Eq. 1's pairing) or the anchor's own view (``'intra'``, Eq. 9 as
    printed). Until 2026-11-29 the class default was ``'cross'``; the configs of
    :mod:`jaxcl.configs.grace_node` have always set ``'both'``.

    References:
      ESCo (ICLR 2022 submission), §5.2.2, Appendix B.3, Table 4.
    """

    name = "grace_esco"
    defaults = {
        **GRACE.defaults,
        "lam": 1.2,
        "rf_method": "sorf",
        "num_features": 1024,
        "esco_negatives": "both",
        "redraw_features": True,
    }

    def __init__(self, config):
        super().__init__(config)
        _paired.check_esco(self.name, self.hp)

    def contrastive_loss(self, h1, h2, key):
        return _paired.esco_objective(self.hp, h1, h2, key, self.config.seed)
