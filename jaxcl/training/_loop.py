"""``train_and_evaluate``: pretraining on a device mesh, checkpoints, evaluation."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from absl import logging
from flax import nnx
from jax.extend.core import jaxpr_as_fun
from jax.sharding import NamedSharding, PartitionSpec

from jaxcl import _tracing, methods, models, optim
from jaxcl.training import (
    _checkpoint,
    _config,
    _early_stopping,
    _host,
    _logging,
    _mesh,
    _task,
    _workdir,
)
from jaxcl.training._state import TrainState
from jaxcl.training._step import StepContext, make_default_train_step

# Steps dispatched ahead of the one being waited for. Two keep an accelerator busy while the
# host prepares the next batch; an unbounded queue of multi-device programs can starve one
# device's thread of XLA's CPU runtime and deadlock its collectives (seen with 8 virtual
# CPU devices on 2 cores).
_MAX_STEPS_IN_FLIGHT = 2

# The method's init_extra gets a key of its own, apart from the steps' keys.
_EXTRA_KEY = 0x45585452


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


def state_shardings(abstract_state: TrainState, mesh, extra_specs) -> TrainState:
    """The sharding of every leaf of the state: replicated, except the method's ``extra``,
    laid out by its ``PartitionSpec``s (a prefix tree of them is broadcast)."""
    replicated = _mesh.replicated(mesh)
    shardings = jax.tree.map(lambda _: replicated, abstract_state)
    specs = jax.tree.map(
        lambda spec: NamedSharding(mesh, spec),
        extra_specs,
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )
    extra = jax.tree.map(lambda s, sub: jax.tree.map(lambda _: s, sub), specs, abstract_state.extra)
    return dataclasses.replace(shardings, extra=extra)


def _as_float32(tree):
    """Evaluation reads float32 features whatever the compute dtype."""
    return jax.tree.map(
        lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree
    )


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str) -> dict:
    """Pretrains ``config.method`` on ``config.data`` and evaluates the frozen encoder.

    The task of ``config.data.name`` places each global batch on a ``data`` mesh axis of all
    devices; losses are computed over the global batch and jit partitions them. Checkpoints
    (the whole train state, the method's extra state included) go to ``workdir/checkpoints``
    every ``config.train.checkpoint_every_steps`` and the run resumes from the newest one
    automatically; rerunning a finished run reproduces its results. On a multi-host pod run
    the same command on every host (``jax.distributed.initialize()`` is called here when
    one is detected).

    Returns:
      The results (also written to ``workdir/results.json``; the config goes to
      ``workdir/config.json``): the task's evaluation (test top-1 of the linear probe or
      classifier for tabular data; the graph protocols' mean accuracies), final loss,
      timings.
    """
    _config.validate(config)
    method = methods.get(config.method.name)(config)
    if method.pretrains and config.train.reuse_host_memory:  # before JAX's CPU backend
        applied = _host.reuse_host_memory()
        logging.info("train.reuse_host_memory: %s", "applied" if applied else "not applied")
    # before JAX's backends, too (on also where the method has no train section: 'none')
    if config.train.get("eigen_cpu_convolutions", True):
        _host.eigen_cpu_convolutions()
    _mesh.maybe_initialize_distributed()
    _workdir.check_workdir(workdir)
    _workdir.make_workdir(workdir)
    _workdir.save_config(config, workdir)

    mesh = _mesh.make_mesh(config.mesh.data)
    # Steps are traced under the mesh: a method's step may use jax.shard_map over the
    # 'data' axis (e.g. a queue split by rows, updated in place) without being handed it.
    # cheap_sharding_probes (process-wide, for the whole run): flax's variable writes cost
    # O(1) each while the steps trace, not a walk over everything traced so far
    # (jaxcl._tracing).
    with jax.set_mesh(mesh), _tracing.cheap_sharding_probes():
        return _run(config, workdir, method, mesh)


@dataclasses.dataclass
class Run:
    """Everything a run is made of before its first step: what ``train_and_evaluate`` builds,
    and what :func:`load_run` gives back for a workdir's checkpoint.

    Attributes:
      config, method, task, mesh: the run's config, method, task and device mesh.
      total_steps: steps of the whole run.
      graphdef, eval_graphdef: the model's structure in training / evaluation mode
        (``nnx.merge(graphdef, state.params, state.model_state)`` rebuilds the model).
      schedule, tx: the learning rate and the optimiser.
      shardings: a :class:`TrainState` of the shardings of every leaf.
      abstract_state: the state's shapes, dtypes and shardings.
      init_state: the function that builds the state before the first step.
    """

    config: ml_collections.ConfigDict
    method: methods.Method
    task: _task.Task
    mesh: jax.sharding.Mesh
    total_steps: int
    graphdef: nnx.GraphDef
    eval_graphdef: nnx.GraphDef
    schedule: optax.Schedule
    tx: optax.GradientTransformation
    shardings: TrainState
    abstract_state: TrainState
    init_state: Callable[[], TrainState]

    @classmethod
    def build(cls, config, method, mesh) -> Run:
        task = _task.make_task(config, method, mesh)
        total_steps = task.steps_per_epoch * (config.train.epochs if method.pretrains else 0)
        method.total_steps = total_steps  # e.g. BYOL's momentum schedule runs over the run

        def build_model():
            model = method.build(task.spec, rngs=nnx.Rngs(config.seed))
            return models.set_compute_dtype(model, config.model.compute_dtype)

        if method.pretrains:
            o = config.optim
            schedule = optim.make_schedule(
                o.schedule,
                peak=o.lr,
                total_steps=total_steps,
                warmup_steps=round(o.warmup_epochs * task.steps_per_epoch),
            )
            tx = method.optimizer(schedule)
        else:
            schedule, tx = optax.constant_schedule(0.0), optax.identity()
        extra_key = jax.random.fold_in(jax.random.key(config.seed), _EXTRA_KEY)

        patience = config.train.get("early_stopping_patience", 0) if method.pretrains else 0
        graphdefs = {}

        def init_state():
            model = build_model()
            extra = method.init_extra(model, extra_key)
            graphdefs["train"], params, model_state = nnx.split(model, nnx.Param, ...)
            state = TrainState.create(params, model_state, tx, extra)
            if patience:
                state = dataclasses.replace(state, best=_early_stopping.init(params, model_state))
            model.eval()  # batch norm on running averages for evaluation (after the split)
            graphdefs["eval"] = nnx.graphdef(model)
            return state

        # One trace of the model's construction gives the state's shapes, both graphdefs and
        # the program that initialises the state: tracing builds the model in Python, which
        # for a ResNet-50 takes seconds, and `jax.jit(run.init_state, ...)` (in `_run`, in
        # the benchmarks) replays the jaxpr instead of tracing the construction again.
        with _tracing.cheap_sharding_probes():
            closed, abstract = jax.make_jaxpr(init_state, return_shape=True)()
        treedef = jax.tree.structure(abstract)

        def replay_init_state():
            return jax.tree.unflatten(treedef, jaxpr_as_fun(closed)())

        shardings = state_shardings(abstract, mesh, method.extra_specs(abstract.extra))
        abstract = jax.tree.map(
            lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), abstract, shardings
        )
        graphdef, eval_graphdef = graphdefs["train"], graphdefs["eval"]
        return cls(
            config, method, task, mesh, total_steps, graphdef, eval_graphdef, schedule, tx,
            shardings, abstract, replay_init_state,
        )  # fmt: skip

    def checkpointer(self, workdir: str) -> _checkpoint.Checkpointer:
        train = self.config.train
        pretrains = self.method.pretrains
        return _checkpoint.Checkpointer(
            workdir,
            every_steps=train.checkpoint_every_steps if pretrains else 1,
            keep=train.keep_checkpoints if pretrains else 1,
        )

    def step_context(self) -> StepContext:
        return StepContext(self.method, self.graphdef, self.tx, self.schedule, self.config)

    def train_step(self):
        """The jitted step: the method's own or the default, state donated."""
        ctx = self.step_context()
        step_fn = self.method.make_train_step(ctx) or make_default_train_step(ctx)
        replicated = _mesh.replicated(self.mesh)
        return jax.jit(
            step_fn,
            in_shardings=(self.shardings, self.task.batch_sharding(), replicated),
            out_shardings=(self.shardings, replicated),
            donate_argnums=0,
        )

    def model(self, state: TrainState, *, train: bool = False) -> nnx.Module:
        """The model with ``state``'s parameters (evaluation mode unless ``train``)."""
        graphdef = self.graphdef if train else self.eval_graphdef
        return nnx.merge(graphdef, state.params, state.model_state, copy=True)


def load_run(
    config: ml_collections.ConfigDict, workdir: str, step: int | None = None
) -> tuple[Run, TrainState]:
    """A run's pieces and its train state at checkpoint ``step`` (default: the newest).

    With early stopping (``train.early_stopping_patience``) the parameters the run evaluated,
    those of its lowest-loss epoch, are ``state.best['params']`` (and ``['model_state']``);
    ``state.params`` are the last epoch's.

    Call under ``jax.set_mesh(run.mesh)`` what traces the method's code (the trainer does).

    Example (after ``train_and_evaluate(config, workdir)``)::

        run, state = jaxcl.training.load_run(config, workdir)
        features = run.method.features(run.model(state), batch)
    """
    _config.validate(config)
    method = methods.get(config.method.name)(config)
    mesh = _mesh.make_mesh(config.mesh.data)
    with jax.set_mesh(mesh):
        run = Run.build(config, method, mesh)
        checkpointer = run.checkpointer(workdir)
        if checkpointer.latest_step() is None:
            raise FileNotFoundError(f"load_run: no checkpoint in {checkpointer.directory}")
        state = checkpointer.restore(run.abstract_state, step)
        checkpointer.close()
    return run, state


def _run(config, workdir, method, mesh) -> dict:
    run = Run.build(config, method, mesh)
    task, total_steps = run.task, run.total_steps
    steps_per_epoch = task.steps_per_epoch
    logging.info(
        "%s on %s: %s; %d steps on %d devices (%s)",
        method.name,
        task.name,
        task.describe(),
        total_steps,
        mesh.size,
        jax.devices()[0].platform,
    )
    checkpointer = run.checkpointer(workdir)
    if checkpointer.latest_step() is not None:
        state = checkpointer.restore(run.abstract_state)
    else:
        state = jax.jit(run.init_state, out_shardings=run.shardings)()
    start_step = int(jax.device_get(state.step))

    writer = _logging.make_writer(workdir)
    replicated = _mesh.replicated(mesh)
    eval_graphdef = run.eval_graphdef

    # Outputs replicated: every process reads the whole result (on a pod, too).
    @functools.partial(jax.jit, out_shardings=replicated)
    def eval_features(params, model_state, batch):
        model = nnx.merge(eval_graphdef, params, model_state)
        return _as_float32(method.features(model, batch))

    @functools.partial(jax.jit, out_shardings=replicated)
    def eval_logits(params, model_state, batch):
        return _as_float32(nnx.merge(eval_graphdef, params, model_state)(batch))

    def features_of(state):
        return lambda batch: eval_features(state.params, state.model_state, batch)

    def logits_of(state):
        return lambda batch: eval_logits(state.params, state.model_state, batch)

    history = _workdir.EvalHistory(workdir, start_step // max(1, steps_per_epoch))
    t_start = time.perf_counter()
    if start_step < total_steps:
        key = jax.random.key(config.seed)
        loop = _Loop(config, method, task, writer, checkpointer, workdir, total_steps, start_step)
        try:
            state = loop.run(state, run.train_step(), key, features_of, history)
        finally:
            # Also when interrupted: a save in flight finishes before this returns or
            # raises, so the workdir holds what a rerun resumes from.
            checkpointer.wait()
    train_seconds = time.perf_counter() - t_start

    t_eval = time.perf_counter()
    steps_taken = int(jax.device_get(state.step))
    final_kw, stopping = {}, {}
    if state.best is not None:  # early stopping: evaluate the best epoch's parameters
        stopping = _early_stopping.results(state, steps_per_epoch, total_steps)
        final_kw["epoch"] = stopping["early_stopping_best_epoch"]
        state = _early_stopping.best_state(state)
    results = {
        "method": method.name,
        "data": task.name,
        "steps": steps_taken,
        # From the state: a rerun of a finished run reports the loss of its last step.
        "final_loss": float(jax.device_get(state.last_loss)),
        "pretrain_seconds": train_seconds,
        "devices": mesh.size,
        "platform": jax.devices()[0].platform,
    }
    results.update(stopping)
    results.update(task.final(features_of(state), logits_of(state), history.entries, **final_kw))
    results["eval_seconds"] = time.perf_counter() - t_eval
    writer.write_scalars(
        total_steps, {k: v for k, v in results.items() if isinstance(v, float) and "top1" in k}
    )
    writer.flush()
    checkpointer.close()
    _workdir.write_results(workdir, results)
    logging.info("results: %s", results)
    return results


def _epoch_batches(task, epoch: int, index: int):
    """Epoch ``epoch``'s batches from batch ``index``: the task's own ``start`` where its
    ``batches`` takes one (no batch before it is read), else the skipped batches are drawn
    and dropped."""
    if "start" in inspect.signature(task.batches).parameters:
        return task.batches(epoch, start=index)
    return itertools.islice(task.batches(epoch), index, None)


class _Loop:
    """The training loop: dispatch, metrics, checkpoints, evaluations, the non-finite stop."""

    def __init__(self, config, method, task, writer, checkpointer, workdir, total, start):
        self.config, self.method, self.task = config, method, task
        self.writer, self.checkpointer, self.workdir = writer, checkpointer, workdir
        self.total = total
        self.progress = _logging.Progress(method.name, total, task.examples_per_step, start)
        self.start = start
        self.patience = config.train.get("early_stopping_patience", 0)
        self.pending: list[tuple[int, dict]] = []
        self.history: list[tuple[int, dict]] = []

    def flush(self, step):
        if not self.pending:
            return
        fetched = jax.device_get(self.pending)
        self.pending.clear()
        host = [(s, {k: float(v) for k, v in m.items()}) for s, m in fetched]
        self.history[:] = host[-1000:]
        means = {k: float(np.mean([m[k] for _, m in host])) for k in host[-1][1]}
        means.update(self.progress.update(step, means))
        self.writer.write_scalars(step, means)

    def check_finite(self, state, step):
        bad_step = int(jax.device_get(state.nonfinite_step))
        if bad_step < 0:
            return
        self.flush(step)
        name, value = _first_nonfinite(self.history, bad_step)
        path = _checkpoint.save_for_inspection(self.workdir, bad_step, state)
        self.checkpointer.wait()
        raise FloatingPointError(
            f"{self.method.name}: `{name}` became {value} at step {bad_step}; training "
            f"stopped. The state that produced it (no update applied) is in {path}; the "
            f"regular checkpoints (latest step {self.checkpointer.latest_step()}) are kept "
            "unchanged. NaN or inf anywhere in a batch's inputs reaches the loss (ordinary "
            "JAX arithmetic; jaxcl's losses ignore only rows their mask excludes): check the "
            "data as well as the learning rate."
        )

    def run(self, state, train_step, key, features_of, history):
        cfg, task = self.config.train, self.task
        steps_per_epoch = task.steps_per_epoch
        if _early_stopping.stop_now(state, self.patience, self.start // max(1, steps_per_epoch)):
            return state  # a stopped run, rerun: nothing left to train
        end_epoch = jax.jit(_early_stopping.end_epoch, donate_argnums=0) if self.patience else None
        batches = iter(())
        for step in range(self.start, self.total):
            epoch, index = divmod(step, steps_per_epoch)
            if index == 0 or step == self.start:
                batches = _epoch_batches(task, epoch, index)
            state, metrics = train_step(state, task.place(next(batches)), key)
            self.pending.append((step, metrics))
            if len(self.pending) > _MAX_STEPS_IN_FLIGHT:
                jax.block_until_ready(self.pending[-1 - _MAX_STEPS_IN_FLIGHT][1])
            done = step + 1
            epoch_done, epoch_end = done // steps_per_epoch, done % steps_per_epoch == 0
            if end_epoch is not None and epoch_end:
                # before this step's checkpoint, which must hold the updated bookkeeping
                state = end_epoch(state, np.int32(epoch_done))
            stop = epoch_end and _early_stopping.stop_now(state, self.patience, epoch_done)
            if done % cfg.log_every_steps == 0 or done == self.total or stop:
                self.flush(done)
                self.check_finite(state, done)
            if done % cfg.checkpoint_every_steps == 0 or done == self.total or stop:
                self.check_finite(state, done)
                self.checkpointer.maybe_save(done, state, force=done == self.total or stop)
            if epoch_end and task.evaluate_at(epoch_done):
                self.check_finite(state, done)
                scores = task.evaluate(features_of(state), epoch_done)
                self.writer.write_scalars(done, _logging.scalars(scores))
                logging.info("epoch %d: %s", epoch_done, scores)
                history.append(epoch_done, scores)
            if stop:
                break
        return state
