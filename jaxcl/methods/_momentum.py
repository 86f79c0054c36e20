"""Momentum methods on images: MoCo v2 and BYOL, each with and without i-Mix.

Both keep a target copy of the encoder and projection head in the train state's ``extra``
(checkpointed with the model), moved towards the online parameters after every applied
update (:meth:`Method.after_update`). The target runs in training mode, so its batch norm
uses the statistics of the batch it sees; its running averages are never used (only the
online encoder is evaluated) and are not kept.

Batch norm and MoCo's shuffle-BN: with per-GPU batch norm (PyTorch's DistributedDataParallel
without SyncBN) a query and its positive key are normalised with statistics of the same
sub-batch, a signal that sets the positive apart from negatives normalised elsewhere. MoCo
breaks it by shuffling the key batch across the GPUs (He et al. 2020, Sec. 3.3); SimCLR and
MoCo v3 normalise over the global batch instead. jaxcl's default is the latter: the arrays
are global under ``jit`` (one set of statistics over all devices), the query and key batches
in separate calls, so no sub-batch is shared by a query and its key alone. (What both fixes
leave is batch-level: the current batch's keys carry the current batch's statistics, the
queue's keys earlier batches'.) ``method.bn_groups = G`` (MoCo's and BYOL's) reproduces the
official codes' setup instead, a G-GPU DDP run with shuffle-BN, as i-Mix's code runs (``--bn
shuffle``, its default for MoCo and BYOL; 2 GPUs on CIFAR): every batch norm of the model
normalises each of G equal slices of the batch with its own statistics
(:class:`jaxcl.models.BatchNorm`), and the key (target) batch is shuffled across the slices
before the target network and put back after, so that a query and its key are normalised
with statistics of different images. The two setups differ in more than the leak: batch norm
over slices of ``N / G`` is noisier. BYOL's calls concatenate the two views (``2N``): there
the slices are ``2G``, each view's batch in G of them, as i-Mix's code with ``--sym`` calls
each view separately on every GPU (its ``run.sh`` rows are one-directional; jaxcl's BYOL loss
is symmetric); each view's target batch is shuffled within the view. ``G = 1`` (the default)
is global batch norm without a shuffle for MoCo, and for BYOL batch norm over each view's
batch (two slices, as BYOL's own code normalises each view in its own call). Two
departures from DDP: the running averages fold in the slices' mean statistics (DDP keeps the
first GPU's), and i-Mix's mixing partners are drawn from the whole batch rather than within
each GPU's slice.

MoCo v2 (He et al. 2020; Chen et al. 2020): the query network (encoder + 2-layer head) on
the first view, the EMA key network (constant momentum ``momentum``) on the second; InfoNCE
with each query's own key as the positive and a queue of ``queue_size`` past keys as the
negatives (``N x (1 + K)`` logits). With i-Mix the logits are ``N x (N + K)``, the batch's
keys then the queue's (the official code's ``mocon``), so that the virtual label ``1 - lam``
on key ``perm(i)`` has a target. The keys are enqueued after the update
(:func:`jaxcl.methods.enqueue`).

BYOL (Grill et al. 2020): online encoder + projector + predictor, target encoder +
projector by EMA with the cosine schedule ``1 - (1 - base) (cos(pi k / K) + 1) / 2`` over
the run's ``K`` steps; the symmetric regression loss between normalised predictions and
target projections. With i-Mix each view is mixed with its own ``(lam, perm)`` (``lam`` per
batch, or per sample with ``lam_per_sample``), and each prediction's loss is ``lam`` times
its cosine to its own target ``z_i`` plus ``1 - lam`` times its cosine to ``z_perm(i)``
(:func:`jaxcl.losses.imix_byol_loss`), both directions. The ``lam`` metric is the mean over
both directions' draws.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcl import augment, losses, models
from jaxcl.methods._base import Batch, Method, build_encoder, register
from jaxcl.methods._images import IMAGE_VIEW_DEFAULTS, ImageViewsMethod, simclr_views
from jaxcl.methods._imix import check_imix, imix_mix
from jaxcl.methods._queue import (
    check_queue_size,
    enqueue,
    queue_filled,
    queue_init,
    queue_mask,
    queue_specs,
)


def _check_momentum(key, value):
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not 0.0 <= value < 1.0:  # a bool (False) is no momentum
        raise ValueError(f"config.method.{key} = {value!r}: expected a number in [0, 1)")


def _target_params(model) -> dict:
    params = nnx.state(model, nnx.Param)
    return {"encoder": params["encoder"], "head": params["head"]}


def _target_forward(model, target, x):
    """The target network: the online encoder + head's graph with the EMA parameters, batch
    norm on ``x``'s statistics (its updates discarded); no gradient flows back."""
    target = jax.lax.stop_gradient(target)

    def with_target(module, params):
        graphdef, _, rest = nnx.split(module, nnx.Param, ...)
        return nnx.merge(graphdef, params, rest, copy=True)

    encoder = with_target(model.encoder, target["encoder"])
    head = with_target(model.head, target["head"])
    return jax.lax.stop_gradient(head(encoder(x)))


