"""Small real methods that exercise the engine's seams, and their seconds-long configs.

    python -m jaxcl.main --config=tests/configs/consumers.py:queue --workdir=/tmp/queue

* ``test_ema`` (argument ``ema``): a BYOL-like method. The train state's ``extra`` holds a
  target copy of the encoder and projector, moved after every applied update towards the
  online parameters by an EMA whose momentum depends on the step (``after_update``).
* ``test_second_order`` (``second_order``): a MetAug-like method with two optimisers (one
  per parameter group, :func:`jaxcl.optim.partition`): the encoder and head step on
  ``L(theta, omega)``; a feature generator ``omega`` steps on the gradient of
  ``L(theta'(omega), omega)``, where ``theta'`` is one inner optax (SGD) step of the encoder
  on ``L``: second order, through the inner step, in one jitted step of the method's own
  (``make_train_step``).
* ``test_groups`` (``groups``): parameter groups through the trainer: the encoder frozen,
  the head on plain SGD at ``head_lr_scale`` times the run's schedule.
* ``test_queue`` (``queue``): a MoCo-like method with the public memory queue
  (:func:`jaxcl.methods.queue_init` / :func:`~jaxcl.methods.enqueue`) in ``extra``, split by
  rows over the ``data`` axis (each device a ring of its own batch rows' embeddings,
  updated in place), enqueued once per step.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import ml_collections
import optax
from flax import nnx

from jaxcl import losses, methods, mixers, models, optim
from jaxcl.configs.common import apply_setup, parse_arg
from jaxcl.training import base_config


def _two_noisy_views(key, x, scale):
    k1, k2 = jax.random.split(key)
    return mixers.gaussian_noise(k1, x, scale=scale), mixers.gaussian_noise(k2, x, scale=scale)


# --------------------------------------------------------------------------------------------
# EMA target


class _Online(nnx.Module):
    def __init__(self, encoder, head, predictor):
        self.encoder, self.head, self.predictor = encoder, head, predictor

    def __call__(self, x):
        return self.predictor(self.head(self.encoder(x)))


def ema_momentum(step, base, horizon):
    """BYOL's schedule: ``1 - (1 - base) (cos(pi k / K) + 1) / 2``, from base to 1."""
    k = jnp.minimum(step.astype(jnp.float32), horizon)
    return 1.0 - (1.0 - base) * (jnp.cos(math.pi * k / horizon) + 1.0) / 2.0


@methods.register
class EMATargetMethod(methods.Method):
    name = "test_ema"
    defaults = {"base_momentum": 0.5, "horizon": 40, "noise": 0.3}

    def build(self, spec, rngs):
        m = self.config.model
        encoder, width = methods.build_encoder(m, spec, rngs)
        head = models.projection_head(
            width, depth=m.head_depth, width=m.head_width, out_dim=m.embed_dim, rngs=rngs
        )
        predictor = models.projection_head(
            m.embed_dim, depth=2, width=m.head_width, out_dim=m.embed_dim, rngs=rngs
        )
        return _Online(encoder, head, predictor)

    def init_extra(self, model, key):
        params = nnx.state(model, nnx.Param)
        return {"target": {"encoder": params["encoder"], "head": params["head"]}}

    def loss(self, model, batch, key, extra):
        x1, x2 = _two_noisy_views(key, batch.x, self.hp.noise)
        x = jnp.concatenate([x1, x2])
        p1, p2 = jnp.split(model(x), 2)
        # The target network: the online graph with the EMA parameters; its batch norm uses
        # the batch's statistics and its running averages are not kept.
        rest = nnx.state(model, nnx.Not(nnx.Param))
        target = {"encoder": extra["target"]["encoder"], "head": extra["target"]["head"]}
        encoder = nnx.merge(nnx.graphdef(model.encoder), target["encoder"], rest["encoder"])
        head = nnx.merge(nnx.graphdef(model.head), target["head"], rest["head"])
        t1, t2 = jnp.split(jax.lax.stop_gradient(head(encoder(x))), 2)

        def regression(p, t):
            p, t = losses.l2_normalize(p), losses.l2_normalize(t)
            return jnp.mean(2.0 - 2.0 * jnp.sum(p * t, axis=-1))

        loss = regression(p1, t2) + regression(p2, t1)
        return loss, {"loss": loss}

    def after_update(self, *, params, model_state, extra, outputs, step):
        tau = ema_momentum(step, self.hp.base_momentum, self.hp.horizon)
        online = {"encoder": params["encoder"], "head": params["head"]}
        target = jax.tree.map(lambda t, p: tau * t + (1.0 - tau) * p, extra["target"], online)
        return {"target": target}


