"""MetAug (Li et al., ICML 2022): meta feature augmentation with a second-order update,
margin-injected regularisation and the unified contrastive loss OUCL; its ablation "only
OUCL"; and SimCLR's NT-Xent on the same view-specific encoders (the baseline row).

Views (CMC's, which MetAug's code builds on): a random resized crop (area
``crop_min_scale``-1) and a horizontal flip per image, then the colour views of
``config.method.views``: ``'lab'``, the L and ab channels of CIE Lab (CMC's normalisation,
:func:`jaxcl.augment.lab_views`); ``'lab_rgb'``, L, ab and RGB (the paper's three views);
``'gray'``, two independently cropped and flipped copies of a grayscale image (Fashion-
MNIST, where there is no colour to split). Each view has its own encoder and projection head
(:class:`jaxcl.models.MultiViewModel`: CMC's split AlexNet with ``config.model.encoder =
'alexnet_half'``, or a ResNet per view for Table 2). Evaluation concatenates the encoders'
representations of the uncropped views (App. B.1).

Contrast sets. Features are l2-normalised and ``d = (cos + 1) / 2`` (in ``[0, 1]``, as the
paper and the official code). For a set of per-view features ``f^1 .. f^M`` each anchor
``f^j_i`` has, for every other view ``j'``, the positive ``f^{j'}_i`` and the negatives
``f^{j'}_k`` (``k != i``, this batch) and the ``queue_size`` past features of view ``j'``
(a memory queue per view, :func:`jaxcl.methods.enqueue`, written once per step with the
original features). One row per sample holds all its view pairs, as the official code's
single OUCL call over all pairs does. The in-batch negatives are our addition to the
paper's memory-bank negatives: they make the loss defined from the first step, before the
queue holds anything.

MetAug's objective (Eq. 11): ``L = L_ori + delta * L_aug``, ``L_ori`` the OUCL of the
original features, ``L_aug`` the sum of the OUCL of the sets in which one view's features are
replaced by its generator's ``a_omega_j(z^j)`` (one set per view) and of the set with every
view augmented (the official code's four sets for three views). ``R_sigma`` (Eq. 5) takes
its margins from the original set's similarities over the whole batch (Eq. 4) and is applied
to the pairs with one augmented and one original feature in the one-view sets.

The step (Algorithm 1, in its order), one jitted function: (a) the encoders and heads take
an optimiser step on ``g = grad_theta L(theta_t, omega)`` with the generators fixed, giving
``theta_{t+1}``; (b) at ``theta_{t+1}``, the fast weights ``theta' = theta_{t+1} - inner_lr *
grad_theta L(theta_{t+1}, omega)`` (one ``optax.sgd`` step, differentiable in ``omega``) and
the generators' step on ``grad_omega [L(theta'(omega), omega) + alpha * R_sigma]``, second
order, through the inner step. Both use the same minibatch and views (the official code's
fresh forward pass after its encoder step reads the same minibatch) and the queue as it was
before this step writes to it (the official memory bank already holds the minibatch by its
second pass; we write once per step, after the update). (Until 2026-11-29 (b) started from
``theta_t``, saving one forward and backward pass; that is not Algorithm 1, and the
generators' gradient differs: cosine 0.47 on a first step of the test model.) Batch norm:
the pass at ``theta_t`` runs on batch statistics and its running averages are the ones kept;
the passes at ``theta_{t+1}`` and at the fast weights also normalise with batch statistics,
and their running averages are dropped. No randomness inside the passes (the views are
drawn once per step from ``fold_in(key, step)``).
"""

from __future__ import annotations

import dataclasses
import itertools

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jaxcl import losses, models, optim
from jaxcl.methods._base import Method, build_encoder, check_choice, check_range, register
from jaxcl.methods._images import whole_images
from jaxcl.methods._multiview import VIEWS, cmc_views, contrast_sets, split_views
from jaxcl.methods._queue import (
    check_queue_size,
    enqueue,
    queue_filled,
    queue_init,
    queue_mask,
    queue_specs,
)