def _check_groups(method, hp, config):
    """``method.bn_groups``: an int >= 1 dividing the batch (BYOL: each view's batch)."""
    groups = hp.bn_groups
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(
            f"config.method.bn_groups = {groups!r}: expected an int >= 1 (slices of the batch "
            f"with their own batch-norm statistics; 1: global batch norm) ({method})"
        )
    batch = config.get("train", {}).get("batch_size")
    if isinstance(batch, int) and batch % groups:
        raise ValueError(
            f"config.method.bn_groups = {groups}: config.train.batch_size = {batch} is not a "
            f"multiple of it ({method}: every slice the same size, as every GPU's)"
        )


def _shuffled(perm, x, fn):
    """``fn`` on ``x[perm]``, the result put back in ``x``'s order (shuffle-BN's shuffle and
    unshuffle: per-sample outputs change only through batch norm's statistics)."""
    return fn(x[perm])[jnp.argsort(perm)]


# The shuffle's key, folded out of the step's key so that G = 1 draws what it drew before.
_SHUFFLE = 0x5B


def _ema(target, params, momentum):
    online = {"encoder": params["encoder"], "head": params["head"]}
    return jax.tree.map(lambda t, p: momentum * t + (1.0 - momentum) * p, target, online)


@register
class MoCo(ImageViewsMethod):
    """MoCo v2: EMA key encoder, a queue of past keys, InfoNCE on ``N x (1 + K)`` logits.

    The queue starts empty and its unwritten rows are left out of the logits
    (:func:`queue_mask`) until ``queue_size / batch`` steps have filled it; MoCo's code starts
    from random unit vectors instead. So the first step has no negatives (its loss and
    gradient are exactly 0) and the first few have fewer than ``queue_size``."""

    name = "moco"
    defaults = {
        "temperature": 0.2,
        "momentum": 0.99,
        "queue_size": 4096,
        "bn_groups": 1,
        **IMAGE_VIEW_DEFAULTS,
    }
    # i-Mix's code (`--proj mlpbn1`): no batch norm on the head's output layer
    model_defaults = {
        "head_depth": 2,
        "head_width": 2048,
        "embed_dim": 128,
        "head_output_norm": False,
    }

    def __init__(self, config):
        super().__init__(config)
        _check_momentum("momentum", self.hp.momentum)
        check_queue_size(self.name, config)
        _check_groups(self.name, self.hp, config)

    def build(self, spec, rngs):
        return models.set_batch_norm_groups(super().build(spec, rngs), self.hp.bn_groups)

    def init_extra(self, model, key):
        return {
            "target": _target_params(model),
            "queue": queue_init(self.hp.queue_size, self.config.model.embed_dim),
        }

    def extra_specs(self, extra):
        specs = jax.tree.map(lambda _: jax.sharding.PartitionSpec(), extra["target"])
        return {"target": specs, "queue": queue_specs()}

    def queries(self, key, a):
        """The query batch and its virtual labels (no mixing: ``lam = 1``, identity)."""
        return a, jnp.float32(1.0), jnp.arange(a.shape[0])

    def contrast(self, q, k, lam, perm, queue):
        """MoCo's loss: ``N x (1 + K)`` logits, each query's own key then the queue's keys."""
        del lam, perm
        q = losses.l2_normalize(q)
        positive = jnp.sum(q * k, axis=-1, keepdims=True)
        negative = q @ queue["keys"].T
        negative = jnp.where(queue_mask(queue)[None, :], negative, -jnp.inf)
        logits = jnp.concatenate([positive, negative], axis=1) / self.hp.temperature
        return jnp.mean(jax.nn.logsumexp(logits, axis=1) - logits[:, 0])

    def loss(self, model, batch: Batch, key, extra):
        k_views, k_mix = jax.random.split(key)
        a, b = simclr_views(k_views, batch.x, self.hp)
        q_in, lam, perm = self.queries(k_mix, a)
        q = model(q_in)
        target = functools.partial(_target_forward, model, extra["target"])
        if self.hp.bn_groups > 1:  # shuffle-BN
            order = jax.random.permutation(jax.random.fold_in(key, _SHUFFLE), b.shape[0])
            k = _shuffled(order, b, target)
        else:
            k = target(b)
        k = losses.l2_normalize(k)
        loss = self.contrast(q, k, lam, perm, extra["queue"])
        metrics = {
            "loss": loss,
            "lam": jnp.mean(lam),
            "queue_filled": queue_filled(extra["queue"]) * 1.0,
        }
        return loss, metrics, k

    def after_update(self, *, params, model_state, extra, outputs, step):
        return {
            "target": _ema(extra["target"], params, self.hp.momentum),
            "queue": enqueue(extra["queue"], outputs),
        }


