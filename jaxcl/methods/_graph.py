"""DACL Table 4's pretraining rows on graphs: DACL with hidden-space Mixup, and InfoGraph.

Both train the GIN of ``config.model`` (``encoder='gin'``; DACL §5.3: 4 layers of 512,
graph embedding = the 2048 concatenated sum-pooled layer states) on padded
``jraph.GraphsTuple`` batches, and both are evaluated on that graph embedding
(:meth:`Method.features`: the encoder output, heads discarded). Padding never takes part:
the GIN masks its batch norm to real nodes, the losses below mask padding graphs and
nodes, and the heads either have no batch norm (the released code's) or mask it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jraph
from flax import nnx

from jaxcl import graphs, losses, mixers, models
from jaxcl.methods._base import HEAD_DEFAULTS, Method, build_encoder, check_range, register


@register
class DACLGraph(Method):
    """DACL on graphs: linear Mixup-noise on the GIN's graph embedding (Eq. 4, §5.3).

    One encoder pass gives ``h = f(G)`` for the batch; each view mixes every real graph's
    embedding with that of another real graph of the batch, ``lam * h + (1 - lam) * h~``,
    ``lam ~ U(alpha, 1)`` per graph, with independent draws for the two views (Algorithm 1
    with lines 8 and 14 mixing instead of lines 7 and 13). Both views share the encoder
    pass, so the encoder's batch norm sees each real node once, and the head's first Linear
    runs before the mixing (the same views one Linear later: see :meth:`loss`). The
    projection head is DACL's graph head (``Projhead`` in the released code): ``head_depth``
    x (Linear -> ReLU) of ``head_width`` (4 x 512), the last to ``embed_dim`` (2048 there),
    no batch norm; ``head_batch_norm=True`` adds batch norm over the 2N real view rows
    (padding rows excluded from its statistics). The loss is NT-Xent (Algorithm 1) over the
    real graphs, ``tau = 1`` on graphs.

    Hyperparameters (``config.method``): ``alpha`` (0.9), ``temperature`` (1.0),
    ``head_batch_norm`` (False).

    This follows the paper: linear Mixup-noise, one ``lam`` per graph, the partner another
    graph. The released ``main_mcl.py`` mixes geometric and binary noise too, with one
    ``lam`` per batch and a ``randperm`` partner that can be the graph itself.

    References:
      Verma et al., "Towards Domain-Agnostic Contrastive Learning", ICML 2021, Eq. 4,
      Algorithm 1 and §5.3; code github.com/vikasverma1077/graph_cnt (``main_mcl.py``,
      ``model.py``).
    """

    name = "dacl_graph"
    defaults = {"alpha": 0.9, "temperature": 1.0, "head_batch_norm": False}
    data_kinds = ("graph",)

    def __init__(self, config):
        super().__init__(config)
        check_range(self.name, self.hp, "alpha", 0.0, 1.0)
        check_range(self.name, self.hp, "temperature", 0.0, low_open=True)

    def build(self, spec, rngs: nnx.Rngs) -> nnx.Module:
        m = self.config.model
        encoder, width = build_encoder(m, spec, rngs)
        head = models.FeedForward(
            width,
            width=m.head_width,
            depth=m.head_depth,
            out_features=m.embed_dim,
            batch_norm=bool(self.hp.head_batch_norm),
            rngs=rngs,
        )
        return models.ContrastiveModel(encoder, head)

    def views(self, h: jax.Array, real: jax.Array, key: jax.Array):
        """The two mixed views of the rows ``h`` (partners among ``real`` rows): the graph
        embeddings, or as :meth:`loss` calls it, the head's first Linear's outputs."""
        k1, k2 = jax.random.split(key)
        h1 = mixers.linear_mixup(k1, h, alpha=self.hp.alpha, where=real)
        h2 = mixers.linear_mixup(k2, h, alpha=self.hp.alpha, where=real)
        return h1, h2

    def loss(self, model, batch: jraph.GraphsTuple, key, extra):
        real = graphs.padding_masks(batch).graphs
        # The views mix the head's first Linear's outputs rather than its inputs: the same
        # values in exact arithmetic (the Linear is affine and each mixture's weights sum to
        # one; the rounding differs, and in bfloat16 the mixed rows are rounded again), with
        # that Linear run on the batch's rows once instead of on both views' (7% of the
        # step's products at DACL Table 4's sizes; gin_roofline.py).
        u1, u2 = self.views(model.head.linears[0](model.encoder(batch)), real, key)
        rows = jnp.concatenate([real, real])
        z = model.head(jnp.concatenate([u1, u2]), mask=rows, after_first_linear=True)
        z1, z2 = jnp.split(z, 2)
        loss = losses.nt_xent(z1, z2, temperature=self.hp.temperature, where=real)
        return loss, {"loss": loss}


@register
class InfoGraph(Method):
    """InfoGraph: local-global mutual information with the Jensen-Shannon estimator.

    The GIN gives node embeddings (every layer's state, concatenated: ``depth * width``) and
    graph embeddings (their sums per graph). Nodes go through the local discriminator head
    and graphs through the global one, each InfoGraph's ``FF``: ``head_depth`` x (Linear ->
    ReLU) of ``head_width`` plus a linear shortcut, Glorot-uniform init. The loss is
    :func:`jaxcl.losses.local_global_jsd` between every real node and every real graph of
    the batch (its own graph positive, the others negative), InfoGraph's ``'JSD'`` measure.

    InfoGraph's optional prior-matching term (``--prior``, weight ``gamma = 0.1``) is off in
    its unsupervised script by default and is not implemented; neither is the
    global-global term of its semi-supervised variant.

    References:
      Sun et al., "InfoGraph: Unsupervised and Semi-supervised Graph-Level Representation
      Learning via Mutual Information Maximization", ICLR 2020, §3.2 (code
      github.com/fanyun-sun/InfoGraph, ``unsupervised/main.py``, ``model.py``,
      ``losses.py``); the Table 4 baseline of Verma et al., DACL, ICML 2021.
    """

    name = "infograph"
    defaults = {}
    model_defaults = {k: HEAD_DEFAULTS[k] for k in ("head_depth", "head_width")}
    data_kinds = ("graph",)

    def build(self, spec, rngs: nnx.Rngs) -> nnx.Module:
        m = self.config.model
        encoder, width = build_encoder(m, spec, rngs)

        def head():
            return models.FeedForward(
                width, width=m.head_width, depth=m.head_depth, shortcut=True, rngs=rngs
            )

        return models.InfoGraphModel(encoder, head(), head())

    def loss(self, model, batch: jraph.GraphsTuple, key, extra):
        del key  # deterministic
        masks = graphs.padding_masks(batch)
        node_emb, graph_emb = model.encoder.nodes_and_graphs(batch)
        loss = losses.local_global_jsd(
            model.local_head(node_emb),
            model.global_head(graph_emb),
            graphs.node_graph_ids(batch),
            node_mask=masks.nodes,
            graph_mask=masks.graphs,
        )
        return loss, {"loss": loss}