OUCL_FORMS = ("margin", "weighted", "quadratic")
SPLIT_DEFAULTS = {"views": "lab", "crop_min_scale": 0.2}
OUCL_DEFAULTS = {
    "oucl": "quadratic",  # Eq. 10, the paper's final form
    "beta": 16.0,  # the official code's temperature (gama_gh)
    "gamma": 0.4,  # App. A.4; read by the weighted and quadratic forms only (not by margin)
    "margin": 0.0,  # lambda of Eq. 8
    "decay": 1.0,  # phi_dec of §4.4 (Eq. 9)
    "queue_size": 4096,
}
MODEL_DEFAULTS = {"head_depth": 2, "head_width": 2048, "embed_dim": 128}


class SplitViewsMethod(Method):
    """A method on view-specific encoders and heads (CMC's layout) with CMC's views."""

    defaults = dict(SPLIT_DEFAULTS)
    model_defaults = MODEL_DEFAULTS
    data_kinds = ("image",)
    generators = False

    @property
    def image_views(self) -> int:
        """Host crops per image of varying size: one per gray view; the colour views all
        come from one crop, as on the device."""
        return 2 if self.hp.views == "gray" else 1

    def __init__(self, config):
        super().__init__(config)
        check_choice(self.name, "views", self.hp.views, VIEWS)
        if not 0.0 < self.hp.crop_min_scale <= 1.0:
            raise ValueError(
                f"config.method.crop_min_scale = {self.hp.crop_min_scale!r}: expected a "
                "number in (0, 1]"
            )

    def build(self, spec, rngs):
        m = self.config.model
        channels = VIEWS[self.hp.views]
        if self.hp.views != "gray" and spec.image_shape[-1] != 3:
            raise ValueError(
                f"config.method.views = {self.hp.views!r} needs RGB images; "
                f"{self.config.data.name} has {spec.image_shape[-1]} channel(s) (use 'gray')"
            )
        if self.hp.views == "gray" and spec.image_shape[-1] != 1:
            raise ValueError(
                f"config.method.views = 'gray' needs one-channel images; "
                f"{self.config.data.name} has {spec.image_shape[-1]} (use 'lab' or 'lab_rgb')"
            )
        encoders, heads = [], []
        for c in channels:
            view_spec = dataclasses.replace(spec, image_shape=(*spec.image_shape[:2], c))
            encoder, width = build_encoder(m, view_spec, rngs)
            if m.encoder == "alexnet_half":
                head = models.AlexNetHead(
                    width,
                    representation=m.representation,
                    width=m.alexnet_width,
                    embed_dim=m.embed_dim,
                    rngs=rngs,
                )
            else:
                head = models.projection_head(
                    width, depth=m.head_depth, width=m.head_width, out_dim=m.embed_dim, rngs=rngs
                )
            encoders.append(encoder)
            heads.append(head)
        gens = (
            [models.FeatureGenerator(m.embed_dim, m.generator_width, rngs=rngs) for _ in channels]
            if self.generators
            else []
        )
        return models.MultiViewModel(encoders, heads, gens)

    def views(self, key, x):
        return cmc_views(key, x, views=self.hp.views, crop_min_scale=self.hp.crop_min_scale)

    def features(self, model, batch):
        """The encoders' representations of the uncropped views, concatenated."""
        return model.represent(split_views(whole_images(batch), self.hp.views))


@register
class SplitSimCLR(SplitViewsMethod):
    """SimCLR's NT-Xent on the view-specific encoders: for every pair of views, the 2N - 2
    in-batch negatives of SimCLR (MetAug's SimCLR row on the same networks)."""

    name = "split_simclr"
    defaults = {**SPLIT_DEFAULTS, "temperature": 0.5}

    def __init__(self, config):
        super().__init__(config)
        check_range(self.name, self.hp, "temperature", 0.0, low_open=True)

    def loss(self, model, batch, key, extra):
        z = model(self.views(key, batch.x))
        pairs = list(itertools.combinations(range(len(z)), 2))
        loss = sum(losses.nt_xent(z[a], z[b], temperature=self.hp.temperature) for a, b in pairs)
        loss = loss / len(pairs)
        return loss, {"loss": loss}