@register
class IMixMoCo(MoCo):
    """MoCo v2 + i-Mix: the queries mixed (mixup or CutMix, ``lam ~ Beta(alpha, alpha)``),
    virtual labels ``lam`` on the own key and ``1 - lam`` on the partner's."""

    name = "imix_moco"
    defaults = {**MoCo.defaults, "alpha": 1.0, "mix": "mixup", "lam_per_sample": False}

    def __init__(self, config):
        super().__init__(config)
        check_imix(self.hp, method=self.name)

    def queries(self, key, a):
        return imix_mix(key, a, self.hp)

    def contrast(self, q, k, lam, perm, queue):
        """i-Mix's ``N x (N + K)`` logits: the batch's keys then the queue's (the official
        code's ``mocon``), so the partner's key ``perm(i)`` is a target."""
        return losses.imix_npair_loss(
            q,
            k,
            lam=lam,
            perm=perm,
            temperature=self.hp.temperature,
            negatives=queue["keys"],
            negatives_where=queue_mask(queue),
        )


class BYOLModel(nnx.Module):
    """Online network: encoder, projector (``head``), predictor."""

    def __init__(self, encoder, head, predictor):
        self.encoder, self.head, self.predictor = encoder, head, predictor

    def __call__(self, x):
        return self.predictor(self.head(self.encoder(x)))


def cosine_momentum(step, base, total):
    """BYOL's target momentum at ``step``: from ``base`` to 1 over ``total`` steps."""
    k = jnp.minimum(jnp.asarray(step, jnp.float32), total)
    return 1.0 - (1.0 - base) * (jnp.cos(math.pi * k / max(total, 1)) + 1.0) / 2.0


def byol_views(key, x, count=2):
    """BYOL's two views (:data:`jaxcl.augment.BYOL_VIEWS`: blur 1.0 / 0.1, solarise 0 /
    0.2), cropped on the device unless the host cropped."""
    x = augment.to_unit_range(x)
    host_cropped = x.ndim == 5
    size = tuple(x.shape[2:4]) if host_cropped else x.shape[1]  # host crops: as they are
    view = functools.partial(augment.byol_view, size=size, crop=not host_cropped)
    if not host_cropped:
        return augment.batch_views(key, x, view, settings=augment.BYOL_VIEWS[:count])
    keys = jax.random.split(key, (count, x.shape[0]))
    return tuple(
        jax.vmap(functools.partial(view, **augment.BYOL_VIEWS[v]))(keys[v], x[:, v])
        for v in range(count)
    )


