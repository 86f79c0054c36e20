"""The trainer: mesh, sharded jitted steps, LARS/Adam with warm-up + cosine, orbax checkpoints.

``train_and_evaluate(config, workdir)`` runs one configuration; ``run_variants`` runs each
entry of ``config.variants`` and tabulates the results.
"""

from jaxcl.training._config import ConfigError, base_config, validate
from jaxcl.training._loop import load_dataset, make_default_train_step, train_and_evaluate
from jaxcl.training._mesh import make_mesh, maybe_initialize_distributed, shard_batch
from jaxcl.training._optim import decay_mask, make_optimizer, warmup_cosine
from jaxcl.training._state import TrainState
from jaxcl.training._sweep import format_table, run_variants, variant_configs

__all__ = [
    "ConfigError",
    "TrainState",
    "base_config",
    "decay_mask",
    "format_table",
    "load_dataset",
    "make_default_train_step",
    "make_mesh",
    "make_optimizer",
    "maybe_initialize_distributed",
    "run_variants",
    "shard_batch",
    "train_and_evaluate",
    "validate",
    "variant_configs",
    "warmup_cosine",
]
