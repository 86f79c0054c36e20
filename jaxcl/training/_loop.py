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

from jaxcl import data as data_lib
from jaxcl import evaluation, methods
from jaxcl.training import _checkpoint, _config, _logging, _mesh, _optim
from jaxcl.training._state import TrainState

# Rows per forward pass when computing features for evaluation.
_EVAL_BATCH = 4096

# Steps dispatched ahead of the one being waited for. Two keep an accelerator busy while the
# host prepares the next batch; an unbounded queue of multi-device programs can starve one
# device's thread of XLA's CPU runtime and deadlock its collectives (seen with 8 virtual
# CPU devices on 2 cores).
_MAX_STEPS_IN_FLIGHT = 2


def load_dataset(cfg: ml_collections.ConfigDict) -> data_lib.ArrayDataset:
    """The tabular data set named by ``config.data``."""
    if cfg.name == "digits":
        return data_lib.load_digits_tabular()
    if cfg.name == "fashion_mnist":
        return data_lib.load_fashion_mnist(
            cfg.data_dir or None, permutation_seed=cfg.permutation_seed
        )
    if cfg.name == "tfds":
        if not cfg.data_dir:
            raise _config.ConfigError(
                "config.data.data_dir = '': data.name='tfds' needs the folder of a prepared "
                "array_record data set"
            )
        return data_lib.load_tfds_array_record(
            cfg.data_dir, cfg.tfds_name, permutation_seed=cfg.permutation_seed
        )
    raise _config.ConfigError(f"config.data.name = {cfg.name!r}: unknown data set")


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
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        finite = jnp.isfinite(loss) & _all_finite(grads)
        ok = finite & (state.nonfinite_step < 0)

        def keep(new, old):
            return jax.tree.map(lambda n, o: jnp.where(ok, n, o), new, old)

        new_state = TrainState(
            step=state.step + 1,
            params=keep(params, state.params),
            model_state=keep(model_state, state.model_state),
            opt_state=keep(opt_state, state.opt_state),
            nonfinite_step=jnp.where(
                finite | (state.nonfinite_step >= 0), state.nonfinite_step, state.step
            ),
        )
        metrics = dict(metrics)
        metrics["grad_norm"] = optax.tree.norm(grads)
        metrics["lr"] = schedule(state.step)
        return new_state, metrics

    return train_step