@register
class MetAugOUCL(SplitViewsMethod):
    """MetAug (only OUCL): the unified contrastive loss of the original features against the
    batch and the memory queues, no generators (the paper's ablation row)."""

    name = "metaug_oucl"
    defaults = {**SPLIT_DEFAULTS, **OUCL_DEFAULTS}

    def __init__(self, config):
        super().__init__(config)
        check_choice(self.name, "oucl", self.hp.oucl, OUCL_FORMS)
        check_range(self.name, self.hp, "beta", 0.0, low_open=True)
        check_range(self.name, self.hp, "decay", 0.0, low_open=True)
        if self.hp.decay != 1.0 and self.hp.oucl != "weighted":
            # phi_dec lives in Eq. 9's weighting factors only; Eq. 8 and Eq. 10 have none.
            raise ValueError(
                f"config.method.decay = {self.hp.decay!r} (phi_dec, §4.4) acts only on "
                f"config.method.oucl = 'weighted' (Eq. 9), not on {self.hp.oucl!r}, which "
                "would ignore it: set oucl='weighted' or leave decay at 1.0"
            )
        if self.hp.margin != 0.0 and self.hp.oucl != "margin":
            raise ValueError(  # lambda lives in Eq. 8 only
                f"config.method.margin = {self.hp.margin!r} (lambda of Eq. 8) acts only on "
                f"config.method.oucl = 'margin', not on {self.hp.oucl!r}, which would ignore "
                "it: set oucl='margin' or leave margin at 0.0"
            )
        if self.hp.oucl != "margin":  # Eq. 10 is Eq. 9 with O+ = 1 + gamma, O- = -gamma
            check_range(self.name, self.hp, "gamma", 0.0)
        check_queue_size(self.name, config)

    def init_extra(self, model, key):
        dim = self.config.model.embed_dim
        return {"queues": [queue_init(self.hp.queue_size, dim) for _ in VIEWS[self.hp.views]]}

    def extra_specs(self, extra):
        return {"queues": [queue_specs() for _ in extra["queues"]]}

    def after_update(self, *, params, model_state, extra, outputs, step):
        return {"queues": [enqueue(q, z) for q, z in zip(extra["queues"], outputs, strict=True)]}

    def oucl(self, sets):
        """This run's OUCL form (``config.method.oucl``) of one contrast set."""
        hp = self.hp
        kw = {"beta": hp.beta, "negatives_where": sets["neg_where"]}
        if hp.oucl == "margin":
            return losses.oucl_loss(sets["pos"], sets["neg"], margin=hp.margin, **kw)
        if hp.oucl == "weighted":
            # Eq. 9 with §3.3's single-margin parameterisation (O+ = 1 + gamma, ...).
            return losses.oucl_weighted_loss(
                sets["pos"],
                sets["neg"],
                optimum_pos=1.0 + hp.gamma,
                optimum_neg=-hp.gamma,
                margin_pos=1.0 - hp.gamma,
                margin_neg=hp.gamma,
                decay=hp.decay,
                **kw,
            )
        return losses.oucl_quadratic_loss(sets["pos"], sets["neg"], gamma=hp.gamma, **kw)

    def queues(self, extra):
        return [(q["keys"], queue_mask(q)) for q in extra["queues"]]

    def loss(self, model, batch, key, extra):
        z = model(self.views(key, batch.x))
        loss = self.oucl(contrast_sets(z, [False] * len(z), self.queues(extra)))
        metrics = {"loss": loss, "queue_filled": queue_filled(extra["queues"][0]) * 1.0}
        return loss, metrics, [jax.lax.stop_gradient(f) for f in z]