@register
class BYOL(Method):
    """BYOL: predictor on the online side, EMA target with the cosine momentum schedule."""

    name = "byol"
    defaults = {"base_momentum": 0.99, "bn_groups": 1}
    # i-Mix's code (`--proj mlpbn1 --pred mlpbn1`): no batch norm on the output layers
    model_defaults = {
        "head_depth": 2,
        "head_width": 4096,
        "embed_dim": 256,
        "head_output_norm": False,
    }
    data_kinds = ("image",)
    image_views = 2

    def __init__(self, config):
        super().__init__(config)
        _check_momentum("base_momentum", self.hp.base_momentum)
        _check_groups(self.name, self.hp, config)

    def build(self, spec, rngs):
        m = self.config.model
        encoder, width = build_encoder(m, spec, rngs)
        norm = m.head_output_norm
        head = models.projection_head(
            width,
            depth=m.head_depth,
            width=m.head_width,
            out_dim=m.embed_dim,
            output_norm=norm,
            rngs=rngs,
        )
        predictor = models.projection_head(
            m.embed_dim,
            depth=2,
            width=m.head_width,
            out_dim=m.embed_dim,
            output_norm=norm,
            rngs=rngs,
        )
        # every call is on both views (2N): G slices per view
        return models.set_batch_norm_groups(
            BYOLModel(encoder, head, predictor), 2 * self.hp.bn_groups
        )

    def init_extra(self, model, key):
        return {"target": _target_params(model)}

    def mix(self, key, a, b):
        """The online inputs and each direction's virtual labels (``lam``, ``perm``); without
        i-Mix ``lam = 1`` and the identity."""
        one, identity = jnp.float32(1.0), jnp.arange(a.shape[0])
        return a, b, (one, one), (identity, identity)

    def loss(self, model, batch: Batch, key, extra):
        k_views, k_mix = jax.random.split(key)
        a, b = byol_views(k_views, batch.x)
        a_in, b_in, (lam_a, lam_b), (perm_a, perm_b) = self.mix(k_mix, a, b)
        p_a, p_b = jnp.split(model(jnp.concatenate([a_in, b_in])), 2)
        target = functools.partial(_target_forward, model, extra["target"])
        if self.hp.bn_groups > 1:  # shuffle-BN, each view's batch shuffled within the view
            k_a, k_b = jax.random.split(jax.random.fold_in(key, _SHUFFLE))
            n = a.shape[0]
            order = jnp.concatenate(
                [jax.random.permutation(k_a, n), n + jax.random.permutation(k_b, n)]
            )
            z_a, z_b = jnp.split(_shuffled(order, jnp.concatenate([a, b]), target), 2)
        else:
            z_a, z_b = jnp.split(target(jnp.concatenate([a, b])), 2)
        loss = losses.imix_byol_loss(p_a, z_b, lam=lam_a, perm=perm_a) + losses.imix_byol_loss(
            p_b, z_a, lam=lam_b, perm=perm_b
        )
        return loss, {"loss": loss, "lam": (jnp.mean(lam_a) + jnp.mean(lam_b)) / 2}

    def after_update(self, *, params, model_state, extra, outputs, step):
        if self.total_steps is None:
            raise ValueError(
                "BYOL.after_update: `total_steps` is None; the momentum schedule spans the "
                "run's steps, so set `method.total_steps` (the trainer does) before training"
            )
        total = self.total_steps
        tau = cosine_momentum(step, self.hp.base_momentum, total)
        return {"target": _ema(extra["target"], params, tau)}


@register
class IMixBYOL(BYOL):
    """BYOL + i-Mix: in each direction the online view is mixed (mixup or CutMix) with its own
    ``(lam, perm)``, as the official code mixes each query of its symmetric loss."""

    name = "imix_byol"
    defaults = {**BYOL.defaults, "alpha": 1.0, "mix": "mixup", "lam_per_sample": False}

    def __init__(self, config):
        super().__init__(config)
        check_imix(self.hp, method=self.name)

    def mix(self, key, a, b):
        k_a, k_b = jax.random.split(key)
        a_mix, lam_a, perm_a = imix_mix(k_a, a, self.hp)
        b_mix, lam_b, perm_b = imix_mix(k_b, b, self.hp)
        return a_mix, b_mix, (lam_a, lam_b), (perm_a, perm_b)