def _features(fn, params, model_state, x: np.ndarray, mesh) -> np.ndarray:
    """``fn`` over ``x`` in fixed-size, device-sharded batches (the last one padded)."""
    n = len(x)
    batch = min(_EVAL_BATCH, n)
    batch += -batch % mesh.size
    outs = []
    for start in range(0, n, batch):
        chunk = x[start : start + batch]
        real = len(chunk)
        if real < batch:
            chunk = np.concatenate([chunk, np.zeros((batch - real,) + x.shape[1:], x.dtype)])
        out = fn(params, model_state, _mesh.shard_batch(chunk, mesh))
        outs.append(np.asarray(jax.device_get(out))[:real])
    return np.concatenate(outs)


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


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> dict:
    """Pretrains ``config.method`` on ``config.data`` and evaluates the frozen encoder.

    The global batch is sharded over a ``data`` mesh axis of all devices; the loss is
    computed over the global batch (jit partitions it). Checkpoints go to
    ``workdir/checkpoints`` every ``config.train.checkpoint_every_steps`` and the run resumes
    from the newest one automatically. On a multi-host pod run the same command on every host
    (``jax.distributed.initialize()`` is called here when one is detected).

    Returns:
      The results (also written to ``workdir/results.json``): test top-1 of the linear
      probe (or of the supervised classifier), kNN top-1, final loss, timings.
    """
    _mesh.maybe_initialize_distributed()
    method_cls = methods.get(config.method.name)
    _config.validate(config, method_cls.defaults)
    method = method_cls(config)
    os.makedirs(workdir, exist_ok=True)

    ds = load_dataset(config.data)
    mesh = _mesh.make_mesh(config.mesh.data)
    batch_size = config.train.batch_size
    if batch_size % mesh.size:
        raise _config.ConfigError(
            f"config.train.batch_size = {batch_size}: must be a multiple of the {mesh.size} "
            "devices on the data axis"
        )
    n_train = len(ds.train_x)
    if method.pretrains and batch_size > n_train:
        raise _config.ConfigError(
            f"config.train.batch_size = {batch_size}: larger than the {n_train} training "
            f"examples of {ds.name}"
        )
    steps_per_epoch = n_train // batch_size if method.pretrains else 0
    total_steps = steps_per_epoch * config.train.epochs
    logging.info(
        "%s on %s: %d train / %d test examples, %d features, %d classes; %d steps on %d "
        "devices (%s)",
        method.name,
        ds.name,
        n_train,
        len(ds.test_x),
        ds.num_features,
        ds.num_classes,
        total_steps,
        mesh.size,
        jax.devices()[0].platform,
    )

    def build():
        return method.build(ds.num_features, ds.num_classes, rngs=nnx.Rngs(config.seed))

    abstract_model = nnx.eval_shape(build)
    graphdef = nnx.graphdef(abstract_model)
    abstract_model.eval()  # batch norm on running averages for evaluation
    eval_graphdef = nnx.graphdef(abstract_model)

    schedule = _optim.warmup_cosine(
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
        return TrainState(
            step=jnp.zeros((), jnp.int32),
            params=params,
            model_state=model_state,
            opt_state=tx.init(params),
            nonfinite_step=jnp.full((), -1, jnp.int32),
        )

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
    step_fn = method.make_train_step() or make_default_train_step(method, graphdef, tx, schedule)
    train_step = jax.jit(
        step_fn,
        in_shardings=(replicated, _mesh.batch_sharding(mesh), replicated),
        out_shardings=(replicated, replicated),
        donate_argnums=0,
    )

    # Outputs replicated: every process reads the whole result (on a pod, too).
    @functools.partial(jax.jit, out_shardings=replicated)
    def eval_features(params, model_state, x):
        return method.features(nnx.merge(eval_graphdef, params, model_state), x)

    @functools.partial(jax.jit, out_shardings=replicated)
    def eval_logits(params, model_state, x):
        return nnx.merge(eval_graphdef, params, model_state)(x)

    def knn(params, model_state):
        rows = np.random.default_rng(config.seed).permutation(n_train)[: config.eval.knn_max_train]
        train_f = _features(eval_features, params, model_state, ds.train_x[rows], mesh)
        test_f = _features(eval_features, params, model_state, ds.test_x, mesh)
        return evaluation.knn_accuracy(
            train_f,
            ds.train_y[rows],
            test_f,
            ds.test_y,
            k=min(config.eval.knn_k, len(rows)),
            num_classes=ds.num_classes,
        )

    progress = _logging.Progress(method.name, total_steps, batch_size, start_step)
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
            batches = data_lib.iterate_batches(
                ds.train_x, ds.train_y, batch_size=batch_size, seed=config.seed, epoch=epoch
            )
            batches = itertools.islice(batches, index, None)
        x, y = next(batches)
        batch = _mesh.shard_batch(methods.Batch(x=x, y=y), mesh)
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
        every = config.train.knn_every_epochs
        if every and done % steps_per_epoch == 0 and (done // steps_per_epoch) % every == 0:
            acc = knn(state.params, state.model_state)
            writer.write_scalars(done, {"knn_top1": acc})
            logging.info("step %d: kNN top-1 %.4f", done, acc)
    checkpointer.wait()
    train_seconds = time.perf_counter() - t_start

    t_eval = time.perf_counter()
    results = {
        "method": method.name,
        "data": ds.name,
        "steps": total_steps,
        "final_loss": last_loss,
        "pretrain_seconds": train_seconds,
        "devices": mesh.size,
        "platform": jax.devices()[0].platform,
    }
    if method.supervised:
        logits = _features(eval_logits, state.params, state.model_state, ds.test_x, mesh)
        results["test_top1"] = float(np.mean(np.argmax(logits, axis=-1) == ds.test_y))
    else:
        train_f = _features(eval_features, state.params, state.model_state, ds.train_x, mesh)
        test_f = _features(eval_features, state.params, state.model_state, ds.test_x, mesh)
        probe = evaluation.linear_probe(
            train_f,
            ds.train_y,
            test_f,
            ds.test_y,
            num_classes=ds.num_classes,
            epochs=config.eval.linear_epochs,
            batch_size=min(config.eval.linear_batch_size, n_train),
            learning_rate=config.eval.linear_lr,
            optimizer=config.eval.linear_optimizer,
            seed=config.seed,
        )
        results["test_top1"] = float(probe["test_top1"])
        results["linear_train_top1"] = float(probe["train_top1"])
        results["knn_top1"] = float(knn(state.params, state.model_state))
    results["eval_seconds"] = time.perf_counter() - t_eval
    writer.write_scalars(total_steps, {k: v for k, v in results.items() if "top1" in k})
    writer.flush()
    checkpointer.close()
    if jax.process_index() == 0:
        with open(os.path.join(workdir, "results.json"), "w") as f:
            json.dump(results, f, indent=2)
    logging.info("results: %s", results)
    return results
