"""GCN, the node-classification encoder (GRACE, MVGRL), on one ``jraph.GraphsTuple``.

Propagation is ``D^-1/2 (A + I) D^-1/2`` over the kept edges (or the given weights as they
are), summed per receiver with sorted segment sums (every :mod:`jaxcl.graphs` graph has
receiver-sorted edges; pass ``sorted_receivers=False`` for graphs built elsewhere) or as
sparse products over an :func:`~jaxcl.graphs.adjacency_pattern`. Padding nodes and edges
of a padded batch reach no real node; their rows can be zeroed with ``node_mask``.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import jraph
from flax import nnx

from jaxcl import _checks as checks
from jaxcl.graphs import (
    SparseMatrix,
    aggregate_edges,
    gather_nodes,
    gcn_normalization,
    sparse_matmul,
)
from jaxcl.models._mlp import check_widths


def _zero_rows(h: jax.Array, node_mask: jax.Array | None) -> jax.Array:
    if node_mask is None:
        return h
    return jnp.where(node_mask[:, None], h, jnp.zeros((), h.dtype))


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
      add_self_loops: the ``+ I`` of the renormalisation (only with ``normalize``), or a
        weight ``w`` for ``+ w I``.
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
        add_self_loops: bool | float = True,
        sorted_receivers: bool = True,
        rngs: nnx.Rngs,
    ):
        checks.positive_int("GCN", "in_features", in_features)
        widths = check_widths("GCN", "widths", widths)
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

    def act(self, h: jax.Array) -> jax.Array:
        """The layers' activation (``activation``) applied to ``h``."""
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
        edge_cut: jax.Array | None = None,
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
          edge_cut: optional bool ``[n_edge]``, ``True`` for edges whose entries of the
            propagation are zeroed *after* normalisation: the degrees stay those of the
            whole graph (with ``edge_mask``'s edges removed), so propagation is a sub-matrix
            of ``P``, as MVGRL's code slices a window out of its normalised matrix. Without
            ``normalize`` it is the same as ``edge_mask``.

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
        if edge_cut is not None:
            edge_coef = jnp.where(edge_cut, jnp.zeros((), edge_coef.dtype), edge_coef)
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
            h = self.act(layer(h, graph, edge_coef, self_coef, adjacency))
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
    checks.positive_int("grace_encoder", "out_dim", out_dim)
    widths = (2 * out_dim,) * (num_layers - 1) + (out_dim,)
    return GCN(in_features, widths, activation=activation, rngs=rngs)