# --------------------------------------------------------------------------------------------
# Second order, two optimisers


def _infonce(a, b, tau):
    a = a / jnp.linalg.norm(a, axis=-1, keepdims=True)
    b = b / jnp.linalg.norm(b, axis=-1, keepdims=True)
    logits = a @ b.T / tau
    return jnp.mean(jax.nn.logsumexp(logits, axis=1) - jnp.diagonal(logits))


class _MetaModel(nnx.Module):
    def __init__(self, encoder, head, generator):
        self.encoder, self.head, self.generator = encoder, head, generator

    def __call__(self, x):
        return self.head(self.encoder(x))


@methods.register
class SecondOrderMethod(methods.Method):
    name = "test_second_order"
    defaults = {
        "noise": 0.3,
        "inner_lr": 0.5,  # the inner SGD step's learning rate
        "generator_lr": 1e-2,  # the second optimiser's (Adam) learning rate
        "aug_weight": 1.0,
        "temperature": 0.5,
    }
    _labels = staticmethod(optim.label_by_path([("^generator/", "generator")], default="model"))

    def build(self, spec, rngs):
        m = self.config.model
        encoder, width = methods.build_encoder(m, spec, rngs)
        head = models.projection_head(
            width, depth=m.head_depth, width=m.head_width, out_dim=m.embed_dim, rngs=rngs
        )
        return _MetaModel(encoder, head, nnx.Linear(m.embed_dim, m.embed_dim, rngs=rngs))

    def optimizer(self, schedule):
        return optim.partition(
            {"model": super().optimizer(schedule), "generator": optax.adam(self.hp.generator_lr)},
            self._labels,
        )

    def loss(self, model, batch, key, extra):
        """``L(theta, omega)``: InfoNCE of the two views plus InfoNCE against the view
        augmented in feature space by the generator. Written here in the inputs' dtype
        (jaxcl's losses compute in float32), so that the test can take float64 finite
        differences through it."""
        x1, x2 = _two_noisy_views(key, batch.x, self.hp.noise)
        z1, z2 = jnp.split(model(jnp.concatenate([x1, x2])), 2)
        augmented = z2 + jnp.tanh(model.generator(z2))
        tau = self.hp.temperature
        base = _infonce(z1, z2, tau)
        loss = base + self.hp.aug_weight * _infonce(z1, augmented, tau)
        return loss, {"loss": loss, "base_loss": base}

    def outer_objective(self, merge, params, model_state, batch, key, *, first_order=False):
        """``L(theta'(omega), omega)`` with ``theta' = theta - inner_lr grad_theta L``.

        Batch norm: the inner pass runs on batch statistics and its running averages are
        dropped; the outer pass likewise. ``first_order`` stops the gradient through
        ``theta'`` (the first-order approximation).
        """
        labels = self._labels(params)

        def value(p):
            return self.loss(merge(p, model_state), batch, key, {})[0]

        grads = jax.grad(value)(params)
        inner_grads = jax.tree.map(
            lambda label, g: jnp.zeros_like(g) if label == "generator" else g, labels, grads
        )
        inner = optax.sgd(self.hp.inner_lr)
        updates, _ = inner.update(inner_grads, inner.init(params), params)
        fast = optax.apply_updates(params, updates)
        if first_order:
            fast = jax.tree.map(
                lambda label, f, p: p if label == "generator" else jax.lax.stop_gradient(f),
                labels,
                fast,
                params,
            )
        return value(fast)

    def make_train_step(self, ctx):
        labels_of = self._labels

        def train_step(state, batch, key):
            step_key = jax.random.fold_in(key, state.step)
            r = ctx.loss_and_grads(state, batch, step_key)
            outer, outer_grads = jax.value_and_grad(
                lambda p: self.outer_objective(ctx.merge, p, state.model_state, batch, step_key)
            )(state.params)
            grads = jax.tree.map(
                lambda label, g, og: og if label == "generator" else g,
                labels_of(state.params),
                r.grads,
                outer_grads,
            )
            new_state = ctx.apply_gradients(
                state, grads, loss=r.loss, model_state=r.model_state, finite=jnp.isfinite(outer)
            )
            return new_state, ctx.step_metrics(state, {**r.metrics, "outer_loss": outer}, grads)

        return train_step


