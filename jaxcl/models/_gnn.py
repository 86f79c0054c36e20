"""Graph encoders on ``jraph.GraphsTuple``: GIN (graph classification) and GCN (nodes).

Both are padding-aware: padding nodes and edges of a batch from :mod:`jaxcl.graphs` can
reach no real node (padding edges join padding nodes only), batch norm takes its
statistics over real nodes only (``nnx.BatchNorm(..., mask=...)``), padding rows are
zeroed, and sum pooling never sees them. Edges are aggregated with sorted segment sums,
relying on the receiver-sorted layout every :mod:`jaxcl.graphs` batch has; pass
``sorted_receivers=False`` for graphs built elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import jraph
from flax import nnx

from jaxcl.graphs import (
    SparseMatrix,
    aggregate_edges,
    gather_nodes,
    gcn_normalization,
    padding_masks,
    pool_nodes,
    sparse_matmul,
)
from jaxcl.models._mlp import BN_MOMENTUM


def _zero_rows(h: jax.Array, node_mask: jax.Array | None) -> jax.Array:
    if node_mask is None:
        return h
    return jnp.where(node_mask[:, None], h, jnp.zeros((), h.dtype))


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
        self.norm = nnx.BatchNorm(width, momentum=bn_momentum, rngs=rngs) if batch_norm else None
        self.sorted_receivers = sorted_receivers

    def __call__(
        self,
        h: jax.Array,
        graph: jraph.GraphsTuple,
        *,
        node_mask: jax.Array | None = None,
        edge_mask: jax.Array | None = None,
    ) -> jax.Array:
        """``h: [n_node, in_features]`` -> ``[n_node, width]`` (padding rows zero)."""
        eps = self.eps[...] if isinstance(self.eps, nnx.Param) else self.eps
        neighbours = aggregate_edges(
            gather_nodes(h, graph.senders),
            graph.receivers,
            h.shape[0],
            edge_mask=edge_mask,
            sorted_receivers=self.sorted_receivers,
        )
        h = self.linear2(nnx.relu(self.linear1((1.0 + eps) * h + neighbours)))
        h = nnx.relu(h)
        if self.norm is not None:
            h = self.norm(h, mask=None if node_mask is None else node_mask[:, None])
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
        rngs: nnx.Rngs,
    ):
        if isinstance(depth, bool) or not isinstance(depth, int) or depth <= 0:
            raise ValueError(f"GIN: `depth` must be a positive int, got {depth!r}")
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
            :class:`~jaxcl.graphs.GraphBatcher`); ``nodes`` ``[n_node, in_features]``.
          node_mask: bool ``[n_node]`` real nodes; default
            :func:`~jaxcl.graphs.padding_masks` of ``graph`` (pass all-True for an unpadded
            graph).
          edge_mask: optional bool ``[n_edge]`` (e.g. from :func:`~jaxcl.graphs.drop_edges`).

        Returns:
          ``(node_embeddings [n_node, depth * width], graph_embeddings [n_graph, depth *
          width])``: per-node concatenation of the layers' states, and its sum per graph.
          Padding rows are zero.
        """
        if node_mask is None:
            node_mask = padding_masks(graph).nodes
        h = _zero_rows(jnp.asarray(graph.nodes), node_mask)
        states = []
        for layer in self.layers:
            h = layer(h, graph, node_mask=node_mask, edge_mask=edge_mask)
            states.append(h)
        nodes = jnp.concatenate(states, axis=-1)
        return nodes, pool_nodes(graph, nodes, reduction="sum")


