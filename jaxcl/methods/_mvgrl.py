"""MVGRL on one full graph: node-graph mutual information across an adjacency and a
personalised-PageRank diffusion view."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import jraph
import numpy as np
import optax
from absl import logging

from jaxcl import graphs, models
from jaxcl.methods._base import Method, check_choice, check_range, register
from jaxcl.methods._windows import check_windows, draw_windows


@dataclasses.dataclass(frozen=True)
class MVGRLInputs:
    """MVGRL's batch: the graph (adjacency view) and its PPR diffusion (second view).

    Attributes:
      graph: the node graph; ``nodes`` are the features.
      diffusion: the diffusion matrix ``S``: a dense ``[N, N]`` array (``S[i, j]`` weighs
        ``j``'s message to ``i``), or a ``GraphsTuple`` whose ``edges`` hold the weights of a
        sparsified ``S``.
    """

    graph: jraph.GraphsTuple
    diffusion: jax.Array | jraph.GraphsTuple


jax.tree_util.register_dataclass(MVGRLInputs, data_fields=["graph", "diffusion"], meta_fields=[])


def corrupt(key: jax.Array, x: jax.Array) -> jax.Array:
    """DGI's corruption: the rows (nodes) of ``x`` shuffled by a random permutation."""
    return x[jax.random.permutation(key, x.shape[0])]


def mvgrl_logits(
    model: models.MVGRLModel,
    inputs: MVGRLInputs,
    key: jax.Array,
    ids: jax.Array | None = None,
    *,
    cut: bool = False,
):
    """The discriminator's logits ``(positive [2N], negative [2N])`` for one corruption.

    Positives pair each node of one view with the summary of the other view
    (``D(h_diff, c_adj)``, ``D(h_adj, c_diff)``); negatives pair the nodes of the corrupted
    (row-shuffled) features with the same summaries. Summaries are ``sigmoid(mean_nodes h)``.
    With ``ids`` (``[windows, size]`` node ids, :func:`node_windows`) each window is scored
    on its own, with its own summaries: logits ``[windows, 2 size]``. With ``cut`` each
    window is also encoded as its own sub-graph (:meth:`~jaxcl.models.MVGRLModel.embed_window`)
    and corrupted by one permutation of the window's rows shared by all windows, as MVGRL's
    code.
    """
    d = model.discriminator

    def score(h1, h2, h3, h4):
        c1 = jax.nn.sigmoid(jnp.mean(h1, axis=0))
        c2 = jax.nn.sigmoid(jnp.mean(h2, axis=0))
        positive = jnp.concatenate([d(h2, c1), d(h1, c2)])
        negative = jnp.concatenate([d(h4, c1), d(h3, c2)])
        return positive, negative

    if cut:
        size = ids.shape[1]
        perm = jax.random.permutation(key, size)
        x = jnp.asarray(inputs.graph.nodes)

        def window(start):
            shuffled = x.at[start + jnp.arange(size)].set(x[start + perm])
            h1, h2 = model.embed_window(inputs, start, size)
            h3, h4 = model.embed_window(inputs, start, size, shuffled)
            return score(h1, h2, h3, h4)

        return jax.vmap(window)(ids[:, 0])
    h1, h2 = model.embed(inputs)
    h3, h4 = model.embed(inputs, corrupt(key, inputs.graph.nodes))
    if ids is None:
        return score(h1, h2, h3, h4)
    return jax.vmap(lambda w: score(h1[w], h2[w], h3[w], h4[w]))(ids)


@register
class MVGRL(Method):
    """MVGRL: node-graph mutual information across an adjacency and a PPR-diffusion view.

    The adjacency view propagates with ``D^-1/2 (A + I) D^-1/2`` (``jaxcl.models.GCN``); the
    diffusion view with MVGRL's personalised PageRank ``S = alpha (I - (1 - alpha) T)^-1``
    (Eq. 3), computed once on the host by :func:`jaxcl.graphs.ppr_diffusion` (exactly for
    graphs up to 4096 nodes; entries below ``ppr_eps`` dropped). ``diffusion='dense'``
    multiplies by the dense ``S`` as MVGRL's code does; ``'sparse'`` propagates along the
    kept entries as edges (for large graphs, with ``ppr_eps > 0``; or the entries
    ``ppr_match_degree`` keeps, with ``ppr_eps = 0``). Each view has its own GCN
    (``config.model.encoder_depth`` layers of ``encoder_width``, PReLU; MVGRL's node model is
    one layer of 512). The summary of a view is ``sigmoid(mean of its node embeddings)``; a
    bilinear discriminator scores nodes of one view against the summary of the other,
    negatives come from the same encoders applied to row-shuffled features, and the loss is
    binary cross-entropy (``BCEWithLogitsLoss``, mean over the ``4N`` logits). Evaluation
    embeds with the sum of the two views' node embeddings (MVGRL's ``embed``).

    Differences from the official code (kavehhassani/mvgrl ``node/``), all documented choices:

    * windows: MVGRL's code trains on 4 random windows of 2000 consecutive node ids per
      step (rows and columns of the normalised matrices, not renormalised). By default
      (``windows = 0``) every step is the whole graph; ``windows = B`` with ``window_size =
      s`` scores B such windows per step (:func:`node_windows`, drawn from the step's key),
      each with its own summaries, the loss averaged over them, and the encoders still
      propagate over the whole graph; ``window_edges = 'cut'`` encodes each window as the
      code does, as its own sub-graph (the rows and columns of the normalised adjacency and
      of ``S``, every edge leaving the window cut, not renormalised), with the window's rows
      shuffled for the negatives;
    * early stopping on the training loss (patience 20, up to 3000 epochs, the lowest-loss
      epoch's parameters evaluated) is the trainer's option, off in the configs:
      ``--config.train.early_stopping_patience=20 --config.train.epochs=3000``; without
      it the trainer runs ``config.train.epochs`` and evaluates the last model;
    * the adjacency view uses ``A + I``; the code's ``normalize_adj(adj + sp.eye(n))``
      adds the identity twice (``A + 2I``), which the paper does not describe:
      ``self_loop_weight = 2`` normalises ``A + 2I`` as the code;
    * Citeseer's preprocessing in the code (``node/dataset.py``) is two settings, off here
      and on in the Citeseer configs: ``ppr_match_degree = True`` drops the entries of
      ``S`` below the threshold among ``1e-5 ... 1e-2`` that keeps about as many entries per
      node as the graph's mean degree (:func:`jaxcl.graphs.degree_matched_eps`; instead of
      ``ppr_eps``), and ``ppr_minmax = True`` scales each column of ``S`` to ``[0, 1]``
      (:func:`jaxcl.graphs.minmax_columns`, scikit-learn's ``MinMaxScaler``). Both need the
      exact ``S`` (graphs up to 4096 nodes).

    References:
      Hassani & Khasahmadi, "Contrastive Multi-View Representation Learning on Graphs",
      ICML 2020, §3 and Eq. 3; code kavehhassani/mvgrl ``node/train.py``, ``utils.py``;
      Velickovic et al., "Deep Graph Infomax", ICLR 2019 (readout, discriminator,
      corruption).
    """

    name = "mvgrl"
    model_defaults = {}
    data_kinds = ("node",)
    # windows: node windows scored per step (0 = the whole graph), of window_size nodes each
    # window_edges: "keep" (propagate over the whole graph) or "cut" (each window encoded
    # as its own sub-graph, MVGRL's code)
    # ppr_match_degree / ppr_minmax: MVGRL's Citeseer preprocessing of S (see above)
    # self_loop_weight: w of the adjacency view's D^-1/2 (A + w I) D^-1/2 (the code's: 2)
    defaults = {"alpha": 0.2, "ppr_eps": 0.0, "diffusion": "dense", "windows": 0,
                "window_size": 2000, "window_edges": "keep", "ppr_match_degree": False,
                "ppr_minmax": False, "self_loop_weight": 1.0}  # fmt: skip

    def __init__(self, config):
        super().__init__(config)
        check_choice(self.name, "diffusion", self.hp.diffusion, ("dense", "sparse"))
        if not 0.0 < self.hp.alpha <= 1.0:
            raise ValueError(
                f"config.method.alpha = {self.hp.alpha!r}: expected a number in (0, 1]"
            )
        check_range(self.name, self.hp, "ppr_eps", 0.0)
        # (ppr_match_degree thresholds the exact S itself: then sparse needs no ppr_eps)
        sparse = self.hp.diffusion == "sparse" and not self.hp.ppr_match_degree
        if sparse and self.hp.ppr_eps == 0:
            raise ValueError(
                f"config.method.ppr_eps = {self.hp.ppr_eps!r}: expected > 0 with "
                "diffusion='sparse' (otherwise every pair of connected nodes is an edge) "
                "unless ppr_match_degree = True"
            )
        # the weight of I in the adjacency view's A + w I
        check_range(self.name, self.hp, "self_loop_weight", 0.0, low_open=True)
        check_windows(self.hp)
        check_choice(self.name, "window_edges", self.hp.window_edges, ("keep", "cut"))
        if self.hp.window_edges == "cut" and not self.hp.windows:
            raise ValueError(
                "config.method.window_edges = 'cut' encodes each node window as its own "
                "sub-graph: expected config.method.windows > 0, got 0 (the whole graph)"
            )
        if self.hp.ppr_match_degree and self.hp.ppr_eps != 0:
            raise ValueError(
                f"config.method.ppr_eps = {self.hp.ppr_eps!r} with ppr_match_degree = True: "
                "the threshold is chosen from the mean degree; set ppr_eps = 0"
            )

    # The adjacency view's activation (after every GCN layer); MVGRL + m-Mix can move it.
    adjacency_activation = "prelu"

    def step_windows(self, key: jax.Array, inputs: MVGRLInputs):
        """``(key, ids)``: this step's ``[windows, window_size]`` node ids and the key left
        for the rest of the step; ``(key, None)`` for the whole graph, the key untouched (so
        that ``windows = 0`` draws the random numbers it drew before windows existed)."""
        return draw_windows(self.hp, key, inputs.graph.nodes.shape[0])

    @property
    def cut_windows(self) -> bool:
        """Each window encoded as its own sub-graph (``window_edges = 'cut'``)."""
        return self.hp.window_edges == "cut"

    def build(self, spec, rngs):
        num_features = spec.num_features
        m = self.config.model
        widths = (m.encoder_width,) * m.encoder_depth
        adjacency = models.GCN(
            num_features,
            widths,
            activation=self.adjacency_activation,
            add_self_loops=self.hp.self_loop_weight,
            rngs=rngs,
        )
        if self.hp.diffusion == "dense":
            diffusion = models.DenseGCN(num_features, widths, rngs=rngs)
        else:
            diffusion = models.GCN(
                num_features, widths, activation="prelu", normalize=False, rngs=rngs
            )
        return models.MVGRLModel(adjacency, diffusion, models.Bilinear(m.encoder_width, rngs=rngs))

    def node_inputs(self, dataset, graph):
        n = dataset.num_nodes
        exact = self.hp.ppr_match_degree or self.hp.ppr_minmax
        if exact and n > graphs.DENSE_DIFFUSION_LIMIT:
            raise ValueError(
                f"config.method.ppr_match_degree / ppr_minmax need the exact diffusion, "
                f"computed for graphs of at most {graphs.DENSE_DIFFUSION_LIMIT} nodes; "
                f"{dataset.name!r} has {n}"
            )
        d = graphs.ppr_diffusion(
            dataset.senders,
            dataset.receivers,
            n,
            alpha=self.hp.alpha,
            eps=self.hp.ppr_eps,
            method="exact" if exact else "auto",
        )
        if self.hp.ppr_match_degree:
            mean_degree = np.count_nonzero(dataset.senders != dataset.receivers) / n
            eps = graphs.degree_matched_eps(d, n, mean_degree)
            keep = d.weights >= eps
            d = graphs.Diffusion(d.senders[keep], d.receivers[keep], d.weights[keep])
            logging.info(
                "mvgrl: ppr_match_degree kept the diffusion's entries >= %g: %.2f per node "
                "(mean degree %.2f)",
                eps,
                keep.sum() / n,
                mean_degree,
            )
        if self.hp.ppr_minmax:
            d = graphs.minmax_columns(d, n)
        if self.hp.diffusion == "dense":
            s = np.zeros((dataset.num_nodes, dataset.num_nodes), np.float32)
            s[d.receivers, d.senders] = d.weights
            return MVGRLInputs(graph, s)
        return MVGRLInputs(
            graph,
            graphs.node_graph(
                dataset, senders=d.senders, receivers=d.receivers, edge_weights=d.weights
            ),
        )

    def loss(self, model, inputs: MVGRLInputs, key, extra):
        key, ids = self.step_windows(key, inputs)
        positive, negative = mvgrl_logits(model, inputs, key, ids, cut=self.cut_windows)
        loss = 0.5 * (
            jnp.mean(optax.sigmoid_binary_cross_entropy(positive, jnp.ones_like(positive)))
            + jnp.mean(optax.sigmoid_binary_cross_entropy(negative, jnp.zeros_like(negative)))
        )
        accuracy = 0.5 * (jnp.mean(positive > 0) + jnp.mean(negative < 0))
        return loss, {"loss": loss, "disc_accuracy": accuracy}

    def features(self, model, inputs: MVGRLInputs):
        h_adj, h_diff = model.embed(inputs)
        return h_adj + h_diff
