"""Node-level methods on one full graph: GRACE (two augmented views) and MVGRL (two diffusions).

Both train on the whole graph every step (``NodeClassificationTask``) and are judged by a
logistic regression on the frozen node embeddings.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import jraph
import numpy as np
import optax
from flax import nnx

from jaxcl import graphs, losses, models
from jaxcl.methods._base import Method

# --------------------------------------------------------------------------------------------
# GRACE

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


def _torch_linear(in_features: int, out_features: int, rngs: nnx.Rngs) -> nnx.Linear:
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
            [_torch_linear(a, b, rngs) for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
        )

    def __call__(self, z: jax.Array) -> jax.Array:
        for i, layer in enumerate(self.layers):
            if i:
                z = nnx.elu(z)
            z = layer(z)
        return z


def _one_of(method: str, key: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(
            f"config.method.{key} = {value!r}: expected one of {list(allowed)} ({method})"
        )


class GRACE(Method):
    """GRACE: two views by edge dropping and feature masking; InfoNCE over both views' nodes.

    Each step draws two views of the graph (GRACE §3.2.1): view ``k`` drops every directed
    edge with probability ``p_ek`` (PyG's ``dropout_adj``) and zeroes every feature column
    with probability ``p_fk`` (``drop_feature``). A GCN (``config.model.encoder = 'gcn'``,
    ``encoder_depth`` layers of widths ``(2d, ..., d)``, ``activation`` after every layer)
    embeds each view, the head ``fc2(ELU(fc1(.)))`` projects, and the loss is GRACE's: for
    every node, its other view is the positive and all other nodes of both views are
    negatives, cosine similarity over ``temperature``, both directions averaged. That is
    exactly :func:`jaxcl.losses.nt_xent` (``loss='nt_xent'``, tested against a transcription
    of GRACE's ``semi_loss``).

    ``loss='esco'`` replaces it by ESCo's (ESCo §5.2.2, Table 2): :func:`jaxcl.losses.esco_loss`
    with trade-off ``lam``, Gaussian-kernel bandwidth ``temperature``, ``rf_method`` random
    features (``'rff'``, ``'sorf'``, ``'positive'`` or ``'exact'``) of ``num_features``
    frequencies drawn afresh every step, both directions averaged, negatives from the other
    view (``esco_negatives='cross'``, ESCo Eq. 1's pairing) or the anchor's own view
    (``'intra'``, Eq. 9 as printed).

    Evaluation embeds the unaugmented graph with the encoder (the head is discarded).

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
    defaults = {
        "temperature": 0.5,
        "p_e1": 0.2,
        "p_e2": 0.4,
        "p_f1": 0.3,
        "p_f2": 0.4,
        # GRACE's config.yaml: 'relu' for Cora and PubMed, 'prelu' for CiteSeer.
        "activation": "prelu",
        "loss": "nt_xent",  # nt_xent (GRACE) | esco (ESCo-GRACE)
        # loss='esco' only:
        "lam": 1.2,
        "rf_method": "sorf",
        "num_features": 1024,
        "esco_negatives": "cross",
        # on | off | auto: sparse features and propagation (auto: on CPU when <= 10% nonzero).
        "sparse_layout": "auto",
    }

    def __init__(self, config):
        super().__init__(config)
        hp = self.hp
        _one_of(self.name, "activation", hp.activation, ("prelu", "relu"))
        _one_of(self.name, "sparse_layout", hp.sparse_layout, ("auto", "on", "off"))
        _one_of(self.name, "loss", hp.loss, ("nt_xent", "esco"))
        _one_of(self.name, "rf_method", hp.rf_method, ("rff", "sorf", "positive", "exact"))
        _one_of(self.name, "esco_negatives", hp.esco_negatives, ("cross", "intra"))
        for key in ("p_e1", "p_e2", "p_f1", "p_f2"):
            if not 0.0 <= hp[key] <= 1.0:
                raise ValueError(f"config.method.{key} = {hp[key]!r}: expected a number in [0, 1]")
        if hp.temperature <= 0:
            raise ValueError(f"config.method.temperature = {hp.temperature!r}: expected > 0")

    def build(self, num_features, num_classes, rngs):
        m = self.config.model
        encoder = models.grace_encoder(
            num_features,
            out_dim=m.encoder_width,
            num_layers=m.encoder_depth,
            activation=self.hp.activation,
            rngs=rngs,
        )
        widths = (m.head_width,) * (m.head_depth - 1) + (m.embed_dim,)
        head = ELUProjection(m.encoder_width, widths, rngs=rngs)
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
        hp = self.hp
        if hp.loss == "nt_xent":
            return losses.nt_xent(h1, h2, temperature=hp.temperature)
        return losses.esco_loss(
            h1,
            h2,
            lam=hp.lam,
            key=key,
            temperature=hp.temperature,
            method=hp.rf_method,
            num_features=hp.num_features,
            negatives=hp.esco_negatives,
            symmetric=True,
        )

    def loss(self, model, batch, key):
        graph, adjacency = _graph_and_adjacency(batch)
        k_views, k_loss = jax.random.split(key)
        (x1, m1), (x2, m2) = self.views(graph, k_views)
        z1 = model.encoder(graph._replace(nodes=x1), edge_mask=m1, adjacency=adjacency)
        z2 = model.encoder(graph._replace(nodes=x2), edge_mask=m2, adjacency=adjacency)
        loss = self.contrastive_loss(model.head(z1), model.head(z2), k_loss)
        return loss, {"loss": loss}


# --------------------------------------------------------------------------------------------
# MVGRL


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


class DenseGCN(nnx.Module):
    """GCN layers ``PReLU(S X W + b)`` with a dense propagation matrix ``S`` (MVGRL's view).

    The layout of DGI's ``GCN`` that MVGRL borrows: Glorot-uniform kernel without bias, zero
    bias added after propagation, one PReLU (slope 0.25) per layer.
    """

    def __init__(self, in_features: int, widths, *, rngs: nnx.Rngs):
        sizes = [in_features, *widths]
        self.layers = nnx.List(
            [
                models.GCNLayer(a, b, rngs=rngs)  # only its kernel and bias are used
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

    def embed(self, inputs: MVGRLInputs, x: jax.Array | None = None):
        """``(h_adjacency, h_diffusion)`` of features ``x`` (default the graph's own)."""
        graph = inputs.graph if x is None else inputs.graph._replace(nodes=x)
        h_adj = self.adjacency(graph)
        if isinstance(inputs.diffusion, jraph.GraphsTuple):
            h_diff = self.diffusion(inputs.diffusion._replace(nodes=graph.nodes))
        else:
            h_diff = self.diffusion(graph.nodes, inputs.diffusion)
        return h_adj, h_diff


def corrupt(key: jax.Array, x: jax.Array) -> jax.Array:
    """DGI's corruption: the rows (nodes) of ``x`` shuffled by a random permutation."""
    return x[jax.random.permutation(key, x.shape[0])]


def mvgrl_logits(model: MVGRLModel, inputs: MVGRLInputs, key: jax.Array):
    """The discriminator's logits ``(positive [2N], negative [2N])`` for one corruption.

    Positives pair each node of one view with the summary of the other view
    (``D(h_diff, c_adj)``, ``D(h_adj, c_diff)``); negatives pair the nodes of the corrupted
    (row-shuffled) features with the same summaries. Summaries are ``sigmoid(mean_nodes h)``.
    """
    h1, h2 = model.embed(inputs)
    h3, h4 = model.embed(inputs, corrupt(key, inputs.graph.nodes))
    c1 = jax.nn.sigmoid(jnp.mean(h1, axis=0))
    c2 = jax.nn.sigmoid(jnp.mean(h2, axis=0))
    d = model.discriminator
    positive = jnp.concatenate([d(h2, c1), d(h1, c2)])
    negative = jnp.concatenate([d(h4, c1), d(h3, c2)])
    return positive, negative


class MVGRL(Method):
    """MVGRL: node-graph mutual information across an adjacency and a PPR-diffusion view.

    The adjacency view propagates with ``D^-1/2 (A + I) D^-1/2`` (``jaxcl.models.GCN``); the
    diffusion view with MVGRL's personalised PageRank ``S = alpha (I - (1 - alpha) T)^-1``
    (Eq. 3), computed once on the host by :func:`jaxcl.graphs.ppr_diffusion` (exactly for
    graphs up to 4096 nodes; entries below ``ppr_eps`` dropped). ``diffusion='dense'``
    multiplies by the dense ``S`` as MVGRL's code does; ``'sparse'`` propagates along the
    kept entries as edges (for large graphs, with ``ppr_eps > 0``). Each view has its own GCN
    (``config.model.encoder_depth`` layers of ``encoder_width``, PReLU; MVGRL's node model is
    one layer of 512). The summary of a view is ``sigmoid(mean of its node embeddings)``; a
    bilinear discriminator scores nodes of one view against the summary of the other,
    negatives come from the same encoders applied to row-shuffled features, and the loss is
    binary cross-entropy (``BCEWithLogitsLoss``, mean over the ``4N`` logits). Evaluation
    embeds with the sum of the two views' node embeddings (MVGRL's ``embed``).

    Differences from the official code (kavehhassani/mvgrl ``node/``), all documented choices:

    * no subgraph sampling: MVGRL trains on 4 random windows of 2000 consecutive node ids
      per step (rows and columns of the normalised matrices, not renormalised); the full
      Cora/Citeseer graph fits, so every step uses the whole graph;
    * no early stopping on the training loss (patience 20, up to 3000 epochs): the trainer
      runs ``config.train.epochs`` and evaluates the last model;
    * the adjacency view uses ``A + I``; the code's ``normalize_adj(adj + sp.eye(n))``
      adds the identity twice (``A + 2I``), which the paper does not describe;
    * Citeseer's preprocessing in the code (a threshold chosen to match the average degree
      and column-wise min-max scaling of ``S``) is not implemented; ``ppr_eps`` thresholds.

    References:
      Hassani & Khasahmadi, "Contrastive Multi-View Representation Learning on Graphs",
      ICML 2020, §3 and Eq. 3; code kavehhassani/mvgrl ``node/train.py``, ``utils.py``;
      Velickovic et al., "Deep Graph Infomax", ICLR 2019 (readout, discriminator,
      corruption).
    """

    name = "mvgrl"
    defaults = {"alpha": 0.2, "ppr_eps": 0.0, "diffusion": "dense"}

    def __init__(self, config):
        super().__init__(config)
        _one_of(self.name, "diffusion", self.hp.diffusion, ("dense", "sparse"))
        if not 0.0 < self.hp.alpha <= 1.0:
            raise ValueError(
                f"config.method.alpha = {self.hp.alpha!r}: expected a number in (0, 1]"
            )
        if self.hp.ppr_eps < 0 or (self.hp.diffusion == "sparse" and self.hp.ppr_eps == 0):
            raise ValueError(
                f"config.method.ppr_eps = {self.hp.ppr_eps!r}: expected >= 0, and > 0 with "
                "diffusion='sparse' (otherwise every pair of connected nodes is an edge)"
            )

    def build(self, num_features, num_classes, rngs):
        m = self.config.model
        widths = (m.encoder_width,) * m.encoder_depth
        adjacency = models.GCN(num_features, widths, activation="prelu", rngs=rngs)
        if self.hp.diffusion == "dense":
            diffusion = DenseGCN(num_features, widths, rngs=rngs)
        else:
            diffusion = models.GCN(
                num_features, widths, activation="prelu", normalize=False, rngs=rngs
            )
        return MVGRLModel(adjacency, diffusion, Bilinear(m.encoder_width, rngs=rngs))

    def node_inputs(self, dataset, graph):
        d = graphs.ppr_diffusion(
            dataset.senders,
            dataset.receivers,
            dataset.num_nodes,
            alpha=self.hp.alpha,
            eps=self.hp.ppr_eps,
        )
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

    def loss(self, model, inputs: MVGRLInputs, key):
        positive, negative = mvgrl_logits(model, inputs, key)
        loss = 0.5 * (
            jnp.mean(optax.sigmoid_binary_cross_entropy(positive, jnp.ones_like(positive)))
            + jnp.mean(optax.sigmoid_binary_cross_entropy(negative, jnp.zeros_like(negative)))
        )
        accuracy = 0.5 * (jnp.mean(positive > 0) + jnp.mean(negative < 0))
        return loss, {"loss": loss, "disc_accuracy": accuracy}

    def features(self, model, inputs: MVGRLInputs):
        h_adj, h_diff = model.embed(inputs)
        return h_adj + h_diff