class GCNLayer(nnx.Module):
    """One graph convolution ``out = P (h W) + b`` for a given propagation ``P``.

    ``P`` comes as per-edge and per-node (self-loop) coefficients, see
    :func:`~jaxcl.graphs.gcn_normalization`; the edges' part is summed per receiver with
    a gather and a segment sum, or, given ``adjacency`` (the edges' coefficients in a
    :class:`~jaxcl.graphs.SparseMatrix` pattern), as a slab product. Weights are
    Glorot-uniform and the bias starts at zero, as PyG's ``GCNConv`` (GRACE) and DGI's GCN (MVGRL).

    Args:
      in_features, out_features: widths.
      sorted_receivers: edges are sorted by receiver.
      rngs: ``nnx.Rngs`` for the initial weights.
    """

    def __init__(self, in_features: int, out_features: int, *, sorted_receivers: bool = True, rngs):
        self.linear = nnx.Linear(
            in_features,
            out_features,
            use_bias=False,
            kernel_init=nnx.initializers.glorot_uniform(),
            rngs=rngs,
        )
        self.bias = nnx.Param(jnp.zeros((out_features,), jnp.float32))
        self.sorted_receivers = sorted_receivers

    def __call__(
        self,
        h: jax.Array,
        graph: jraph.GraphsTuple,
        edge_coef: jax.Array,
        self_coef: jax.Array,
        adjacency: SparseMatrix | None = None,
    ) -> jax.Array:
        if isinstance(h, SparseMatrix):  # sparse node features (see jaxcl.graphs.SparseMatrix)
            h = sparse_matmul(h, self.linear.kernel[...])
        else:
            h = self.linear(h)
        if adjacency is not None:
            out = sparse_matmul(adjacency, h)
        else:
            messages = edge_coef[:, None].astype(h.dtype) * gather_nodes(h, graph.senders)
            out = aggregate_edges(
                messages, graph.receivers, h.shape[0], sorted_receivers=self.sorted_receivers
            )
        return out + self_coef[:, None].astype(h.dtype) * h + self.bias[...]


