"""experiments/benchmarks/: bad arguments are refused by name before anything is built or
timed, and progress lines reach a redirected log as they are printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "experiments" / "benchmarks"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PYTHONUNBUFFERED")}
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "script,args,message",
    [
        ("trace_benchmark.py", ["--repeats", "0"], "--repeats must be >= 1, got 0"),
        ("metaug_benchmark.py", ["--steps", "1"], "--steps must be >= 2, got 1"),
        ("esco_benchmark.py", ["--methods", "rff,sorff"], "--methods: unknown ['sorff']"),
    ],
)
def test_bad_arguments_are_refused_by_name(tmp_path, script, args, message):
    # --out: were the argument accepted, the run's files would not land in the repository
    out = _run(str(BENCHMARKS / script), *args, "--out", str(tmp_path))
    assert out.returncode == 2, out.stderr[-2000:]  # argparse's usage error
    assert message in out.stderr, out.stderr[-2000:]


def test_progress_lines_are_not_held_back_when_stdout_is_a_file_or_pipe():
    probe = f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import _common; "
    probe += "print(sys.stdout.isatty(), sys.stdout.line_buffering)"
    out = _run("-c", probe)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["560", "simclr_r18_compiled"], "unknown step 'simclr_r18_compiled'"),
        (["gin"], "the first argument is the deadline in seconds, got 'gin'"),
    ],
)
def test_the_gpu_script_refuses_unknown_steps_before_it_starts(tmp_path, args, message):
    env = {**os.environ, "OUT": str(tmp_path / "out")}
    out = subprocess.run(
        ["bash", str(BENCHMARKS / "run_gpu.sh"), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_the_gpu_scripts_step_list_names_every_step_it_runs():
    import re

    text = (BENCHMARKS / "run_gpu.sh").read_text()
    listed = re.search(r'^STEPS="([^"]*)"', text, re.M).group(1).split()
    run = re.findall(r"^step (\w+) \d+ ", text, re.M)
    assert listed == run and len(run) == 8


def test_a_missing_comparison_library_is_named_with_how_to_install_it():
    probe = f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import _common; "
    probe += "_common.environment(('jax', 'no-such-package-jaxcl'))"
    out = _run("-c", probe)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "needs no-such-package-jaxcl, not installed here" in out.stderr, out.stderr[-2000:]
    assert "pip install -e '.[bench]'" in out.stderr
