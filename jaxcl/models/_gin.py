"""GIN, the graph-classification encoder (InfoGraph, DACL §5.3), on ``jraph.GraphsTuple``.

Padding-aware: padding nodes and edges of a batch from :mod:`jaxcl.graphs` can reach no
real node (padding edges join padding nodes only), batch norm takes its statistics over
real nodes only (``BatchNorm(..., mask=...)``), padding rows are zeroed, and sum
pooling never sees them. Edges are aggregated with sorted segment sums, relying on the
receiver-sorted layout every :mod:`jaxcl.graphs` batch has; pass ``sorted_receivers=False``
for graphs built elsewhere.

A stacked batch (:class:`~jaxcl.graphs.GraphBatcher` with ``num_shards``: ``S`` padded
sub-batches on a leading axis) runs through the same layers with node states
``[S, N, F]``: message passing and pooling per sub-batch, batch norm over the real nodes
of all sub-batches (the statistics of the unstacked batch of the same graphs), and the
outputs flattened to ``[S * N, ...]`` nodes and ``[S * G, ...]`` graphs, the layout of
:func:`~jaxcl.graphs.padding_masks` and :func:`~jaxcl.graphs.node_graph_ids`. With the
leading axis sharded over devices, each device passes messages in its own sub-batch and
jit turns the batch-norm statistics into cross-device reductions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jraph
from flax import nnx

from jaxcl import _checks as checks
from jaxcl.graphs import (
    SparseMatrix,
    aggregate_edges,
    edge_pattern,
    gather_nodes,
    padding_masks,
    pool_nodes,
    sparse_matmul,
)
from jaxcl.models._batch_norm import BatchNorm
from jaxcl.models._mlp import BN_MOMENTUM


def _zero_rows(h: jax.Array, node_mask: jax.Array | None) -> jax.Array:
    if node_mask is None:
        return h
    return jnp.where(node_mask[..., None], h, jnp.zeros((), h.dtype))


def _node_mask(mask: jax.Array | None, h: jax.Array) -> jax.Array | None:
    """``mask`` shaped as ``h``'s rows (``[N]``, or ``[S, N]`` from a flattened one)."""
    return None if mask is None else jnp.reshape(mask, h.shape[:-1])


class GINLayer(nnx.Module):
    """One GIN layer: ``h' = BN(ReLU(MLP((1 + eps) h + sum_{j -> i} h_j)))``.

    The MLP is ``Linear -> ReLU -> Linear`` and batch norm follows the activation, the
    layout of InfoGraph's GIN encoder (which DACL §5.3 follows).

    Args:
      in_features: input width.
      width: hidden and output width.
      eps: the centre-node weight ``eps`` (GIN-0: 0).
      learn_eps: make ``eps`` a trainable parameter (GIN-eps) instead of a constant.
      batch_norm: batch norm (masked to real nodes) after the activation.
      bn_momentum: decay of the batch-norm running averages.
      sorted_receivers: edges are sorted by receiver (true for :mod:`jaxcl.graphs`).
      kernel_init: initialiser of both linear layers' kernels; default flax's
        (LeCun-normal). Biases start at zero.
      rngs: ``nnx.Rngs`` for the initial weights.
    """

    def __init__(
        self,
        in_features: int,
        width: int,
        *,
        eps: float = 0.0,
        learn_eps: bool = False,
        batch_norm: bool = True,
        bn_momentum: float = BN_MOMENTUM,
        sorted_receivers: bool = True,
        kernel_init: nnx.Initializer | None = None,
        rngs: nnx.Rngs,
    ):
        init = {} if kernel_init is None else {"kernel_init": kernel_init}
        self.linear1 = nnx.Linear(in_features, width, rngs=rngs, **init)
        self.linear2 = nnx.Linear(width, width, rngs=rngs, **init)
        self.eps = nnx.Param(jnp.asarray(eps, jnp.float32)) if learn_eps else float(eps)
        self.norm = BatchNorm(width, momentum=bn_momentum, rngs=rngs) if batch_norm else None
        self.sorted_receivers = sorted_receivers

    def __call__(
        self,
        h: jax.Array,
        graph: jraph.GraphsTuple,
        *,
        node_mask: jax.Array | None = None,
        edge_mask: jax.Array | None = None,
        adjacency: SparseMatrix | None = None,
    ) -> jax.Array:
        """``h: [n_node, in_features]`` -> ``[n_node, width]`` (padding rows zero).

        On a stacked ``graph``, ``h`` is ``[S, n_node, in_features]`` (and the result
        ``[S, n_node, width]``); ``node_mask`` is ``[S, n_node]`` or flattened, and batch
        norm takes its statistics over the real nodes of every sub-batch. ``adjacency``:
        the graph's kept edges as a :func:`~jaxcl.graphs.edge_pattern` (stacked: one per
        sub-batch, stacked), summed as a sparse product instead of gathered and
        segment-summed; ``edge_mask`` is then the pattern's business and must be None.
        """
        eps = self.eps[...] if isinstance(self.eps, nnx.Param) else self.eps
        node_mask = _node_mask(node_mask, h)
        if adjacency is not None:
            if edge_mask is not None:
                raise ValueError(
                    "GINLayer: give `edge_mask` or `adjacency` (whose pattern holds the kept "
                    "edges), not both"
                )
            if h.ndim == 3:
                neighbours = jax.vmap(sparse_matmul)(adjacency, h)
            else:
                neighbours = sparse_matmul(adjacency, h)
        else:
            neighbours = aggregate_edges(
                gather_nodes(h, graph.senders, batch_dims=h.ndim - 2),
                graph.receivers,
                h.shape[-2],
                edge_mask=edge_mask,
                sorted_receivers=self.sorted_receivers,
            )
        h = self.linear2(nnx.relu(self.linear1((1.0 + eps) * h + neighbours)))
        h = nnx.relu(h)
        if self.norm is not None:
            # Reduces over every axis but the features: all real nodes of all sub-batches.
            h = self.norm(h, mask=None if node_mask is None else node_mask[..., None])
        return _zero_rows(h, node_mask)


