"""The command line's answer to an ordinary mistake: one line naming the flag, the value and
what is accepted, exit status 2, before any work (each case in a subprocess)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
TINY = "tests/configs/tiny.py"


def _main(*args, cwd=ROOT):
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("XLA_FLAGS", None)
    return subprocess.run(
        [sys.executable, "-m", "jaxcl.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    "args, wants",
    [
        (["--config=nope.py"], ["--config=nope.py: no such file 'nope.py'"]),
        (
            [f"--config={TINY}", "--config.train.nope=1"],
            [
                "--config.train.nope: this config has no key 'nope' under config.train; keys "
                "there: ['batch_size', 'checkpoint_every_steps', 'early_stopping_patience', "
                "'eigen_cpu_convolutions'"
            ],
        ),  # fmt: skip
        (
            ["--config=experiments/dacl/graph_dacl.py:nosuchdataset"],
            [
                "--config=experiments/dacl/graph_dacl.py:nosuchdataset: config argument "
                "'nosuchdataset': 'nosuchdataset' is not accepted",
                "data set: ['mutag', ",
            ],
        ),  # fmt: skip
        (
            ["--config=experiments/dacl/graph_dacl.py:mutag,ptc_mr"],
            ["two of data set ('mutag', 'ptc_mr')"],
        ),
        (
            [f"--config={TINY}", "--config.train.epochs=1.5"],
            ["flag --config.train.epochs=1.5: expected an integer"],
        ),
        (
            [f"--config={TINY}", "--config.optim.lr=-1.0"],
            ["config.optim.lr = -1.0: expected a number > 0"],
        ),
        (
            [f"--config={TINY}:none", "--config.optim.lr=0.1"],
            ["--config.optim.lr: this config has no key 'optim' under config"],
        ),
        (
            ["--config=experiments/grace/cora.py:quick", "--config.method.p_e1=1.5"],
            ["config.method.p_e1 = 1.5: expected a number in [0, 1]"],
        ),
        # No --config: the override is checked against the embedded quickstart (ml_collections
        # used to fail on it with a traceback while the flag was being defined).
        (
            ["--config.train.nope=1"],
            ["--config.train.nope: this config has no key 'nope' under config.train"],
        ),
        (["--config.train.epochs=abc"], ["flag --config.train.epochs=abc: expected an integer"]),
        # The quickstart's variants each replace config.method: an override of it would be
        # silently dropped; one variant's key is overridden by its path (and reaches it).
        (
            ["--config.method.temperature=0.1"],
            ["--config.method.temperature: this config runs config.variants", "row3_dacl"],
        ),
        (
            ["--config.variants.row3_dacl.method.alpha=2.0"],
            ["config.method.alpha = 2.0: expected a number in [0.0, 1.0] (dacl)"],
        ),
        # absl's other spellings: one dash, and --noconfig. for a False bool.
        (
            ["-config=experiments/esco/synthetic_sorf.py:quick", "--config.method.lam=-1.0"],
            ["config.method.lam = -1.0: expected a number in [0.0, inf)"],
        ),
        (["--noconfig.train.nope"], ["--noconfig.train.nope: this config has no key 'nope'"]),
        (["-config.optim.nope=1"], ["-config.optim.nope: this config has no key 'nope'"]),
        (["--config=README.md"], ["'README.md' is not a Python file"]),
        ([f"--config={TINY}", "extra"], ["unexpected arguments ['extra']: jaxcl.main takes flags"]),
    ],
)
def test_usage_error_is_one_line_and_exit_status_2(args, wants, tmp_path):
    proc = _main(*args, f"--workdir={tmp_path / 'run'}")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("jaxcl.main: error: "), proc.stderr[-3000:]
    for want in wants:
        assert want in lines[0], lines[0]
    assert not (tmp_path / "run").exists()  # nothing started


def test_a_workdir_that_is_a_file_stops_a_sweep_before_its_first_run(tmp_path):
    workdir = tmp_path / "results.txt"
    workdir.write_text("not a folder")
    proc = _main("--config=experiments/quickstart.py", f"--workdir={workdir}")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"jaxcl.main: error: --workdir={workdir}: exists and is not a folder; name a folder"
    ]
    assert workdir.read_text() == "not a folder"


def test_a_config_file_that_fails_to_load_is_named_in_one_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import this_module_does_not_exist\n")
    proc = _main(f"--config={bad}", f"--workdir={tmp_path / 'run'}")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert f"{bad} does not load: ModuleNotFoundError" in line


def test_a_workdir_below_a_file_or_that_cannot_be_made_is_a_usage_error(tmp_path):
    afile = tmp_path / "results.txt"
    afile.write_text("not a folder")
    proc = _main(f"--config={TINY}", f"--workdir={afile / 'run'}")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines() == [
        f"jaxcl.main: error: --workdir={afile / 'run'}: {afile} is a file, so no folder can be "
        "made below it; name a folder"
    ]
    # /proc refuses new folders whatever the permissions: found when the folder is made,
    # after the config is validated and before any run starts.
    proc = _main(f"--config={TINY}", "--workdir=/proc/jaxcl_no_such_run")
    assert proc.returncode == 2, proc.stderr[-3000:]
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("jaxcl.main: error: --workdir=/proc/jaxcl_no_such_run: cannot be made")


def test_data_not_where_the_config_looks_is_a_usage_error_with_the_loaders_hint(tmp_path):
    proc = _main(
        "--config=experiments/dacl/tabular_fmnist_dacl.py:cpu",
        f"--config.data.data_dir={tmp_path / 'nowhere'}",
        f"--workdir={tmp_path / 'run'}",
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert "jaxcl.main: error: config.data.name = 'fashion_mnist': " in proc.stderr
    assert str(tmp_path / "nowhere") in proc.stderr and "apt-get install" in proc.stderr


SRUN_STEP = {  # what `srun -n 2` sets (the variables JAX's SLURM detection reads)
    "SLURM_JOB_ID": "7",
    "SLURM_STEP_NODELIST": "node[1-2]",
    "SLURM_NTASKS": "2",
    "SLURM_PROCID": "0",
    "SLURM_LOCALID": "0",
}


@pytest.mark.parametrize(
    ("env", "processes"),
    [
        ({}, 1),
        ({"JAX_COORDINATOR_ADDRESS": "h:1234", "JAX_NUM_PROCESSES": "4"}, 4),
        ({"JAX_NUM_PROCESSES": "4"}, 1),  # without a coordinator JAX does not use it
        (SRUN_STEP, 2),
        # An allocation used without srun (an sbatch script calling python, a shell on the
        # node): JAX's detection needs the step's variables, so one process.
        ({"SLURM_JOB_ID": "7", "SLURM_NTASKS": "2"}, 1),
        ({"OMPI_MCA_orte_hnp_uri": "1.0;tcp://10.0.0.1:1", "OMPI_COMM_WORLD_SIZE": "3"}, 3),
        ({"OMPI_COMM_WORLD_SIZE": "3"}, 1),
        ({"TPU_WORKER_HOSTNAMES": "t0,t1,t2,t3"}, 4),
        ({"TPU_WORKER_HOSTNAMES": "localhost"}, 1),  # a one-host TPU VM
    ],
)
def test_processes_are_counted_from_the_launchers_variables(monkeypatch, env, processes):
    # Read without initialising jax.distributed (which would create JAX's backends before
    # the trainer's host settings); used to refuse a multi-process run without --workdir.
    from jaxcl import main

    _launcher_env(monkeypatch, env)
    assert main._processes_from_env() == processes


def _launcher_env(monkeypatch, env):
    for name in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "OMPI_COMM_WORLD_SIZE",
                 "OMPI_MCA_orte_hnp_uri", "TPU_WORKER_HOSTNAMES", *SRUN_STEP):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize(
    ("env", "initialises"),
    [
        ({}, False),
        ({"SLURM_JOB_ID": "7", "SLURM_NTASKS": "1"}, False),  # sbatch without srun
        ({**SRUN_STEP, "SLURM_NTASKS": "1"}, False),  # one task: nothing to join
        (SRUN_STEP, True),
    ],
)
def test_a_slurm_allocation_without_an_srun_step_stays_one_process(monkeypatch, env, initialises):
    """Inside a SLURM allocation without ``srun`` JAX cannot find a coordinator, and
    ``jax.distributed.initialize()`` used to be called there and fail."""
    from jaxcl.training import _mesh

    _launcher_env(monkeypatch, env)
    calls = []
    monkeypatch.setattr(_mesh.jax.distributed, "is_initialized", lambda: False)
    monkeypatch.setattr(_mesh.jax.distributed, "initialize", lambda **kw: calls.append(kw))
    monkeypatch.setattr(_mesh.glob, "glob", lambda pattern: [])  # not a TPU VM
    monkeypatch.setattr(_mesh.logging, "info", lambda *a: None)
    _mesh.maybe_initialize_distributed()
    assert calls == ([{}] if initialises else [])
