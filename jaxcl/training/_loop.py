"""``train_and_evaluate``: pretraining on a device mesh, checkpoints, linear evaluation."""

from __future__ import annotations

import functools
import itertools
import json
import os
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from absl import logging
from flax import nnx

from jaxcl import methods
from jaxcl.training import _checkpoint, _config, _host, _logging, _mesh, _optim, _tasks
from jaxcl.training._state import TrainState

# Steps dispatched ahead of the one being waited for. Two keep an accelerator busy while the
# host prepares the next batch; an unbounded queue of multi-device programs can starve one
# device's thread of XLA's CPU runtime and deadlock its collectives (seen with 8 virtual
# CPU devices on 2 cores).
_MAX_STEPS_IN_FLIGHT = 2


def _all_finite(tree) -> jax.Array:
    leaves = jax.tree.leaves(tree)
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))


def make_default_train_step(method, graphdef, tx, schedule):
    """The step every method uses unless it supplies its own.

    A step whose loss or gradients are not finite (or any step after one) applies no update:
    the state keeps the model that produced the failure, and records its step.
    """

    def train_step(state: TrainState, batch: methods.Batch, key: jax.Array):
        step_key = jax.random.fold_in(key, state.step)

        def loss_fn(params):
            # copy: fresh Variables at this trace level, so batch norm may update its
            # statistics inside value_and_grad.
            model = nnx.merge(graphdef, params, state.model_state, copy=True)
            loss, metrics = method.loss(model, batch, step_key)
            return loss, (metrics, nnx.state(model, nnx.Not(nnx.Param)))

        (loss, (metrics, model_state)), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            state.params
        )
        finite = jnp.isfinite(loss) & _all_finite(grads)
        ok = finite & (state.nonfinite_step < 0)

        def update(old):
            params, opt_state = old
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        # A conditional rather than a select between the old and the new state: the select
        # keeps the old optimizer state alive beside the new one (a copy of every moment
        # buffer each step); in the conditional's branch XLA updates them in place.
        params, opt_state = jax.lax.cond(
            ok, update, lambda old: old, (state.params, state.opt_state)
        )
        new_state = TrainState(
            step=state.step + 1,
            params=params,
            model_state=jax.tree.map(
                lambda n, o: jnp.where(ok, n, o), model_state, state.model_state
            ),
            opt_state=opt_state,
            nonfinite_step=jnp.where(
                finite | (state.nonfinite_step >= 0), state.nonfinite_step, state.step
            ),
        )
        metrics = dict(metrics)
        metrics["grad_norm"] = optax.tree.norm(grads)
        metrics["lr"] = schedule(state.step)
        return new_state, metrics

    return train_step


def _first_nonfinite(history, step):
    """The metric that was not finite at ``step`` (from the host-side metric history)."""
    for s, values in history:
        if s == step:
            for name in ("loss", "grad_norm"):
                if name in values and not np.isfinite(values[name]):
                    return name, values[name]
            for name, value in values.items():
                if not np.isfinite(value):
                    return name, value
    return "loss or gradient", float("nan")


def make_task(config, method, mesh):
    """The task for ``config.data.name``: tabular, graph classification or node classification."""
    from jaxcl.training import _graph_tasks

    if config.data.name in _config.DATASETS:
        return _tasks.TabularTask(config, method, mesh)
    return _graph_tasks.make(config, method, mesh)


def _load_history(path: str, upto_epoch: int) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [h for h in json.load(f) if h["epoch"] <= upto_epoch]


