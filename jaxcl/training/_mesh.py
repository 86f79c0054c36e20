"""Device mesh, batch sharding, and the multi-host start-up."""

from __future__ import annotations

import glob
import os

import jax
import numpy as np
from absl import logging
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcl.training._errors import ConfigError

DATA_AXIS = "data"


# The variables JAX's own cluster detection needs (jax._src.clusters): an ``srun`` step sets
# all five of SLURM's, an ``sbatch`` script or a shell on an allocated node only some (then
# ``jax.distributed.initialize()`` fails: "coordinator_address should be defined").
_SLURM_STEP = (
    "SLURM_JOB_ID",
    "SLURM_STEP_NODELIST",
    "SLURM_NTASKS",
    "SLURM_PROCID",
    "SLURM_LOCALID",
)
_OPEN_MPI = ("OMPI_MCA_orte_hnp_uri", "OMPI_COMM_WORLD_SIZE")


def env_count(env, name: str) -> int:
    try:
        return int(env.get(name, "1"))
    except ValueError:
        return 1


def cluster_processes(env=None) -> int:
    """How many processes a SLURM step or an Open MPI job says the run has: the number of
    tasks when JAX can detect the job (every variable it reads is set), else 1 (a single
    process: a SLURM allocation used without ``srun``, or no launcher)."""
    env = os.environ if env is None else env
    if all(v in env for v in _SLURM_STEP):
        return env_count(env, "SLURM_NTASKS")
    if all(v in env for v in _OPEN_MPI):
        return env_count(env, "OMPI_COMM_WORLD_SIZE")
    return 1


def maybe_initialize_distributed() -> None:
    """Calls ``jax.distributed.initialize()`` once when the run spans several processes.

    Cloud TPU VM slices, SLURM steps (``srun`` with more than one task) and Open MPI jobs
    (``mpirun -n`` more than 1) are detected by JAX itself. Anywhere else, set
    ``JAX_COORDINATOR_ADDRESS`` (``host:port`` of process 0), ``JAX_NUM_PROCESSES`` and
    ``JAX_PROCESS_ID`` on every process. On a single machine this does nothing, also inside a
    SLURM allocation entered without ``srun`` or with one task.
    """
    if jax.distributed.is_initialized():
        return
    env = os.environ
    # TPU VMs expose their chips as /dev/accel* (v2-v4) or /dev/vfio/<n> (v5e, v5p, v6e).
    on_tpu_vm = bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"))
    on_tpu_vm = on_tpu_vm or "TPU_WORKER_HOSTNAMES" in env
    cluster = cluster_processes(env) > 1
    if "JAX_COORDINATOR_ADDRESS" in env:
        # CPU processes need a collectives backend to talk to each other; accelerator
        # platforms ignore this setting.
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        kwargs = {}
        if "JAX_NUM_PROCESSES" in env:
            kwargs["num_processes"] = int(env["JAX_NUM_PROCESSES"])
        if "JAX_PROCESS_ID" in env:
            kwargs["process_id"] = int(env["JAX_PROCESS_ID"])
        jax.distributed.initialize(**kwargs)
    elif on_tpu_vm or cluster:
        jax.distributed.initialize()
    else:
        return
    logging.info(
        "jax.distributed: process %d of %d, %d local / %d global devices",
        jax.process_index(),
        jax.process_count(),
        jax.local_device_count(),
        jax.device_count(),
    )


def make_mesh(num_data_devices: int = -1) -> jax.sharding.Mesh:
    """A 1-D mesh over ``num_data_devices`` devices (-1 = all) on the ``data`` axis."""
    total = jax.device_count()
    n = total if num_data_devices == -1 else num_data_devices
    if not 1 <= n <= total:
        raise ConfigError(
            f"config.mesh.data = {num_data_devices}: expected -1 (all) or a count up to the "
            f"{total} devices that exist"
        )
    devices = jax.devices()[:n]
    processes = jax.process_count()
    if processes > 1:  # every process feeds its share of each batch to its own devices
        per = np.bincount([d.process_index for d in devices], minlength=processes)
        if per.min() != per.max():
            raise ConfigError(
                f"config.mesh.data = {num_data_devices}: these {n} devices come "
                f"{per.tolist()} from each of the {processes} processes, and each process "
                "places its share of every batch on its own devices: take the same number "
                f"from each (-1 for all {total})"
            )
    return jax.sharding.Mesh(np.asarray(devices), (DATA_AXIS,))


def replicated(mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def batch_sharding(mesh) -> NamedSharding:
    """Rows split over the ``data`` axis."""
    return NamedSharding(mesh, P(DATA_AXIS))


def local_rows(global_batch: int) -> slice:
    """This process's share of a global batch (all processes draw the same global order)."""
    count = jax.process_count()
    if global_batch % count:
        raise ValueError(
            f"the global batch of {global_batch} does not split over {count} processes"
        )
    per = global_batch // count
    return slice(jax.process_index() * per, (jax.process_index() + 1) * per)


def shard_batch(tree, mesh):
    """Host arrays of the GLOBAL batch -> global jax.Arrays sharded on ``data``.

    Each process contributes only its own rows (``local_rows``), so on a pod no host ever
    sends another host's data.
    """
    sharding = batch_sharding(mesh)

    def put(x):
        x = np.asarray(x)
        rows = local_rows(x.shape[0])
        return jax.make_array_from_process_local_data(sharding, x[rows], x.shape)

    return jax.tree.map(put, tree)


def place_local(tree, mesh, global_rows: int):
    """This process's rows of a global batch (``local_rows(global_rows)`` of it) -> global
    jax.Arrays sharded on ``data`` with ``global_rows`` rows: what a task passes when each
    host builds only its own devices' part (e.g. stacked graph sub-batches)."""
    sharding = batch_sharding(mesh)

    def put(x):
        x = np.asarray(x)
        return jax.make_array_from_process_local_data(sharding, x, (global_rows,) + x.shape[1:])

    return jax.tree.map(put, tree)


def replicate(tree, mesh):
    """Host arrays -> jax.Arrays with a full copy on every device (every process passes all)."""
    sharding = replicated(mesh)

    def put(x):
        if isinstance(x, jax.Array) and x.sharding == sharding:
            return x  # already placed (e.g. a node-classification graph, every step)
        x = np.asarray(x)
        return jax.make_array_from_process_local_data(sharding, x, x.shape)

    return jax.tree.map(put, tree)
