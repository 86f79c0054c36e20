"""The trainer: mesh, sharded jitted steps, LARS/Adam with warm-up + cosine, orbax checkpoints.

``train_and_evaluate(config, workdir)`` runs one configuration; ``run_variants`` runs each
entry of ``config.variants`` and tabulates the results.
"""

from jaxcl.training._config import ConfigError, base_config, validate
from jaxcl.training._host import reuse_host_memory
from jaxcl.training._loop import make_default_train_step, make_task, train_and_evaluate
from jaxcl.training._mesh import make_mesh, maybe_initialize_distributed, replicate, shard_batch
from jaxcl.training._optim import decay_mask, make_optimizer, make_schedule, warmup_cosine
from jaxcl.training._state import TrainState
from jaxcl.training._sweep import format_table, run_repeats, run_variants, variant_configs
from jaxcl.training._tasks import TabularTask, load_dataset

__all__ = [
    "ConfigError",
    "TrainState",
    "base_config",
    "decay_mask",
    "format_table",
    "load_dataset",
    "TabularTask",
    "make_default_train_step",
    "make_task",
    "make_mesh",
    "make_optimizer",
    "make_schedule",
    "maybe_initialize_distributed",
    "replicate",
    "reuse_host_memory",
    "run_repeats",
    "run_variants",
    "shard_batch",
    "train_and_evaluate",
    "validate",
    "variant_configs",
    "warmup_cosine",
]
