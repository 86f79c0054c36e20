"""Graph-level MVGRL and MVGRL + m-Mix: two views of every graph (its normalised adjacency and
its personalised-PageRank diffusion), batched together as one padded graph whose edges carry
both views."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jraph
import numpy as np
from flax import nnx

from jaxcl import graphs, losses, models
from jaxcl.data import GraphDataset
from jaxcl.data._graph_types import trusted_graph
from jaxcl.methods._base import Method, check_choice, register
from jaxcl.methods._encoders import slab_layout_on
from jaxcl.methods._mmix import (
    EVAL_FEATURES,
    EVAL_KEY,
    MixHead,
    check_mixing,
    mix_with,
    with_diversity,
)
from jaxcl.methods._mvgrl_dense import dense_padding_jsd

# Columns of a two-view batch's ``edges``: the diffusion weight S[i, j] and 1 for an edge of
# the graph itself.
DIFFUSION, ADJACENCY = 0, 1


def two_view_dataset(dataset: GraphDataset, *, alpha: float = 0.2):
    """Each graph with the union of its edges and its PPR diffusion's support.

    Returns ``(graphs, weights)`` for :meth:`Method.graph_dataset`: the same graphs (labels,
    node features, order) whose edges are the diffusion's support (self loops included; it
    holds every edge of a connected pair) plus the graph's own edges, and per graph a
    float32 ``[num_edges, 2]`` array: column ``DIFFUSION`` the exact PPR weight
    ``S = alpha (I - (1 - alpha) D^-1/2 (A + I) D^-1/2)^-1`` (MVGRL Eq. 3, per graph as its
    code), column ``ADJACENCY`` 1 where the edge is the graph's own.
    """
    diffused, weights = graphs.ppr_dataset(dataset, alpha=alpha, eps=0.0)
    out_graphs, out_weights = [], []
    for g, d, w in zip(dataset.graphs, diffused.graphs, weights, strict=True):
        n = g.num_nodes
        own = g.senders.astype(np.int64) * n + g.receivers
        diff = d.senders.astype(np.int64) * n + d.receivers
        extra = np.setdiff1d(own, diff)  # own edges outside the support (none when exact)
        keys = np.concatenate([diff, extra])
        col = np.zeros((keys.size, 2), np.float32)
        col[: diff.size, DIFFUSION] = w
        col[:, ADJACENCY] = np.isin(keys, own)
        senders, receivers = (keys // n).astype(np.int32), (keys % n).astype(np.int32)
        out_graphs.append(trusted_graph(senders, receivers, g.node_features, g.label))
        out_weights.append(col)
    ds = GraphDataset(
        dataset.name, tuple(out_graphs), dataset.labels, dataset.num_classes, dataset.num_features
    )
    return ds, tuple(out_weights)


class LayerwiseGCN(nnx.Module):
    """MVGRL's graph encoder: GCN layers, each with its own PReLU; the node embeddings are the
    last layer's, the graph embedding the concatenated per-layer sums over the graph's nodes.

    ``normalize=True`` propagates over the batch's adjacency edges with
    ``D^-1/2 (A + I) D^-1/2``; ``False`` over the diffusion weights as given. ``slabs``:
    through the view's :func:`jaxcl.graphs.edge_pattern` (sparse products) instead of
    per-edge gathers and segment sums; the same function up to float32 rounding.
    """

    def __init__(
        self, in_features: int, width: int, depth: int, *, normalize: bool, slabs: bool, rngs
    ):
        sizes = [in_features] + [width] * depth
        self.layers = nnx.List(
            [
                models.GCN(a, (b,), activation="prelu", normalize=normalize, rngs=rngs)
                for a, b in zip(sizes[:-1], sizes[1:], strict=True)
            ]
        )
        self.normalize = normalize
        self.slabs = slabs

    def __call__(self, batch: jraph.GraphsTuple, pad_rows: jax.Array | None = None):
        """``(last layer's node states, graph readouts)``. ``pad_rows``: optional float
        ``[n_graph]``: per graph, zero rows that the official code's dense batches append (see
        :class:`MVGRLGraph`'s ``dense_padding``). Such a row has no edges, so every layer
        maps it to ``act(b)``, and the readout gains ``pad_rows * act(b)`` per layer."""
        real = graphs.padding_masks(batch)
        edges = batch.edges
        if self.normalize:
            keep = (edges[:, ADJACENCY] > 0) & real.edges
            kw = dict(edge_weight=jnp.ones(batch.senders.shape, jnp.float32), edge_mask=keep)
        else:
            keep = real.edges
            kw = dict(edge_weight=jnp.where(keep, edges[:, DIFFUSION], 0.0))
        if self.slabs:
            # The view's edges as slabs, built once for all layers: the propagation then runs
            # as sparse products, without [num_edges, width] messages.
            kw["adjacency"] = graphs.edge_pattern(
                batch.senders,
                batch.receivers,
                batch.nodes.shape[0],
                edge_mask=keep,
                sorted_receivers=True,
            )
        plain = batch._replace(edges=None)
        h, pooled = batch.nodes, []
        for layer in self.layers:
            h = layer(plain._replace(nodes=h), node_mask=real.nodes, **kw)
            pooled.append(graphs.pool_nodes(batch, h, node_mask=real.nodes, reduction="sum"))
            if pad_rows is not None:
                pooled[-1] = pooled[-1] + pad_rows[:, None] * self.pad_state(layer)
        return h, jnp.concatenate(pooled, axis=-1)

    @staticmethod
    def pad_state(layer: models.GCN) -> jax.Array:
        """``act(b)``: the state of a row without edges or features after ``layer``."""
        return layer.act(layer.layers[0].bias[...])


class MVGRLGraphModel(nnx.Module):
    """Two view encoders, MVGRL's node and graph heads (``None`` for m-Mix), and m-Mix's
    ``g`` and ``p_m``/``p_n`` where they apply."""

    def __init__(self, adjacency, diffusion, *, node_head=None, graph_head=None, mix=None):
        self.adjacency = adjacency
        self.diffusion = diffusion
        self.node_head = node_head
        self.graph_head = graph_head
        self.mix = mix


class _TwoViews(Method):
    data_kinds = ("graph",)
    model_defaults = {}

    def __init__(self, config):
        super().__init__(config)
        if not 0.0 < self.hp.alpha <= 1.0:
            raise ValueError(
                f"config.method.alpha = {self.hp.alpha!r}: expected a number in (0, 1]"
            )
        check_choice(self.name, "sparse_layout", self.hp.sparse_layout, ("auto", "on", "off"))

    @property
    def slabs(self) -> bool:
        """Whether ``sparse_layout`` (``'auto'``: on CPU) asks for slab propagation."""
        return slab_layout_on(self.hp.sparse_layout)

    # The largest graph of the data set (set by graph_dataset, which the task calls before
    # any step): the per-graph layout of m-Mix's node objective.
    max_nodes: int | None = None

    def check_batch(self, batch: jraph.GraphsTuple) -> None:
        """One device for now: the mixing and the per-graph losses take unstacked batches."""
        if batch.senders.ndim != 1:
            raise ValueError(
                f"{self.name} runs on one device for now (config.mesh.data = 1): got a batch "
                f"stacked for {batch.senders.shape[0]} devices"
            )

    def graph_dataset(self, dataset):
        self.max_nodes = max(g.num_nodes for g in dataset.graphs)
        return self.graph_views(dataset)

    def graph_views(self, dataset):
        return two_view_dataset(dataset, alpha=self.hp.alpha)

    def encoders(self, spec, rngs):
        m = self.config.model
        f, w, d = spec.num_features, m.encoder_width, m.encoder_depth
        return (
            LayerwiseGCN(f, w, d, normalize=True, slabs=self.slabs, rngs=rngs),
            LayerwiseGCN(f, w, d, normalize=False, slabs=self.slabs, rngs=rngs),
        )


@register
class MVGRLGraph(_TwoViews):
    """MVGRL for graph classification (the base of m-Mix's Table 2).

    Each view (the graph's normalised adjacency ``D^-1/2 (A + I) D^-1/2``, its exact PPR
    diffusion, ``alpha = 0.2``) has its own GCN of ``encoder_depth`` layers of
    ``encoder_width``, PReLU after each. Node embeddings are the last layer's, passed
    through a node head; graph embeddings are the concatenated per-layer node sums, passed
    through a graph head (each three Linear layers with a linear shortcut, as MVGRL's
    ``MLP``, shared by the two views). The loss is the local-global Jensen-Shannon bound in
    both directions, nodes of one view against graphs of the other
    (:func:`jaxcl.losses.local_global_jsd`, InfoGraph's estimator, which MVGRL borrows);
    evaluation embeds a graph as the sum of its two views' head outputs (MVGRL's
    ``embed``).

    ``sparse_layout`` says how the GCNs propagate: ``'on'`` through each view's edges laid
    out as slabs under ``jit`` (:func:`jaxcl.graphs.edge_pattern`, sparse products), ``'off'``
    by per-edge gathers and segment sums, ``'auto'`` (the default) ``'on'`` on CPU and
    ``'off'`` on accelerators (not measured there). Both compute the same function up to
    float32 rounding; on 2 CPU cores this model (4 x 512, batch 64) pretrains on IMDB-BINARY
    at 308 graphs/s instead of 185 (``experiments/benchmarks/mmix_graph_benchmark.py``).

    Differences from the official code (kavehhassani/mvgrl ``graph/train.py``): the heads use
    ReLU (this project's InfoGraph ``FeedForward``) where MVGRL's use PReLU; the JSD normalisers
    count real nodes only; a fixed number of epochs, evaluated after the last (the code keeps
    the epoch of lowest training loss, patience 20: ``--config.train.early_stopping_patience=20
    --config.eval.last_epochs=1``); the readout sums real nodes only. The code's dense batches
    pad every graph with zero rows to the data set's largest graph (``max_nodes``): a padded
    row's output is ``PReLU(bias)`` in every layer, so each graph embedding carries
    ``(max_nodes - n) PReLU(b_l)``, a term in the graph's size, and its loss keeps the padded
    rows as negatives against the batch's other graphs and counts ``max_nodes`` rows per graph
    in both normalisers. ``dense_padding=True`` does what the code does there, in readout, loss
    and evaluation, without materialising the rows. The code's ``__main__`` runs a grid (layers
    2 / 8 / 12, batch 32-256, epochs 20 / 40 / 100, 5 seeds each) and the paper does not say
    which cell it reports. Node features are the data's (``config.data.node_features``); the code's
    ``graph/dataset.py`` makes them the label one-hot followed by the degree one-hot
    (``'tags+degree'``), or the degree alone for unlabelled sets.

    References:
      Hassani & Khasahmadi, "Contrastive Multi-View Representation Learning on Graphs",
      ICML 2020, §3-4.
    """

    name = "mvgrl_graph"
    defaults = {"alpha": 0.2, "sparse_layout": "auto", "dense_padding": False}

    def build(self, spec, rngs):
        w, d = self.config.model.encoder_width, self.config.model.encoder_depth
        adjacency, diffusion = self.encoders(spec, rngs)
        ff = lambda n_in: models.FeedForward(n_in, width=w, depth=3, shortcut=True, rngs=rngs)  # noqa: E731
        return MVGRLGraphModel(adjacency, diffusion, node_head=ff(w), graph_head=ff(w * d))

    def _pad_rows(self, batch: jraph.GraphsTuple) -> jax.Array | None:
        """Per graph, the zero rows that pad it to the data set's largest graph (or None)."""
        if not self.hp.dense_padding:
            return None
        if self.max_nodes is None:
            raise ValueError(
                f"{self.name}: config.method.dense_padding=True needs the data set's largest "
                "graph: call method.graph_dataset(dataset) before the loss (the task does)"
            )
        real = graphs.padding_masks(batch)
        return jnp.where(real.graphs, self.max_nodes - batch.n_node, 0).astype(jnp.float32)

    def loss(self, model, batch, key, extra):
        del key
        self.check_batch(batch)
        real = graphs.padding_masks(batch)
        ids = graphs.node_graph_ids(batch)
        pads = self._pad_rows(batch)
        nodes_a, graphs_a = model.adjacency(batch, pads)
        nodes_b, graphs_b = model.diffusion(batch, pads)
        if pads is None:
            kw = dict(node_mask=real.nodes, graph_mask=real.graphs)
            loss = losses.local_global_jsd(
                model.node_head(nodes_a), model.graph_head(graphs_b), ids, **kw
            ) + losses.local_global_jsd(
                model.node_head(nodes_b), model.graph_head(graphs_a), ids, **kw
            )
            return loss, {"loss": loss}
        loss = 0.0
        for view, nodes, other_graphs in (
            (model.adjacency, nodes_a, graphs_b),
            (model.diffusion, nodes_b, graphs_a),
        ):
            pad_state = LayerwiseGCN.pad_state(view.layers[-1])
            loss = loss + dense_padding_jsd(
                model.node_head(nodes),
                model.graph_head(other_graphs),
                ids,
                real,
                pads,
                model.node_head(pad_state[None])[0],
                self.max_nodes,
            )
        return loss, {"loss": loss}

    def features(self, model, batch):
        pads = self._pad_rows(batch)
        return model.graph_head(model.adjacency(batch, pads)[1]) + model.graph_head(
            model.diffusion(batch, pads)[1]
        )


OBJECTIVES = ("both", "node", "graph")


@register
class MVGRLGraphMix(_TwoViews):
    """MVGRL + m-Mix for graph classification (m-Mix Tables 2, 5 and 9).

    The two views are encoded as :class:`MVGRLGraph`'s (one GCN layer each in the paper's
    setup), giving node embeddings ``z^a``, ``z^b``. The adjacency view's node embeddings
    are mixed among each node's neighbours (m-mix-wp, sparse over the batch's adjacency
    edges, so never across graphs; ``mixing`` as :class:`jaxcl.methods.MVGRLMix`) and
    passed through ``g``: the "attentive branch" ``g(z_hat^a)``. Graph embeddings are node
    sums: ``h^a`` of the attentive branch, ``h^b`` of ``z^b``. The objective is Eq. 9: the
    graph-level term (:func:`jaxcl.losses.mmix_graph_loss`, cosine, ``temperature``) plus
    the mean over the batch's graphs of each graph's node objective
    (:func:`jaxcl.losses.mmix_node_loss_per_graph`: nodes contrasted within their graph),
    plus ``diversity`` times Eq. 6 for mp-mix (inside each graph's ``J_node`` as Eq. 9 has
    it: each graph's mean, averaged over the graphs; until 2026-11-29 one mean over all the
    batch's nodes, which weighed large graphs more). ``objective='node'`` / ``'graph'`` keep one
    of the two terms (Table 9's ablation). Evaluation embeds a graph as ``h^a + h^b``
    (``eval_features='mixed'``, the paper's Table 10; random-mix from a fixed key there),
    or, with ``'encoder'``, as the sum of both views' per-layer node sums (MVGRL's).
    ``sparse_layout`` as :class:`MVGRLGraph`, for the GCNs and the mixing (the mixers'
    ``slabs``).

    Our reading, and departures from the official code (Sherrylone/M-Mix ``graph/``): the
    code contrasts nodes across the whole batch (Eq. 9 writes ``J_node(G_i)`` per graph:
    we follow the paper), with cross-view logits only and its node term in one direction
    (we take Eq. 7 and 9's negatives from both views, and the node term both ways), mixes
    inside the GCN layer and adds the diversity distance (the
    node script subtracts it; we follow the paper's sign, ``diversity < 0`` gives the
    code's), detaches the mixing weights
    (we do not), and reads graphs out by their mean (we keep MVGRL's sum; cosine
    similarity makes the loss indifferent to it, not the SVM). With several GCN layers the
    graph term uses the last layer only. A fixed number of epochs, evaluated after
    the last (the code scores every 10 epochs; the paper does not say which it reports).

    References:
      Zhang et al., "m-Mix", KDD 2022, Eq. 6-9, Appendix A, Table 9.
    """

    name = "mvgrl_graph_mmix"
    defaults = {
        "alpha": 0.2,
        "mixing": "mp",
        "self_weight": 0.2,
        "diversity": 1.0,
        "temperature": 1.0,
        "objective": "both",
        "eval_features": "mixed",  # or "encoder" (see the class docstring)
        "sparse_layout": "auto",
    }

    def __init__(self, config):
        super().__init__(config)
        check_mixing(self.name, self.hp, self.defaults)
        check_choice(self.name, "objective", self.hp.objective, OBJECTIVES)
        check_choice(self.name, "eval_features", self.hp.eval_features, EVAL_FEATURES)
        if self.hp.objective == "graph" and self.hp.diversity:
            raise ValueError(  # Eq. 9: L_div is part of J_node, which 'graph' leaves out
                f"config.method.diversity = {self.hp.diversity!r}: expected 0 with "
                "objective='graph' (Eq. 9 puts the diversity loss inside J_node)"
            )

    def build(self, spec, rngs):
        adjacency, diffusion = self.encoders(spec, rngs)
        width = self.config.model.encoder_width
        mix = MixHead(width, projections=self.hp.mixing == "mp", rngs=rngs)
        return MVGRLGraphModel(adjacency, diffusion, mix=mix)

    def mix(self, model, z, batch, key):
        """The hard negatives of the adjacency view's node embeddings (neighbours only)."""
        real = graphs.padding_masks(batch)
        return mix_with(
            self.hp,
            model.mix,
            z,
            key,
            senders=batch.senders,
            receivers=batch.receivers,
            edge_mask=(batch.edges[:, ADJACENCY] > 0) & real.edges,
            where=real.nodes,
            slabs=self.slabs,
        )

    def branches(self, model, batch, key):
        """``(hard, z_b, z_a)``: the attentive branch ``g(mix(z^a))``, view b's nodes and
        view a's own (the diversity loss reads them)."""
        z_a, _ = model.adjacency(batch)
        z_b, _ = model.diffusion(batch)
        return model.mix.g(self.mix(model, z_a, batch, key)), z_b, z_a

    def loss(self, model, batch, key, extra):
        hp = self.hp
        self.check_batch(batch)
        real = graphs.padding_masks(batch)
        hard, z_b, z_a = self.branches(model, batch, key)
        metrics, loss = {}, 0.0
        if hp.objective in ("both", "graph"):
            pool = lambda h: graphs.pool_nodes(batch, h, node_mask=real.nodes)  # noqa: E731
            j_graph = losses.mmix_graph_loss(
                pool(hard), pool(z_b), temperature=hp.temperature, where=real.graphs
            )
            metrics["graph_contrast"] = j_graph
            loss = loss + j_graph
        if hp.objective in ("both", "node"):
            j_node = losses.mmix_node_loss_per_graph(
                hard,
                z_b,
                graphs.node_graph_ids(batch),
                num_graphs=batch.n_node.shape[0],
                temperature=hp.temperature,
                node_mask=real.nodes,
                max_nodes=self.max_nodes,
            )
            metrics["node_contrast"] = j_node
            loss = loss + j_node
        # Eq. 9 puts L_div inside each graph's J_node: each graph's mean, averaged over graphs.
        ids = graphs.node_graph_ids(batch)
        sizes = jax.ops.segment_sum(
            real.nodes.astype(jnp.float32), ids, num_segments=batch.n_node.shape[0]
        )
        weights = 1.0 / jnp.maximum(sizes[ids], 1.0)
        return with_diversity(hp, model.mix, z_a, loss, metrics, where=real.nodes, weights=weights)

    def features(self, model, batch):
        if self.hp.eval_features == "encoder":
            return model.adjacency(batch)[1] + model.diffusion(batch)[1]
        hard, z_b, _ = self.branches(model, batch, jax.random.key(EVAL_KEY))
        real = graphs.padding_masks(batch)
        return graphs.pool_nodes(batch, hard + z_b, node_mask=real.nodes)