def _save_config(config: ml_collections.ConfigDict, workdir: str) -> None:
    """Writes ``workdir/config.json`` (process 0), so that a run's results carry its setup.

    A resumed run whose config differs from the saved one logs the keys that changed and
    keeps the saved file as ``config.<n>.json``.
    """
    if jax.process_index() != 0:
        return
    path = os.path.join(workdir, "config.json")
    text = config.to_json_best_effort(indent=2, sort_keys=True)
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if old == text:
            return
        n = 1
        while os.path.exists(os.path.join(workdir, f"config.{n}.json")):
            n += 1
        os.replace(path, os.path.join(workdir, f"config.{n}.json"))
        logging.warning(
            "%s held a different config; it is kept as config.%d.json and this run's config "
            "is written in its place",
            path,
            n,
        )
    with open(path, "w") as f:
        f.write(text)


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> dict:
    """Pretrains ``config.method`` on ``config.data`` and evaluates the frozen encoder.

    Batches go to a ``data`` mesh axis of all devices (split by rows for tabular data,
    replicated for graph batches); losses are computed over the global batch and jit
    partitions them. Checkpoints go to ``workdir/checkpoints`` every
    ``config.train.checkpoint_every_steps`` and the run resumes from the newest one
    automatically. On a multi-host pod run the same command on every host
    (``jax.distributed.initialize()`` is called here when one is detected).

    Returns:
      The results (also written to ``workdir/results.json``; the config goes to
      ``workdir/config.json``): the task's evaluation (test
      top-1 of the linear probe or classifier for tabular data; the graph protocols' mean
      accuracies), final loss, timings.
    """
    method_cls = methods.get(config.method.name)
    _config.validate(config, method_cls.defaults)
    if config.train.reuse_host_memory:  # before JAX creates its CPU backend
        applied = _host.reuse_host_memory()
        logging.info("train.reuse_host_memory: %s", "applied" if applied else "not applied")
    _mesh.maybe_initialize_distributed()
    method = method_cls(config)
    os.makedirs(workdir, exist_ok=True)
    _save_config(config, workdir)

    mesh = _mesh.make_mesh(config.mesh.data)
    task = make_task(config, method, mesh)
    steps_per_epoch = task.steps_per_epoch
    total_steps = steps_per_epoch * config.train.epochs
    logging.info(
        "%s on %s: %s; %d steps on %d devices (%s)",
        method.name,
        task.name,
        task.describe(),
        total_steps,
        mesh.size,
        jax.devices()[0].platform,
    )

    def build():
        return method.build(task.num_features, task.num_classes, rngs=nnx.Rngs(config.seed))

    abstract_model = nnx.eval_shape(build)
    graphdef = nnx.graphdef(abstract_model)
    abstract_model.eval()  # batch norm on running averages for evaluation
    eval_graphdef = nnx.graphdef(abstract_model)

    schedule = _optim.make_schedule(
        config.optim.schedule,
        peak=config.optim.lr,
        total_steps=total_steps,
        warmup_steps=round(config.optim.warmup_epochs * steps_per_epoch),
    )
    tx = _optim.make_optimizer(
        config.optim.name,
        schedule,
        weight_decay=config.optim.weight_decay,
        momentum=config.optim.momentum,
    )

    def init_state():
        _, params, model_state = nnx.split(build(), nnx.Param, ...)
        return TrainState.create(params, model_state, tx)

    replicated = _mesh.replicated(mesh)
    abstract_state = jax.eval_shape(init_state)
    abstract_state = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=replicated), abstract_state
    )
    checkpointer = _checkpoint.Checkpointer(
        workdir,
        every_steps=config.train.checkpoint_every_steps,
        keep=config.train.keep_checkpoints,
    )
    if checkpointer.latest_step() is not None:
        state = checkpointer.restore(abstract_state)
    else:
        state = jax.jit(init_state, out_shardings=replicated)()
    start_step = int(jax.device_get(state.step))

    writer = _logging.make_writer(workdir)
    key = jax.random.key(config.seed)
    if task.batch_partition == "rows":
        batch_sharding, put_batch = _mesh.batch_sharding(mesh), _mesh.shard_batch
    else:
        batch_sharding, put_batch = replicated, _mesh.replicate
    step_fn = method.make_train_step() or make_default_train_step(method, graphdef, tx, schedule)
    train_step = jax.jit(
        step_fn,
        in_shardings=(replicated, batch_sharding, replicated),
        out_shardings=(replicated, replicated),
        donate_argnums=0,
    )

    # Outputs replicated: every process reads the whole result (on a pod, too).
    @functools.partial(jax.jit, out_shardings=replicated)
    def eval_features(params, model_state, batch):
        return method.features(nnx.merge(eval_graphdef, params, model_state), batch)

    @functools.partial(jax.jit, out_shardings=replicated)
    def eval_logits(params, model_state, batch):
        return nnx.merge(eval_graphdef, params, model_state)(batch)

    def features_fn(batch):
        return eval_features(state.params, state.model_state, batch)

    def logits_fn(batch):
        return eval_logits(state.params, state.model_state, batch)

    history_path = os.path.join(workdir, "eval_history.json")
    eval_history = _load_history(history_path, start_step // max(1, steps_per_epoch))

    progress = _logging.Progress(method.name, total_steps, config.train.batch_size, start_step)
    pending: list[tuple[int, dict]] = []
    history: list[tuple[int, dict]] = []
    last_loss = float("nan")

    def flush(step):
        nonlocal last_loss
        if not pending:
            return
        fetched = jax.device_get(pending)
        pending.clear()
        host = [(s, {k: float(v) for k, v in m.items()}) for s, m in fetched]
        history[:] = host[-1000:]
        last_loss = host[-1][1].get("loss", float("nan"))
        means = {k: float(np.mean([m[k] for _, m in host])) for k in host[-1][1]}
        means.update(progress.update(step, means))
        writer.write_scalars(step, means)

    def check_finite(step):
        bad_step = int(jax.device_get(state.nonfinite_step))
        if bad_step < 0:
            return
        flush(step)
        name, value = _first_nonfinite(history, bad_step)
        path = _checkpoint.save_for_inspection(workdir, bad_step, state)
        checkpointer.wait()
        raise FloatingPointError(
            f"{method.name}: `{name}` became {value} at step {bad_step}; training stopped. "
            f"The state that produced it (no update applied) is in {path}; the regular "
            f"checkpoints (latest step {checkpointer.latest_step()}) are kept unchanged."
        )

    t_start = time.perf_counter()
    batches = iter(())
    for step in range(start_step, total_steps):
        epoch, index = divmod(step, steps_per_epoch)
        if index == 0 or step == start_step:
            batches = itertools.islice(task.batches(epoch), index, None)
        batch = put_batch(next(batches), mesh)
        state, metrics = train_step(state, batch, key)
        pending.append((step, metrics))
        if len(pending) > _MAX_STEPS_IN_FLIGHT:
            jax.block_until_ready(pending[-1 - _MAX_STEPS_IN_FLIGHT][1])
        done = step + 1
        if done % config.train.log_every_steps == 0 or done == total_steps:
            flush(done)
            check_finite(done)
        if done % config.train.checkpoint_every_steps == 0 or done == total_steps:
            check_finite(done)
            checkpointer.maybe_save(done, state, force=done == total_steps)
        if done % steps_per_epoch == 0 and task.evaluate_at(done // steps_per_epoch):
            check_finite(done)
            scores = task.evaluate(features_fn, done // steps_per_epoch)
            writer.write_scalars(done, scores)
            logging.info("epoch %d: %s", done // steps_per_epoch, scores)
            eval_history.append({"epoch": done // steps_per_epoch, **scores})
            if jax.process_index() == 0:
                with open(history_path, "w") as f:
                    json.dump(eval_history, f, indent=2)
    checkpointer.wait()
    train_seconds = time.perf_counter() - t_start

    t_eval = time.perf_counter()
    results = {
        "method": method.name,
        "data": task.name,
        "steps": total_steps,
        "final_loss": last_loss,
        "pretrain_seconds": train_seconds,
        "devices": mesh.size,
        "platform": jax.devices()[0].platform,
    }
    results.update(task.final(features_fn, logits_fn, eval_history))
    results["eval_seconds"] = time.perf_counter() - t_eval
    writer.write_scalars(
        total_steps, {k: v for k, v in results.items() if isinstance(v, float) and "top1" in k}
    )
    writer.flush()
    checkpointer.close()
    if jax.process_index() == 0:
        with open(os.path.join(workdir, "results.json"), "w") as f:
            json.dump(results, f, indent=2)
    logging.info("results: %s", results)
    return results
