"""``train_and_evaluate``: pretraining on a device mesh, checkpoints, evaluation."""

from __future__ import annotations

import functools
import gc
import inspect
import itertools
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from absl import logging
from flax import nnx

from jaxcl import _tracing, methods
from jaxcl.training import (
    _checkpoint,
    _config,
    _early_stopping,
    _host,
    _logging,
    _mesh,
    _workdir,
)
from jaxcl.training._run import Run

# Steps dispatched ahead of the one being waited for. Two keep an accelerator busy while the
# host prepares the next batch; an unbounded queue of multi-device programs can starve one
# device's thread of XLA's CPU runtime and deadlock its collectives (seen with 8 virtual
# CPU devices on 2 cores).
_MAX_STEPS_IN_FLIGHT = 2


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
      timings: ``pretrain_seconds`` (the training loop, the evaluations run between its
      steps included), ``in_loop_eval_seconds`` (those evaluations' share of it) and
      ``eval_seconds`` (the final evaluation).
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
    # Before the workdir is touched: more data devices than exist, or a resume with another
    # batch or other settings than the checkpoint's, is a config error.
    mesh = _mesh.make_mesh(config.mesh.data)
    _workdir.check_workdir(workdir)
    previous = _workdir.saved_config(workdir)  # the last run's, before this one replaces it
    if method.pretrains:
        _checkpoint.check_resumable(
            workdir, config.train.get("batch_size"), _checkpoint.run_settings(config), previous
        )
    _workdir.make_workdir(workdir)
    _workdir.save_config(config, workdir)

    # Steps are traced under the mesh: a method's step may use jax.shard_map over the
    # 'data' axis (e.g. a queue split by rows, updated in place) without being handed it.
    # cheap_sharding_probes (process-wide, for the whole run): flax's variable writes cost
    # O(1) each while the steps trace, not a walk over everything traced so far
    # (jaxcl._tracing).
    with jax.set_mesh(mesh), _tracing.cheap_sharding_probes():
        try:
            return _run(config, workdir, method, mesh, previous)
        finally:
            # grain keeps the last batch of every image pass it ran to the end (in shared
            # memory) in a reference cycle: the StopIteration it stores holds the frame of its
            # prefetch thread. Only Python's cycle collector frees it, so the memory went at
            # some later collection, or at exit with a warning of "leaked shared_memory
            # objects"; collecting here frees it with the run.
            gc.collect()


def _run(config, workdir, method, mesh, previous=None) -> dict:
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

    writer = _logging.make_writer(workdir, start_step)
    try:
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

        history = _workdir.EvalHistory(
            workdir,
            start_step // max(1, steps_per_epoch),
            _workdir.scoring_settings(config),
            legacy=None if previous is None else _workdir.scoring_settings(previous),
        )
        # Before any evaluation or step: a task whose score averages evaluations made during
        # training refuses a run whose recorded ones were made with other settings.
        if hasattr(task, "check_history"):
            task.check_history(history, start_step // max(1, steps_per_epoch))
        t_start = time.perf_counter()
        loop = _Loop(config, method, task, writer, checkpointer, workdir, total_steps, start_step)
        loop.make_up_evaluation(state, features_of, history)
        if start_step < total_steps:
            key = jax.random.key(config.seed)
            try:
                state = loop.run(state, run.train_step(), key, features_of, history)
            finally:
                # Also when interrupted: a save in flight finishes before this returns or
                # raises, so the workdir holds what a rerun resumes from (and its summaries).
                checkpointer.wait()
                writer.flush()
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
            # The whole loop, in-loop evaluations included (their share just below).
            "pretrain_seconds": train_seconds,
            "in_loop_eval_seconds": loop.eval_seconds,
            "devices": mesh.size,
            "platform": jax.devices()[0].platform,
        }
        results.update(stopping)
        results.update(
            task.final(features_of(state), logits_of(state), history.entries, **final_kw)
        )
        results["eval_seconds"] = time.perf_counter() - t_eval
        final = {k: v for k, v in results.items() if isinstance(v, float) and "top1" in k}
        if steps_taken == start_step:  # nothing trained (a finished or early-stopped run's
            # rerun): the scores the run wrote when it ended are in the event file already
            final = _new_scores(final, steps_taken, _workdir.saved_results(workdir))
        # at the last step taken (early stopping: before total_steps)
        writer.write_scalars(steps_taken, final)
    finally:  # the event file is closed on every way out, errors included
        writer.close()
    checkpointer.close()
    _workdir.write_results(workdir, results)
    logging.info("results: %s", results)
    return results


def _new_scores(final: dict, step: int, saved: dict | None) -> dict:
    """The final scores of ``final`` that the event files do not hold yet at ``step``: a
    rerun of a finished run writes only the scores that differ from its ``results.json``
    (``saved``; e.g. scored again with other ``eval.*``), not the same points a second time."""
    if not saved or saved.get("steps") != step:
        return final
    return {k: v for k, v in final.items() if saved.get(k) != v}


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
        self.eval_seconds = 0.0  # the evaluations run between steps (kNN monitors, curves)

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

    def evaluate(self, state, epoch, step, features_of, history):
        self.check_finite(state, step)
        start = time.perf_counter()
        scores = self.task.evaluate(features_of(state), epoch)
        self.eval_seconds += time.perf_counter() - start
        self.progress.pause(time.perf_counter() - start)
        self.writer.write_scalars(step, _logging.scalars(scores))
        logging.info("epoch %d: %s", epoch, scores)
        history.append(epoch, scores)

    def make_up_evaluation(self, state, features_of, history):
        """The epoch-end checkpoint is saved before that epoch's evaluation runs (the write
        overlaps it): a run killed between the two resumes past an evaluation it never
        recorded. Run it now, on the restored state, as the uninterrupted run did."""
        epoch, index = divmod(self.start, max(1, self.task.steps_per_epoch))
        recorded = history.recorded(epoch)  # under any settings: final() scores afresh
        if self.start and not index and self.task.evaluate_at(epoch) and not recorded:
            self.evaluate(state, epoch, self.start, features_of, history)

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
                # the metrics logged so far end here too, so that a run resumed from this
                # checkpoint averages the same windows of steps as an uninterrupted one
                self.flush(done)
                self.check_finite(state, done)
                self.checkpointer.maybe_save(done, state, force=done == self.total or stop)
            if epoch_end and task.evaluate_at(epoch_done):
                self.evaluate(state, epoch_done, done, features_of, history)
            if stop:
                break
        return state
