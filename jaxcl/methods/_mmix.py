"""MVGRL + m-Mix at node level: hard negatives mixed from the adjacency view's node embeddings,
contrasted with the diffusion view by m-Mix's node objective (Eq. 7-8)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcl import graphs, losses, mixers, models
from jaxcl.methods._base import check_choice, check_range, register
from jaxcl.methods._mvgrl import MVGRL, MVGRLInputs
from jaxcl.methods._windows import over_windows

# "none": no mixing (z_hat = z, then g): the control for the mixing's effect (not in the paper).
MIXINGS = ("random", "binary", "mo", "mp", "none")
# Node level also "propagate": z_hat = P z with the adjacency view's normalised matrix P as
# fixed weights (the official node script as first published, before its attention was used).
NODE_MIXINGS = (*MIXINGS, "propagate")
# the mixings whose model has the projections p_m, p_n (and so may add the diversity loss)
DIVERSITY_MIXINGS = ("mp", "propagate")
EVAL_FEATURES = ("mixed", "encoder")
# The node objective's negatives: Eq. 7's both views ("both") or the other view's only, as
# the official node script contrasts ("cross").
NODE_NEGATIVES = ("both", "cross")
# The key of random-mix at evaluation: a fixed draw (embeddings a function of the parameters).
EVAL_KEY = 0
PARTNERS = ("wp", "op")
# Where the node model mixes: the adjacency view's output, ``g(mix(PReLU(A X W)))`` (our
# reading of Section 3.3), or inside its GCN layer, ``PReLU(g(mix(A X W)))`` (the official
# node script's ``GCN.forward`` with ``attn=True``).
MIX_AT = ("output", "pre_activation")


def _square(width: int, rngs: nnx.Rngs) -> nnx.Linear:
    """A ``width x width`` linear map without bias, Glorot-uniform (the official code's)."""
    init = nnx.initializers.xavier_uniform()
    return nnx.Linear(width, width, use_bias=False, kernel_init=init, rngs=rngs)


class MixHead(nnx.Module):
    """m-Mix's MLP ``g`` after the mixing (Linear - PReLU - Linear, the official code's
    ``to_v``) and, for mp-mix, the projections ``p_m``, ``p_n`` (Glorot-uniform, no bias)."""

    def __init__(self, width: int, *, projections: bool, rngs: nnx.Rngs):
        self.g_in, self.g_out = _square(width, rngs), _square(width, rngs)
        self.g_act = nnx.PReLU(negative_slope_init=0.25)
        self.p_m = _square(width, rngs) if projections else None
        self.p_n = _square(width, rngs) if projections else None

    def g(self, z: jax.Array) -> jax.Array:
        return self.g_out(self.g_act(self.g_in(z)))

    def projections(self) -> tuple[jax.Array, jax.Array]:
        return self.p_m.kernel[...], self.p_n.kernel[...]


# The m-Mix keys only some mixings read: any other mixing would ignore them.
READ_BY = {
    "self_weight": ("mo",),  # C of Eq. 5
    "threshold": ("mo", "mp", "binary"),  # -op's; random-mix has no similarity
    "mix_temperature": ("mo", "mp"),  # their softmax's
    "mix_dropout": ("random", "binary", "mo", "mp"),  # dropout on mixing weights
    "block_size": ("random", "binary", "mo", "mp"),  # the dense (-op) path's row blocks
}


def check_read(name: str, hp, defaults) -> None:
    """ValueError naming a key of :data:`READ_BY` in ``hp`` that is set away from its
    ``defaults`` value for a mixing that does not read it."""
    for key, readers in READ_BY.items():
        if key in hp and hp.mixing not in readers and hp[key] != defaults[key]:
            raise ValueError(
                f"config.method.{key} = {hp[key]!r}: mixing={hp.mixing!r} ignores it (only "
                f"{list(readers)} read it): expected the default {defaults[key]!r} ({name})"
            )


def check_mixing(name: str, hp, defaults, choices=MIXINGS) -> None:
    """ValueError naming the first bad m-Mix hyperparameter of ``config.method``
    (``defaults``: the method's, for :func:`check_read`)."""
    check_choice(name, "mixing", hp.mixing, choices)
    check_range(name, hp, "self_weight", 0.0, 1.0)
    check_range(name, hp, "temperature", 0.0, low_open=True)
    check_read(name, hp, defaults)
    # diversity > 0: the paper's Eq. 6 (the projections pushed apart, as the official node
    # script); < 0: the official graph script's sign (its distance added to the loss, so the
    # projections are pulled together).
    if hp.diversity and hp.mixing not in DIVERSITY_MIXINGS:
        raise ValueError(
            f"config.method.diversity = {hp.diversity!r}: expected 0 unless mixing is one of "
            f"{DIVERSITY_MIXINGS} (got mixing={hp.mixing!r}; only those have projections)"
        )


def mix_with(hp, head: MixHead, z: jax.Array, key: jax.Array, **partners) -> jax.Array:
    """``z``'s hard negatives by the mixer ``hp.mixing`` names (``partners``: the edges,
    masks, threshold or blocks to pass on); ``z`` itself for ``'none'``."""
    if hp.mixing == "none":
        return z
    if hp.mixing == "random":
        partners.pop("threshold", None)  # no similarity to threshold
        return mixers.random_mix(key, z, **partners)
    if hp.mixing == "binary":
        return mixers.binary_mix(z, **partners)
    # the mixing softmax's temperature: 1 in the paper (Eq. 3-4); node level only
    t = hp.get("mix_temperature", 1.0)
    if hp.mixing == "mo":
        return mixers.mo_mix(z, self_weight=hp.self_weight, temperature=t, **partners)
    return mixers.mp_mix(z, *head.projections(), temperature=t, **partners)


def with_diversity(hp, head, z, loss, metrics, *, where=None, weights=None):
    """``(loss, metrics)`` with ``hp.diversity`` times the diversity loss (Eq. 6) of ``z``
    under ``head``'s projections added for mp-mix (and ``metrics['loss']`` set); ``weights``
    as :func:`jaxcl.losses.mmix_diversity_loss`'s."""
    if hp.mixing in DIVERSITY_MIXINGS and hp.diversity:
        div = losses.mmix_diversity_loss(z, *head.projections(), where=where, weights=weights)
        metrics["diversity_loss"] = div
        loss = loss + hp.diversity * div
    metrics["loss"] = loss
    return loss, metrics


class MMixNodeModel(models.MVGRLModel, MixHead):
    """MVGRL's two view encoders (no discriminator) with m-Mix's :class:`MixHead` parts
    (``g``, ``p_m``, ``p_n``) on the model itself."""

    def __init__(
        self,
        adjacency,
        diffusion,
        width: int,
        *,
        projections: bool,
        pre_activation: bool = False,
        rngs: nnx.Rngs,
    ):
        models.MVGRLModel.__init__(self, adjacency, diffusion, None)
        MixHead.__init__(self, width, projections=projections, rngs=rngs)
        # mix_at='pre_activation': the adjacency view's PReLU, applied after g (the GCN
        # itself then has none)
        self.a_act = nnx.PReLU(negative_slope_init=0.25) if pre_activation else None


@register
class MVGRLMix(MVGRL):
    """MVGRL + m-Mix (node level): m-Mix's Table 1/5 rows on Cora and Citeseer.

    Both of MVGRL's views are encoded as in :class:`jaxcl.methods.MVGRL` (one GCN per view:
    the normalised adjacency and the PPR diffusion) into ``z^a``, ``z^b``. The adjacency
    view's embeddings are mixed, ``z_hat^a = mix(z^a)`` (``config.method.mixing``: ``mo``,
    ``mp``, ``random``, ``binary``, or ``none``: no mixing, ``z_hat^a = z^a``, a control
    the paper does not report; partners ``wp``: the graph's neighbours, sparse, or
    ``op``: all nodes, with ``threshold``), passed through the MLP ``g``, and contrasted with
    ``z^b`` by m-Mix's node objective (:func:`jaxcl.losses.mmix_node_loss`, Eq. 7-8, cosine
    similarity, ``temperature``), plus ``diversity`` times the diversity loss (Eq. 6) for
    mp-mix. Evaluation embeds with ``g(z_hat^a) + z^b`` (``eval_features='mixed'``): the
    paper's Table 10 evaluates the "attentive branch" output, i.e. view a after the mixing
    and ``g``, plus view b (random-mix draws its weights from a fixed key there);
    ``'encoder'`` gives MVGRL's ``z^a + z^b`` instead. On Cora the two differ by 0.5-1.5
    points (the README's m-Mix section).

    Our reading where the paper is silent, and where we depart from the official code
    (Sherrylone/M-Mix ``node/``):

    * the mixing acts on the encoder's output and ``g`` follows it (Section 3.3, "m-mix
      followed by an MLP"): ``g(mix(PReLU(A X W + b)))``; the code instead mixes inside the
      GCN layer, before its PReLU, ``PReLU(g(mix(A X W)))`` (and adds no bias in either
      view): ``mix_at='pre_activation'`` (one GCN layer only) mixes there too, with the
      bias kept, the diversity loss on the pre-activation embeddings as the code, and
      evaluation on ``PReLU(g(mix(A X W + b))) + z^b`` (``'encoder'``: ``PReLU(A X W + b)
      + z^b``);
    * the objective has both views' within-view negatives (Eq. 7); the code contrasts only
      across views (``negatives='cross'``: :func:`jaxcl.losses.infonce` of ``g(z_hat^a)``
      and ``z^b``, both directions averaged, as the code's two cross-entropies);
    * mo-mix keeps ``self_weight`` (C) for the row itself and shares ``1 - C`` over the
      partners; mp-mix and random-mix put the row itself in their softmax (see
      :mod:`jaxcl.mixers`);
    * ``mixing='propagate'`` (not a row of the paper): the weights are the adjacency view's
      own normalised matrix instead of a softmax, ``z_hat = P z``; with ``mix_at=
      'pre_activation'`` that is ``PReLU(g(P (P X W + b)))``, the official node script as
      first published (its attention computed, unused; with ``window_edges='cut'`` both
      ``P`` are the window's block of the whole graph's matrix, as its slices), and
      ``diversity`` > 0 adds Eq. 6 on ``p_m``, ``p_n`` as that script did;
    * ``mix_temperature`` (default 1, the paper's: none) divides mo-/mp-mix's logits;
    * ``mixing='mp'`` with ``diversity=0`` is the "mp-mix w/o div" row. The diversity loss is
      minimised with the paper's sign (the projections pushed apart), as the node script;
      a negative ``diversity`` gives the official graph script's sign (pulled together);
    * the code's attention dropout (0.1) is not applied by default: ``mix_dropout = 0.1``
      drops that fraction of the mixing weights during training (the row's own included,
      the kept ones scaled by ``1 / 0.9``, as ``F.dropout``), never at evaluation; a fixed
      number of epochs (no early
      stopping); the whole graph every step, or ``windows`` node windows of
      ``window_size`` as :class:`jaxcl.methods.MVGRL` (the objective within each window,
      the mixing and the diversity loss over the whole graph); with ``window_edges='cut'``
      each window is encoded as its own sub-graph, as the official script's slices of the
      normalised matrices, its embeddings mixed among its own edges, and the diversity loss
      taken over the windows' rows.

    References:
      Zhang et al., "m-Mix: Generating Hard Negatives via Multi-sample Mixing for
      Contrastive Learning", KDD 2022, Section 3, Appendix A; Hassani & Khasahmadi,
      "Contrastive Multi-View Representation Learning on Graphs", ICML 2020.
    """

    name = "mvgrl_mmix"
    defaults = {
        **MVGRL.defaults,
        "mixing": "mp",
        "partners": "wp",
        "self_weight": 0.2,
        "threshold": -1.0,  # cosine >= -1: no threshold
        "diversity": 1.0,
        "temperature": 1.0,
        "block_size": 0,  # dense (op) mixing in row blocks; 0 = one N x N block
        # What evaluation embeds: "mixed" g(mix(z_a)) + z_b (the paper's Table 10) or
        # "encoder" z_a + z_b.
        "eval_features": "mixed",
        # Eq. 7's negatives from both views ("both") or the other view's only ("cross").
        "negatives": "both",
        # Mix the adjacency view's output ("output") or inside its GCN layer, before the
        # PReLU ("pre_activation", the official node script's placement).
        "mix_at": "output",
        # Training only: this fraction of the mixing weights dropped (the official node
        # script's attention dropout, 0.1; the paper: none).
        "mix_dropout": 0.0,
        # Temperature of mo-/mp-mix's softmax over the partners (the paper: 1, none).
        "mix_temperature": 1.0,
    }

    def __init__(self, config):
        super().__init__(config)
        hp = self.hp
        if hp.mixing == "propagate" and (hp.partners != "wp" or hp.mix_dropout):
            raise ValueError(
                f"config.method.mixing = 'propagate' weighs the graph's edges: expected "
                f"partners='wp' and mix_dropout=0, got {hp.partners!r} and {hp.mix_dropout!r}"
            )
        check_mixing(self.name, hp, self.defaults, NODE_MIXINGS)
        check_choice(self.name, "partners", hp.partners, PARTNERS)
        check_choice(self.name, "eval_features", hp.eval_features, EVAL_FEATURES)
        check_choice(self.name, "negatives", hp.negatives, NODE_NEGATIVES)
        check_range(self.name, hp, "block_size", 0)
        check_choice(self.name, "mix_at", hp.mix_at, MIX_AT)
        check_range(self.name, hp, "mix_temperature", 0.0, low_open=True)
        if not 0.0 <= hp.mix_dropout < 1.0:
            raise ValueError(f"config.method.mix_dropout = {hp.mix_dropout!r}: expected [0, 1)")
        check_range(self.name, hp, "threshold", -1.0, 1.0)  # a cosine; -1: no threshold
        if hp.partners == "wp" and (hp.threshold > -1.0 or hp.block_size):  # -op's settings
            raise ValueError(
                f"config.method.threshold = {hp.threshold!r}, block_size = {hp.block_size!r}: "
                "they act only over all nodes (partners='op'); -wp mixes a node's neighbours"
            )
        depth = config.model.encoder_depth
        if hp.mix_at == "pre_activation" and depth != 1:
            raise ValueError(
                f"config.method.mix_at = 'pre_activation' mixes inside the adjacency view's "
                f"only GCN layer: expected config.model.encoder_depth = 1, got {depth!r}"
            )

    @property
    def adjacency_activation(self):
        # mix_at='pre_activation': the PReLU moves after the mixing and g (MMixNodeModel.a_act)
        return None if self.hp.mix_at == "pre_activation" else "prelu"

    def build(self, spec, rngs):
        mvgrl = super().build(spec, rngs)
        width = self.config.model.encoder_width
        return MMixNodeModel(
            mvgrl.adjacency,
            mvgrl.diffusion,
            width,
            projections=self.hp.mixing == "mp"
            or (self.hp.mixing == "propagate" and bool(self.hp.diversity)),
            pre_activation=self.hp.mix_at == "pre_activation",
            rngs=rngs,
        )

    def mix(
        self,
        model: MMixNodeModel,
        z: jax.Array,
        graph,
        key: jax.Array,
        edge_mask=None,
        *,
        train: bool = False,
        coefs=None,
    ) -> jax.Array:
        """The hard negatives ``z_hat`` of the adjacency view's embeddings ``z`` (``graph``:
        its edges, of which only those in ``edge_mask`` count when given); with ``train``,
        ``mix_dropout`` of the mixing weights dropped; ``coefs``: see :meth:`propagate`."""
        hp = self.hp
        if hp.mixing == "propagate":
            return self.propagate(z, graph, edge_mask, coefs)
        extra = {}
        if train and hp.mix_dropout and hp.mixing != "none":
            key, k_drop = jax.random.split(key)
            extra = dict(dropout=hp.mix_dropout, dropout_key=k_drop)
        if hp.partners == "wp":
            kw = dict(senders=graph.senders, receivers=graph.receivers)
            if edge_mask is not None:
                kw["edge_mask"] = edge_mask
        else:
            kw = dict(threshold=None if hp.threshold <= -1.0 else hp.threshold)
            if hp.block_size:
                kw["block_size"] = hp.block_size
        return mix_with(hp, model, z, key, **kw, **extra)

    def coefficients(self, graph, n: int, edge_mask=None):
        """``(edge_coef, self_coef)`` of the adjacency view's GCN weights ``D^-1/2 (A + w I)
        D^-1/2`` (``self_loop_weight`` w) of ``graph``'s ``n`` nodes (edges in ``edge_mask``)."""
        loop = self.hp.self_loop_weight
        s, r = graph.senders, graph.receivers
        return graphs.gcn_normalization(s, r, n, edge_mask=edge_mask, add_self_loops=loop)

    def propagate(self, z: jax.Array, graph, edge_mask=None, coefs=None) -> jax.Array:
        """``P z``: ``z`` propagated over the graph's edges (those in ``edge_mask``) with the
        adjacency view's GCN weights, :meth:`coefficients` of ``graph``; or with ``coefs``,
        ``(edge_coef, self_coef)`` computed elsewhere, the edges outside ``edge_mask`` then
        cut *after* normalising, as the GCN's ``edge_cut``: a window's slice of the whole
        graph's coefficients gives the window's block of the whole graph's matrix, the one
        its encoder used (:meth:`cut_window_loss`)."""
        n = z.shape[0]
        if coefs is None:
            edge_coef, self_coef = self.coefficients(graph, n, edge_mask)
        else:
            edge_coef, self_coef = coefs
            if edge_mask is not None:
                edge_coef = jnp.where(edge_mask, edge_coef, jnp.zeros((), edge_coef.dtype))
        messages = edge_coef[:, None].astype(z.dtype) * graphs.gather_nodes(z, graph.senders)
        out = graphs.aggregate_edges(messages, graph.receivers, n)
        return out + self_coef[:, None].astype(z.dtype) * z

    def branch(self, model: MMixNodeModel, z: jax.Array, *mix_args, **mix_kwargs) -> jax.Array:
        """The mixed branch ``g(mix(z))`` (``mix_args``: :meth:`mix`'s after ``z``), with the
        adjacency view's PReLU after it for ``mix_at='pre_activation'`` (``z`` then the GCN
        layer's pre-activation)."""
        hard = model.g(self.mix(model, z, *mix_args, **mix_kwargs))
        return hard if model.a_act is None else model.a_act(hard)

    def loss(self, model, inputs: MVGRLInputs, key, extra):
        key, ids = self.step_windows(key, inputs)
        objective = self.objective()
        if self.cut_windows:
            return self.cut_window_loss(model, inputs, key, ids, objective)
        z_a, z_b = model.embed(inputs)
        hard = self.branch(model, z_a, inputs.graph, key, train=True)
        # each window's nodes contrasted among themselves, the mean over windows
        contrast = over_windows(objective, hard, z_b, ids)
        return with_diversity(self.hp, model, z_a, contrast, {"contrast": contrast})

    def cut_window_loss(self, model, inputs: MVGRLInputs, key, ids, objective):
        """The loss with every window encoded as its own sub-graph (``window_edges='cut'``,
        MVGRL's and m-Mix's code): each window's embeddings mixed among the window's own
        edges (or all of its nodes, ``op``), the objective within the window, its mean
        over the windows, and the diversity loss over all windows' rows."""
        size = ids.shape[1]
        graph = inputs.graph
        # propagate: the whole graph's P, as the window's encoder (embed_window) propagates
        n = graph.nodes.shape[0]
        whole = self.coefficients(graph, n) if self.hp.mixing == "propagate" else None

        def window(start, k):
            z_a, z_b = model.embed_window(inputs, start, size)
            senders, receivers, inside = graphs.window_edges(
                graph.senders, graph.receivers, start, size
            )
            local = graph._replace(senders=senders, receivers=receivers)
            coefs = None
            if whole is not None:  # the window's rows of the self loops' coefficients
                coefs = (whole[0], jax.lax.dynamic_slice_in_dim(whole[1], start, size))
            hard = self.branch(model, z_a, local, k, inside, train=True, coefs=coefs)
            return objective(hard, z_b), z_a

        per_window, z_a = jax.vmap(window)(ids[:, 0], jax.random.split(key, ids.shape[0]))
        contrast = jnp.mean(per_window)
        z_a = z_a.reshape(-1, z_a.shape[-1])
        return with_diversity(self.hp, model, z_a, contrast, {"contrast": contrast})

    def objective(self):
        """``objective(hard, z_b)``: Eq. 7-8 (``negatives='both'``) or the official
        script's cross-view InfoNCE (``'cross'``)."""
        tau = self.hp.temperature
        if self.hp.negatives == "cross":  # the official script: cross-view logits only

            def objective(u, v):
                return losses.infonce(u, v, temperature=tau, symmetric=True)
        else:

            def objective(u, v):
                return losses.mmix_node_loss(u, v, temperature=tau)

        return objective

    def features(self, model, inputs: MVGRLInputs):
        z_a, z_b = model.embed(inputs)
        if self.hp.eval_features == "encoder":
            return (z_a if model.a_act is None else model.a_act(z_a)) + z_b
        return self.branch(model, z_a, inputs.graph, jax.random.key(EVAL_KEY)) + z_b
