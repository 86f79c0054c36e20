"""A run's pieces, before any step: the task, the model's graphdefs, the optimiser, the train
state's shapes and shardings and the function that initialises it (``Run``); a finished
run's pieces and state from its checkpoint (``load_run``)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import ml_collections
import optax
from absl import logging
from flax import nnx
from jax.extend.core import jaxpr_as_fun
from jax.sharding import NamedSharding, PartitionSpec

from jaxcl import _tracing, methods, models, optim
from jaxcl.training import _checkpoint, _config, _early_stopping, _mesh, _task
from jaxcl.training._state import TrainState
from jaxcl.training._step import StepContext, make_default_train_step

# The method's init_extra gets a key of its own, apart from the steps' keys.
_EXTRA_KEY = 0x45585452


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
            warmup_steps = round(o.warmup_epochs * task.steps_per_epoch)
            if total_steps and warmup_steps >= total_steps:  # the schedule cuts it short
                logging.warning(
                    "config.optim.warmup_epochs = %s is as long as the run (train.epochs = "
                    "%s): the warm-up is cut to %d of %d steps and the learning rate reaches "
                    "its peak only on the last step (a quick run of a paper config?)",
                    o.warmup_epochs,
                    config.train.epochs,
                    total_steps - 1,
                    total_steps,
                )
            schedule = optim.make_schedule(
                o.schedule, peak=o.lr, total_steps=total_steps, warmup_steps=warmup_steps
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
            layout={
                "data_devices": self.mesh.shape["data"],
                "batch_size": train.get("batch_size"),
                "settings": _checkpoint.run_settings(self.config),
            },
        )

    def step_context(self) -> StepContext:
        return StepContext(self.method, self.graphdef, self.tx, self.schedule, self.config)

    def train_step(self):
        """The jitted step: the method's own or the default, state donated.

        It traces under ``jaxcl._tracing.cheap_sharding_probes`` wherever it is called
        (the trainer, a benchmark, a user's loop after ``load_run``): without it flax's
        probes make tracing quadratic in the model's size (see ``jaxcl/_tracing.py``)."""
        ctx = self.step_context()
        step_fn = self.method.make_train_step(ctx) or make_default_train_step(ctx)
        replicated = _mesh.replicated(self.mesh)

        @functools.wraps(step_fn)
        def traced_cheaply(state, batch, key):  # runs only while jit traces it
            with _tracing.cheap_sharding_probes():
                return step_fn(state, batch, key)

        return jax.jit(
            traced_cheaply,
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