# --------------------------------------------------------------------------------------------
# Parameter groups


@methods.register
class GroupsMethod(methods.Method):
    name = "test_groups"
    defaults = {"noise": 0.3, "head_lr_scale": 10.0, "temperature": 0.5}
    _labels = staticmethod(optim.label_by_path([("^encoder/", "encoder")], default="head"))

    def optimizer(self, schedule):
        scale = self.hp.head_lr_scale
        return optim.partition(
            {"encoder": optim.frozen(), "head": optax.sgd(lambda step: scale * schedule(step))},
            self._labels,
        )

    def loss(self, model, batch, key, extra):
        x1, x2 = _two_noisy_views(key, batch.x, self.hp.noise)
        z1, z2 = jnp.split(model(jnp.concatenate([x1, x2])), 2)
        loss = losses.nt_xent(z1, z2, temperature=self.hp.temperature)
        return loss, {"loss": loss}


# --------------------------------------------------------------------------------------------
# Queue


@methods.register
class QueueMethod(methods.Method):
    name = "test_queue"
    defaults = {"queue_size": 512, "noise": 0.3, "temperature": 0.2}

    def init_extra(self, model, key):
        return methods.queue_init(self.hp.queue_size, self.config.model.embed_dim)

    def extra_specs(self, extra):
        return methods.queue_specs()

    def loss(self, model, batch, key, extra):
        x1, x2 = _two_noisy_views(key, batch.x, self.hp.noise)
        z1, z2 = jnp.split(model(jnp.concatenate([x1, x2])), 2)
        k = jax.lax.stop_gradient(losses.l2_normalize(z2))
        # MoCo's loss: the batch's keys and the queue's written rows as the candidates.
        loss = losses.imix_npair_loss(
            z1,
            k,
            lam=1,
            perm=jnp.arange(k.shape[0]),
            temperature=self.hp.temperature,
            negatives=extra["keys"],
            negatives_where=methods.queue_mask(extra),
        )
        return loss, {"loss": loss, "queue_filled": extra["filled"].astype(jnp.float32)}, k

    def after_update(self, *, params, model_state, extra, outputs, step):
        return methods.enqueue(extra, outputs)


# --------------------------------------------------------------------------------------------
# Configs

NAMES = {
    "ema": "test_ema",
    "second_order": "test_second_order",
    "groups": "test_groups",
    "queue": "test_queue",
}

SETUP = {
    "model.encoder_depth": 2,
    "model.encoder_width": 32,
    "model.head_depth": 2,
    "model.head_width": 32,
    "model.embed_dim": 16,
    "optim.lr": 1e-3,
    "optim.warmup_epochs": 0.0,
    "train.batch_size": 64,
    "train.epochs": 2,
    "train.log_every_steps": 5,
    "train.checkpoint_every_steps": 10,
    "eval.linear_epochs": 5,
    "eval.linear_batch_size": 64,
    "eval.knn_k": 5,
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    choice = parse_arg(arg, options=tuple(NAMES))
    c = base_config("digits", NAMES[choice.option or "queue"], optimizer="adam")
    apply_setup(c, SETUP)
    return c
