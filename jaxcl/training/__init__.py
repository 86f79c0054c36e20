"""The trainer: tasks, train state and steps, mesh and sharding, orbax checkpoints, sweeps.

``train_and_evaluate(config, workdir)`` runs one configuration; ``run_repeats`` runs it over
several seeds and ``run_variants`` each entry of ``config.variants``, with a table of their
results. :func:`base_config` builds a config holding exactly the keys that apply to a run.

The seams a method builds on (see :class:`jaxcl.methods.Method`): :class:`TrainState` (with
the method's ``extra`` pytree), :class:`StepContext` (what a step of the method's own
needs, and the guarded update it ends with), and the :class:`Task` protocol with
:func:`register_task` for new kinds of data.
"""

from jaxcl.training import (  # noqa: F401 (registration)
    _graph_task,
    _image_task,
    _node_task,
    _paired_task,
    _tabular_task,
)
from jaxcl.training._config import base_config, conform, validate
from jaxcl.training._errors import ConfigError
from jaxcl.training._hlo import collective_bytes
from jaxcl.training._host import eigen_cpu_convolutions, reuse_host_memory
from jaxcl.training._logging import read_scalars
from jaxcl.training._loop import train_and_evaluate
from jaxcl.training._mesh import make_mesh, maybe_initialize_distributed, replicate, shard_batch
from jaxcl.training._run import Run, load_run, state_shardings
from jaxcl.training._state import TrainState
from jaxcl.training._step import (
    LossAndGrads,
    StepContext,
    all_finite,
    make_default_train_step,
)
from jaxcl.training._sweep import format_table, run_repeats, run_variants, variant_configs
from jaxcl.training._tabular_task import TabularTask, load_dataset
from jaxcl.training._task import TASKS, Task, TaskKind, kind_of, make_task, register_task

__all__ = [
    "ConfigError",
    "LossAndGrads",
    "Run",
    "StepContext",
    "TASKS",
    "TabularTask",
    "Task",
    "TaskKind",
    "TrainState",
    "all_finite",
    "base_config",
    "collective_bytes",
    "conform",
    "eigen_cpu_convolutions",
    "format_table",
    "kind_of",
    "load_dataset",
    "load_run",
    "make_default_train_step",
    "make_mesh",
    "make_task",
    "maybe_initialize_distributed",
    "read_scalars",
    "register_task",
    "replicate",
    "reuse_host_memory",
    "run_repeats",
    "run_variants",
    "shard_batch",
    "state_shardings",
    "train_and_evaluate",
    "validate",
    "variant_configs",
]