class GCN(nnx.Module):
    """Graph convolutional network for node embeddings (GRACE's and MVGRL's encoder).

    Each layer is ``act(P X W + b)``. With ``normalize=True``, ``P = D^-1/2 (A + I) D^-1/2``
    over the kept edges (an ``edge_mask`` removes dropped edges from ``A`` and from the
    degrees), with ``A`` weighted by the edge weights if any. With ``normalize=False``,
    ``P`` is the weighted adjacency as given: MVGRL propagates with its PPR matrix ``S``
    directly (:func:`~jaxcl.graphs.ppr_diffusion`, whose diagonal comes as self-loop edges).

    Args:
      in_features: node feature width.
      widths: output width of each layer; GRACE's 2-layer encoder of dimension ``d`` is
        ``(2 * d, d)`` (see :func:`grace_encoder`).
      activation: ``"prelu"`` (GRACE's one ``nn.PReLU()`` shared by all layers, slope
        initialised at 0.25 as PyTorch), ``"relu"`` or ``None``; applied after every layer,
        the last one included, as GRACE's ``Encoder``.
      normalize: symmetric renormalised propagation (see above) or raw weights.
      add_self_loops: the ``+ I`` of the renormalisation (only with ``normalize``).
      sorted_receivers: edges are sorted by receiver (true for :mod:`jaxcl.graphs`).
      rngs: ``nnx.Rngs`` for the initial weights.

    Example:
      >>> import numpy as np
      >>> from flax import nnx
      >>> from jaxcl.data import NodeDataset
      >>> from jaxcl.graphs import node_graph
      >>> m = np.array([True, False, False])
      >>> ds = NodeDataset("toy", [0, 1, 1, 2], [1, 0, 2, 1], np.eye(3), [0, 1, 0], 2, m, m, m)
      >>> GCN(3, (8, 4), rngs=nnx.Rngs(0))(node_graph(ds)).shape
      (3, 4)

    References:
      Kipf & Welling, "Semi-Supervised Classification with Graph Convolutional Networks",
      ICLR 2017, Eq. 2; Zhu et al., GRACE, 2020 (code CRIPAC-DIG/GRACE ``model.py``);
      Hassani & Khasahmadi, MVGRL, ICML 2020, §3.
    """

    def __init__(
        self,
        in_features: int,
        widths: Sequence[int],
        *,
        activation: str | None = "prelu",
        normalize: bool = True,
        add_self_loops: bool = True,
        sorted_receivers: bool = True,
        rngs: nnx.Rngs,
    ):
        if not widths:
            raise ValueError("GCN: `widths` must name at least one layer, got an empty sequence")
        if activation not in ("prelu", "relu", None):
            raise ValueError(
                f"GCN: `activation` must be 'prelu', 'relu' or None, got {activation!r}"
            )
        sizes = [in_features, *widths]
        self.layers = nnx.List(
            [
                GCNLayer(a, b, sorted_receivers=sorted_receivers, rngs=rngs)
                for a, b in zip(sizes[:-1], sizes[1:], strict=True)
            ]
        )
        self.prelu = nnx.PReLU(negative_slope_init=0.25) if activation == "prelu" else None
        self.activation = activation
        self.normalize = normalize
        self.add_self_loops = add_self_loops
        self.sorted_receivers = sorted_receivers

    def _act(self, h: jax.Array) -> jax.Array:
        if self.activation == "prelu":
            return self.prelu(h)
        if self.activation == "relu":
            return nnx.relu(h)
        return h

    def __call__(
        self,
        graph: jraph.GraphsTuple,
        *,
        edge_mask: jax.Array | None = None,
        edge_weight: jax.Array | None = None,
        node_mask: jax.Array | None = None,
        adjacency: SparseMatrix | None = None,
    ) -> jax.Array:
        """Node embeddings.

        Args:
          graph: ``nodes`` ``[n_node, in_features]``, dense or a
            :class:`~jaxcl.graphs.SparseMatrix` (the first layer then multiplies sparsely);
            a :func:`~jaxcl.graphs.node_graph` or a padded batch.
          edge_mask: optional bool ``[n_edge]``, ``False`` for dropped edges.
          edge_weight: optional ``[n_edge]`` weights; default ``graph.edges`` when it holds
            them (a diffusion graph), else 1.
          node_mask: optional bool ``[n_node]``; rows of masked (padding) nodes are zeroed.
            Padding never changes real rows either way.
          adjacency: optional :func:`~jaxcl.graphs.adjacency_pattern` of this graph's
            edges: propagation then runs as sparse products over it (on CPU, Cora at width
            1024: 15 ms instead of 42 for a layer's propagation and its gradient), with the
            same result up to float32 rounding.

        Returns:
          ``[n_node, widths[-1]]``.
        """
        nodes = graph.nodes
        num_nodes = nodes.shape[0]
        if edge_weight is None and graph.edges is not None:
            edge_weight = jnp.reshape(graph.edges, graph.senders.shape)
        if self.normalize:
            edge_coef, self_coef = gcn_normalization(
                graph.senders,
                graph.receivers,
                num_nodes,
                edge_weight=edge_weight,
                edge_mask=edge_mask,
                add_self_loops=self.add_self_loops,
                sorted_receivers=self.sorted_receivers,
            )
        else:
            edge_coef = (
                jnp.ones(graph.senders.shape, jnp.float32) if edge_weight is None else edge_weight
            )
            if edge_mask is not None:
                edge_coef = jnp.where(edge_mask, edge_coef, jnp.zeros((), edge_coef.dtype))
            self_coef = jnp.zeros((num_nodes,), jnp.float32)
        if adjacency is not None:
            num_edges = graph.senders.shape[0]
            if adjacency.shape != (num_nodes, num_nodes) or adjacency.nnz != num_edges:
                raise ValueError(
                    f"GCN: `adjacency` must be the pattern of this graph's {num_edges} edges "
                    f"over {num_nodes} nodes (graphs.adjacency_pattern), got shape "
                    f"{adjacency.shape} with {adjacency.nnz} entries"
                )
            adjacency = adjacency.with_values(edge_coef.astype(adjacency.dtype))
        h = nodes if isinstance(nodes, SparseMatrix) else jnp.asarray(nodes)
        for layer in self.layers:
            h = self._act(layer(h, graph, edge_coef, self_coef, adjacency))
        return _zero_rows(h, node_mask)


def grace_encoder(
    in_features: int,
    *,
    out_dim: int,
    num_layers: int = 2,
    activation: str | None = "prelu",
    rngs: nnx.Rngs,
) -> GCN:
    """GRACE's encoder: ``num_layers`` GCN layers of width ``2 * out_dim``, the last ``out_dim``.

    Example:
      >>> from flax import nnx
      >>> [l.linear.kernel.shape for l in grace_encoder(10, out_dim=4, rngs=nnx.Rngs(0)).layers]
      [(10, 8), (8, 4)]
    """
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 1:
        raise ValueError(f"grace_encoder: `num_layers` must be a positive int, got {num_layers!r}")
    widths = (2 * out_dim,) * (num_layers - 1) + (out_dim,)
    return GCN(in_features, widths, activation=activation, rngs=rngs)


class GINGraphEncoder(nnx.Module):
    """:class:`GIN` whose call gives graph embeddings: the encoder graph-level methods train.

    ``encoder(batch)`` is what graph-classification evaluation reads (padding graphs come
    out as zero rows); :meth:`nodes_and_graphs` also returns the node states that
    local-global methods (InfoGraph) contrast.

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
