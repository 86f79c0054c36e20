"""Node-level heads: GRACE's ELU projection (PyTorch's initialisation), MVGRL's dense-diffusion
GCN, its bilinear discriminator, and the model that holds MVGRL's two views."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import jraph
from flax import nnx

from jaxcl.graphs import window_edges
from jaxcl.models._gcn import GCNLayer


def torch_linear(in_features: int, out_features: int, rngs: nnx.Rngs) -> nnx.Linear:
    """A dense layer initialised as PyTorch's ``nn.Linear``: kernel and bias ~ U(+-1/sqrt(fan_in)).

    (``kaiming_uniform_(a=sqrt(5))`` is a variance scaling of 1/3 on fan-in, uniform.)
    """
    bound = 1.0 / math.sqrt(in_features)

    def bias_init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return nnx.Linear(
        in_features,
        out_features,
        kernel_init=nnx.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform"),
        bias_init=bias_init,
        rngs=rngs,
    )


class ELUProjection(nnx.Module):
    """GRACE's projection head ``fc2(ELU(fc1(z)))``: Linear layers with ELU between, no norm.

    Args:
      in_features: encoder width.
      widths: output width of each layer; GRACE's head is ``(num_proj_hidden, num_hidden)``.
      rngs: ``nnx.Rngs``; layers are initialised as PyTorch's ``nn.Linear`` (GRACE's code).

    References:
      Zhu et al., GRACE, 2020, Eq. 1 (``g`` is a two-layer MLP); code CRIPAC-DIG/GRACE
      ``model.py`` (``Model.projection``).
    """

    def __init__(self, in_features: int, widths, *, rngs: nnx.Rngs):
        sizes = [in_features, *widths]
        self.layers = nnx.List(
            [torch_linear(a, b, rngs) for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
        )

    def __call__(self, z: jax.Array) -> jax.Array:
        for i, layer in enumerate(self.layers):
            if i:
                z = nnx.elu(z)
            z = layer(z)
        return z


class DenseGCN(nnx.Module):
    """GCN layers ``PReLU(S X W + b)`` with a dense propagation matrix ``S`` (MVGRL's view).

    The layout of DGI's ``GCN`` that MVGRL borrows: Glorot-uniform kernel without bias, zero
    bias added after propagation, one PReLU (slope 0.25) per layer.
    """

    def __init__(self, in_features: int, widths, *, rngs: nnx.Rngs):
        sizes = [in_features, *widths]
        self.layers = nnx.List(
            [
                GCNLayer(a, b, rngs=rngs)  # only its kernel and bias are used
                for a, b in zip(sizes[:-1], sizes[1:], strict=True)
            ]
        )
        self.prelus = nnx.List([nnx.PReLU(negative_slope_init=0.25) for _ in widths])

    def __call__(self, x: jax.Array, s: jax.Array) -> jax.Array:
        h = x
        for layer, prelu in zip(self.layers, self.prelus, strict=True):
            h = prelu(s @ layer.linear(h) + layer.bias[...])
        return h


class Bilinear(nnx.Module):
    """``score(h, c) = h^T W c + b``: MVGRL's (DGI's) discriminator, ``nn.Bilinear(d, d, 1)``.

    ``W`` is Glorot-uniform with PyTorch's fans for a ``[1, d, d]`` weight (fan-in ``d * d``,
    fan-out ``d``), ``b = 0``, as DGI's ``weights_init``.
    """

    def __init__(self, dim: int, *, rngs: nnx.Rngs):
        bound = math.sqrt(6.0 / (dim * dim + dim))
        self.kernel = nnx.Param(
            jax.random.uniform(rngs.params(), (dim, dim), jnp.float32, -bound, bound)
        )
        self.bias = nnx.Param(jnp.zeros((), jnp.float32))

    def __call__(self, h: jax.Array, c: jax.Array) -> jax.Array:
        """``h: [N, d]`` node embeddings, ``c: [d]`` a summary -> ``[N]`` logits."""
        return h @ (self.kernel[...] @ c) + self.bias[...]


class MVGRLModel(nnx.Module):
    """One GCN per view (adjacency, diffusion) and the shared bilinear discriminator."""

    def __init__(self, adjacency: nnx.Module, diffusion: nnx.Module, discriminator: Bilinear):
        self.adjacency = adjacency
        self.diffusion = diffusion
        self.discriminator = discriminator

    def embed(self, inputs: Any, x: jax.Array | None = None):
        """``(h_adjacency, h_diffusion)`` of features ``x`` (default the graph's own)."""
        graph = inputs.graph if x is None else inputs.graph._replace(nodes=x)
        h_adj = self.adjacency(graph)
        if isinstance(inputs.diffusion, jraph.GraphsTuple):
            h_diff = self.diffusion(inputs.diffusion._replace(nodes=graph.nodes))
        else:
            h_diff = self.diffusion(graph.nodes, inputs.diffusion)
        return h_adj, h_diff

    def embed_window(self, inputs: Any, start: jax.Array, size: int, x: jax.Array | None = None):
        """``(h_adjacency, h_diffusion)``, each ``[size, d]``, of the ``size`` consecutive
        nodes from ``start`` encoded as their own sub-graph, as MVGRL's code encodes its
        windows: both views propagate with the sub-matrices of the whole graph's normalised
        adjacency and of ``S`` (every edge with an end outside the window cut, the degrees
        not recomputed). ``x``: features of the whole graph (default the graph's own)."""
        graph = inputs.graph if x is None else inputs.graph._replace(nodes=x)

        def cut(g):
            return ~window_edges(g.senders, g.receivers, start, size)[2]

        def rows(h):
            return jax.lax.dynamic_slice_in_dim(h, start, size, axis=0)

        h_adj = rows(self.adjacency(graph, edge_cut=cut(graph)))
        if isinstance(inputs.diffusion, jraph.GraphsTuple):
            d = inputs.diffusion._replace(nodes=graph.nodes)
            h_diff = rows(self.diffusion(d, edge_cut=cut(d)))
        else:
            s = jax.lax.dynamic_slice(inputs.diffusion, (start, start), (size, size))
            h_diff = self.diffusion(rows(graph.nodes), s)
        return h_adj, h_diff