class GIN(nnx.Module):
    """Graph Isomorphism Network encoder with per-layer sum-pooled graph embeddings.

    The graph embedding concatenates the sum over each graph's nodes of every layer's
    node states (InfoGraph's readout; DACL: 4 layers x 512 = 2048 features).

    Args:
      in_features: node feature width.
      width: width of every layer.
      depth: number of GIN layers.
      eps, learn_eps: see :class:`GINLayer` (default GIN-0, as InfoGraph).
      batch_norm, bn_momentum, sorted_receivers, kernel_init: see :class:`GINLayer`
        (InfoGraph's and DACL's code initialise every kernel Glorot-uniform:
        ``nnx.initializers.glorot_uniform()``).
      slabs: sum the neighbours through the batch's edges laid out as slabs under ``jit``
        (:func:`~jaxcl.graphs.edge_pattern`, built once per call for all layers) instead of
        gathering ``[n_edge, width]`` messages and segment-summing them; the same function
        up to float32 rounding (on CPU the faster of the two, see ``gin_benchmark.py``).
        Tested on stacked batches sharded over a mesh of automatic axes (the trainer's);
        under a mesh of explicit axes (``jax.make_mesh``'s default) the pattern's search
        and gathers cannot resolve their shardings: keep ``slabs=False`` there.
      rngs: ``nnx.Rngs`` for the initial weights.

    Example:
      >>> import numpy as np
      >>> from flax import nnx
      >>> from jaxcl.data import Graph
      >>> from jaxcl.graphs import PaddingBudget, batch_graphs
      >>> g = Graph(senders=[0, 1], receivers=[1, 0], node_features=np.ones((2, 3)), label=0)
      >>> batch = batch_graphs([g, g], PaddingBudget(n_node=8, n_edge=8, n_graph=3))
      >>> nodes, graphs = GIN(3, width=16, depth=4, rngs=nnx.Rngs(0))(batch)
      >>> nodes.shape, graphs.shape
      ((8, 64), (3, 64))

    References:
      Xu et al., "How Powerful are Graph Neural Networks?", ICLR 2019, Eq. 4.1 and §4.2
      (readout); Sun et al., "InfoGraph", ICLR 2020 (encoder); Verma et al., DACL, ICML
      2021, §5.3 (4 layers, 512 units).
    """

    def __init__(
        self,
        in_features: int,
        *,
        width: int,
        depth: int,
        eps: float = 0.0,
        learn_eps: bool = False,
        batch_norm: bool = True,
        bn_momentum: float = BN_MOMENTUM,
        sorted_receivers: bool = True,
        kernel_init: nnx.Initializer | None = None,
        slabs: bool = False,
        rngs: nnx.Rngs,
    ):
        if isinstance(depth, bool) or not isinstance(depth, int) or depth <= 0:
            raise ValueError(f"GIN: `depth` must be a positive int, got {depth!r}")
        checks.positive_int("GIN", "in_features", in_features)
        checks.positive_int("GIN", "width", width)
        if not isinstance(slabs, bool):
            raise ValueError(f"GIN: `slabs` must be True or False, got {slabs!r}")
        self.slabs = slabs
        self.sorted_receivers = sorted_receivers
        sizes = [in_features] + [width] * depth
        self.layers = nnx.List(
            [
                GINLayer(
                    a,
                    b,
                    eps=eps,
                    learn_eps=learn_eps,
                    batch_norm=batch_norm,
                    bn_momentum=bn_momentum,
                    sorted_receivers=sorted_receivers,
                    kernel_init=kernel_init,
                    rngs=rngs,
                )
                for a, b in zip(sizes[:-1], sizes[1:], strict=True)
            ]
        )

    def __call__(
        self,
        graph: jraph.GraphsTuple,
        *,
        node_mask: jax.Array | None = None,
        edge_mask: jax.Array | None = None,
    ) -> tuple[jax.Array, jax.Array]:
        """Encodes a padded batch.

        Args:
          graph: a batch padded with ``jraph.pad_with_graphs`` (e.g. from
            :class:`~jaxcl.graphs.GraphBatcher`); ``nodes`` ``[n_node, in_features]``. Or a
            stacked batch of ``S`` such sub-batches (``nodes`` ``[S, n_node, in_features]``).
          node_mask: bool ``[n_node]`` real nodes (stacked: ``[S, n_node]`` or ``[S *
            n_node]``); default :func:`~jaxcl.graphs.padding_masks` of ``graph`` (pass
            all-True for an unpadded graph).
          edge_mask: optional bool ``[n_edge]`` (e.g. from :func:`~jaxcl.graphs.drop_edges`;
            stacked: ``[S, n_edge]`` or ``[S * n_edge]``).

        Returns:
          ``(node_embeddings [n_node, depth * width], graph_embeddings [n_graph, depth *
          width])``: per-node concatenation of the layers' states, and its sum per graph.
          Padding rows are zero. A stacked batch gives both flattened over its sub-batches:
          ``[S * n_node, ...]`` and ``[S * n_graph, ...]``.
        """
        x = jnp.asarray(graph.nodes)
        if node_mask is None:
            node_mask = padding_masks(graph).nodes
        node_mask = _node_mask(node_mask, x)
        h = _zero_rows(x, node_mask)
        kw = {"edge_mask": edge_mask}
        if self.slabs:
            kw = {"adjacency": self._pattern(graph, edge_mask)}
        states = []
        for layer in self.layers:
            h = layer(h, graph, node_mask=node_mask, **kw)
            states.append(h)
        nodes = jnp.concatenate(states, axis=-1)
        graphs = pool_nodes(graph, nodes, reduction="sum")
        if nodes.ndim == 3:  # stacked: flatten the sub-batches
            return nodes.reshape(-1, nodes.shape[-1]), graphs.reshape(-1, graphs.shape[-1])
        return nodes, graphs

    def _pattern(self, graph: jraph.GraphsTuple, edge_mask: jax.Array | None) -> SparseMatrix:
        """The kept edges as slabs, once for all layers (one pattern per sub-batch)."""
        senders = jnp.asarray(graph.senders)
        num_nodes = jnp.shape(graph.nodes)[-2]
        mask = None if edge_mask is None else jnp.reshape(edge_mask, senders.shape)

        def build(s, r, m):
            return edge_pattern(
                s, r, num_nodes, edge_mask=m, sorted_receivers=self.sorted_receivers
            )

        if senders.ndim == 2:
            return jax.vmap(build)(senders, graph.receivers, mask)
        return build(senders, graph.receivers, mask)


class GINGraphEncoder(nnx.Module):
    """:class:`GIN` whose call gives graph embeddings: the encoder graph-level methods train.

    ``encoder(batch)`` is what graph-classification evaluation reads (padding graphs come
    out as zero rows); :meth:`nodes_and_graphs` also returns the node states that
    local-global methods (InfoGraph) contrast. Both take stacked batches too, whose outputs
    come flattened over the sub-batches (see :class:`GIN`).

    Attributes:
      out_features: ``depth * width``, the size of a graph embedding.
    """

    def __init__(self, in_features: int, *, width: int, depth: int, rngs: nnx.Rngs, **kw):
        self.gin = GIN(in_features, width=width, depth=depth, rngs=rngs, **kw)
        self.out_features = width * depth

    def __call__(self, graph: jraph.GraphsTuple) -> jax.Array:
        return self.gin(graph)[1]

    def nodes_and_graphs(self, graph: jraph.GraphsTuple) -> tuple[jax.Array, jax.Array]:
        return self.gin(graph)