@register
class MetAug(MetAugOUCL):
    """MetAug: OUCL on original and generator-augmented features, the generators trained by
    a second-order meta step with the margin regulariser R_sigma (module docstring).

    Hyperparameters (``config.method``): ``delta`` (Eq. 11; Table 5's best, 1e-5), ``alpha``
    (R_sigma's weight; the official default 1e-11; 0 is the "without R_sigma" row),
    ``margin_type`` (``'large'``, ``'medium'``, ``'small'``), ``inner_lr`` (the fast weights'
    SGD step; the official ``bb_learning_rate`` 1e-3), ``generator_lr`` (Adam), and OUCL's.

    Scale against the official code: our OUCL is the paper's Eq. 8-10 with its ``1 / beta``;
    the official ``NCECriterion_MetAug`` computes the softplus over ``gamma`` times 16, i.e.
    ``beta = 16`` times our loss. Adam's encoder and generator steps (the paper's optimiser,
    ours) do not see that factor, but the fast-weight SGD step and ``alpha``'s balance do:
    the official fast step is that of ``inner_lr = 1.6e-2`` here, and its ``alpha`` that of
    ``alpha / 16``. (The official code's own encoder and generator optimisers are SGD, whose
    steps the factor does scale: its SGD lr 0.03 is that of 0.48 on our loss.) The defaults
    keep the paper's loss with the official values as printed (1e-3, 1e-11).

    Batch norm and randomness in the step: every pass (at ``theta_t``, at the updated
    ``theta_{t+1}`` and at the fast weights ``theta'``) normalises with its own batch
    statistics; the running averages the step keeps are those of the pass at ``theta_t``, and
    the others' are dropped (tested). The generators' step starts from ``theta_{t+1}``, as
    Algorithm 1 (tested). The views are drawn once per step from ``fold_in(key, step)`` and
    serve every pass; nothing
    inside the passes draws random numbers. Each view's memory queue takes the step's original
    features once, after the update (tested: one step adds exactly one batch to each queue).
    """

    name = "metaug"
    defaults = {
        **MetAugOUCL.defaults,
        "delta": 1e-5,
        "alpha": 1e-11,
        "margin_type": "large",
        "inner_lr": 1e-3,
        "generator_lr": 1e-3,
    }
    model_defaults = {**MODEL_DEFAULTS, "generator_width": 2048}
    generators = True
    labels = staticmethod(optim.label_by_path([("^generators/", "generator")], default="encoder"))

    def __init__(self, config):
        super().__init__(config)
        check_choice(self.name, "margin_type", self.hp.margin_type, losses.METAUG_MARGINS)
        for key in ("delta", "alpha", "inner_lr", "generator_lr"):
            if not self.hp[key] >= 0:
                raise ValueError(f"config.method.{key} = {self.hp[key]!r}: expected >= 0")

    def optimizer(self, schedule):
        return optim.partition(
            {"encoder": super().optimizer(schedule), "generator": optax.adam(self.hp.generator_lr)},
            self.labels,
        )

    def objective(self, model, views, extra):
        """``L_MetAug`` (Eq. 11), ``R_sigma`` (Eq. 5), metrics and the features to enqueue."""
        z = model(views)
        queues = self.queues(extra)
        n = len(z)
        original = contrast_sets(z, [False] * n, queues)
        ori = self.oucl(original)
        aug_z = model.augment(z)
        subsets = [{v} for v in range(n)] + [set(range(n))]
        aug, aug_pos, aug_neg = 0.0, [], []
        for subset in subsets:
            flags = [v in subset for v in range(n)]
            sets = contrast_sets([aug_z[v] if flags[v] else z[v] for v in range(n)], flags, queues)
            aug = aug + self.oucl(sets)
            if len(subset) == 1:
                aug_pos.append((sets["pos"], jnp.broadcast_to(sets["pos_aug"], sets["pos"].shape)))
                aug_neg.append((sets["neg"], sets["neg_where"] & sets["neg_aug"][None, :]))
        r_sigma = losses.metaug_margin_loss(
            original["pos"],
            original["neg"],
            jnp.concatenate([p for p, _ in aug_pos], axis=1),
            jnp.concatenate([s for s, _ in aug_neg], axis=1),
            margin=self.hp.margin_type,
            negatives_where=original["neg_where"],
            aug_positives_where=jnp.concatenate([w for _, w in aug_pos], axis=1),
            aug_negatives_where=jnp.concatenate([w for _, w in aug_neg], axis=1),
        )
        total = ori + self.hp.delta * aug
        metrics = {"loss": total, "ori_loss": ori, "aug_loss": aug, "r_sigma": r_sigma}
        return total, r_sigma, metrics, [jax.lax.stop_gradient(f) for f in z]

    def loss(self, model, batch, key, extra):
        total, _, metrics, outputs = self.objective(model, self.views(key, batch.x), extra)
        metrics["queue_filled"] = queue_filled(extra["queues"][0]) * 1.0
        return total, metrics, outputs

    def outer_objective(self, merge, params, model_state, views, extra, *, first_order=False):
        """The generators' objective ``L(theta'(omega), omega) + alpha R_sigma`` at ``params``
        (generators' and encoders'), with ``theta' = theta - inner_lr grad_theta L``.

        Returns ``(value, (g, inner))``: ``g`` the gradient of ``L`` at ``params``, ``inner``
        the pass's ``(loss, metrics, outputs, model_state)`` (the train step calls this at
        ``theta_{t+1}`` and takes the encoders' gradient from its own pass at ``theta_t``).
        ``first_order`` stops the gradient through ``theta'`` (the first-order approximation,
        for comparison).
        """
        labels = self.labels(params)

        def at(p):
            model = merge(p, model_state)
            total, r_sigma, metrics, outputs = self.objective(model, views, extra)
            return total, (r_sigma, metrics, outputs, _model_state(model))

        (total, (_, metrics, outputs, new_state)), g = jax.value_and_grad(at, has_aux=True)(params)
        inner = optax.sgd(self.hp.inner_lr)
        g_theta = _where_label(labels, "generator", jax.tree.map(jnp.zeros_like, g), g)
        updates, _ = inner.update(g_theta, inner.init(params), params)
        fast = optax.apply_updates(params, updates)
        if first_order:
            fast = _where_label(labels, "generator", params, jax.lax.stop_gradient(fast))
        fast_total, (fast_r_sigma, *_) = at(fast)
        value = fast_total + self.hp.alpha * fast_r_sigma
        return value, (g, (total, metrics, outputs, new_state))

    def make_train_step(self, ctx):
        def train_step(state, batch, key):
            step_key = jax.random.fold_in(key, state.step)
            views = self.views(step_key, batch.x)
            labels = self.labels(state.params)

            # (a) The regular step's gradient at theta_t, the generators fixed.
            def at_theta(p):
                model = ctx.merge(p, state.model_state)
                total, _, metrics, outputs = self.objective(model, views, state.extra)
                return total, (metrics, outputs, _model_state(model))

            (total, (metrics, outputs, model_state)), g = jax.value_and_grad(
                at_theta, has_aux=True
            )(state.params)
            g = _where_label(labels, "generator", jax.tree.map(jnp.zeros_like, g), g)
            # theta_{t+1}: the encoders' and heads' leaves of the optimiser's step on g, the
            # step `apply_gradients` takes below (the optimiser acts on each label's leaves
            # alone, so the generators' gradient, not known yet, does not change them).
            updates, _ = ctx.tx.update(g, state.opt_state, state.params)
            theta_next = optax.apply_updates(state.params, updates)

            # (b) The generators' second-order step from theta_{t+1}.
            def outer(omega):
                params = _where_label(labels, "generator", omega, theta_next)
                return self.outer_objective(ctx.merge, params, model_state, views, state.extra)

            (value, _), g_omega = jax.value_and_grad(outer, has_aux=True)(state.params)
            grads = _where_label(labels, "generator", g_omega, g)
            new_state = ctx.apply_gradients(
                state,
                grads,
                loss=total,
                model_state=model_state,
                outputs=outputs,
                finite=jnp.isfinite(value),
            )
            metrics = {
                **metrics,
                "outer_loss": value,
                "queue_filled": queue_filled(state.extra["queues"][0]) * 1.0,
            }
            return new_state, ctx.step_metrics(state, metrics, grads)

        return train_step


def _model_state(model):
    return nnx.state(model, nnx.Not(nnx.Param))


def _where_label(labels, label, if_label, otherwise):
    """Per leaf: ``if_label``'s leaf where the parameter is labelled ``label``, else
    ``otherwise``'s."""
    return jax.tree.map(lambda tag, a, b: a if tag == label else b, labels, if_label, otherwise)
