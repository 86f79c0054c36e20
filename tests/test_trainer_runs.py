"""The trainer end to end on tiny digits runs: sharding, resume, SIGKILL, non-finite, multi-host."""

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxcl import data as data_lib
from jaxcl import training
from jaxcl.training import _tasks

ROOT = Path(__file__).parents[1]
TINY = ROOT / "tests" / "configs" / "tiny.py"


def _tiny(method="dacl", **overrides):
    sys.path.insert(0, str(TINY.parent))
    try:
        import tiny
    finally:
        sys.path.pop(0)
    c = tiny.get_config(method)
    for dotted, value in overrides.items():
        section, key = dotted.split(".")
        c[section][key] = value
    return c


def _env(devices=8, **extra):
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env["JAX_PLATFORMS"] = "cpu"
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _cli(workdir, *flags, method="dacl", env=None, **kw):
    cmd = [
        sys.executable,
        "-m",
        "jaxcl.main",
        f"--config={TINY}:{method}",
        f"--workdir={workdir}",
        *flags,
    ]
    return subprocess.Popen(
        cmd, env=env or _env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, **kw,
    )  # fmt: skip


def _results(workdir):
    return json.loads((Path(workdir) / "results.json").read_text())


def test_eight_devices_match_one(tmp_path):
    one = training.train_and_evaluate(_tiny(**{"mesh.data": 1}), str(tmp_path / "one"))
    eight = training.train_and_evaluate(_tiny(**{"mesh.data": 8}), str(tmp_path / "eight"))
    assert one["devices"] == 1 and eight["devices"] == 8
    assert one["steps"] == eight["steps"] == 3 * (1437 // 64)
    np.testing.assert_allclose(eight["final_loss"], one["final_loss"], rtol=1e-4)
    assert abs(eight["test_top1"] - one["test_top1"]) <= 2 / 360  # at most two test digits
    for r in (one, eight):
        assert 0.1 < r["test_top1"] <= 1 and 0 < r["knn_top1"] <= 1
        assert (tmp_path / "one" / "results.json").exists()


def test_rerun_resumes_from_the_last_checkpoint_and_does_no_more_steps(tmp_path, capfd):
    first = training.train_and_evaluate(_tiny(), str(tmp_path))
    ckpts = sorted(int(p.name) for p in (tmp_path / "checkpoints").iterdir() if p.name.isdigit())
    assert ckpts[-1] == first["steps"] and len(ckpts) <= 3  # keep_checkpoints
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["method"]["name"] == "dacl" and saved["seed"] == _tiny().seed
    again = training.train_and_evaluate(_tiny(), str(tmp_path))
    assert again["test_top1"] == first["test_top1"]
    assert again["pretrain_seconds"] < first["pretrain_seconds"]
    assert not (tmp_path / "config.1.json").exists()  # same config: nothing to keep aside
    training.train_and_evaluate(_tiny(**{"train.log_every_steps": 7}), str(tmp_path))
    assert json.loads((tmp_path / "config.1.json").read_text()) == saved
    assert json.loads((tmp_path / "config.json").read_text())["train"]["log_every_steps"] == 7


def test_no_pretraining_and_supervised_rows(tmp_path, monkeypatch):
    from jaxcl.training import _host

    calls = []
    monkeypatch.setattr(_host, "reuse_host_memory", lambda: calls.append(1) or False)
    none = training.train_and_evaluate(_tiny("none"), str(tmp_path / "none"))
    assert none["steps"] == 0 and 0.1 < none["test_top1"] <= 1
    assert not calls  # train.reuse_host_memory is off by default
    training.train_and_evaluate(
        _tiny("none", **{"train.reuse_host_memory": True}), str(tmp_path / "none_reuse")
    )
    assert calls == [1]  # the trainer applies the setting when the config asks for it
    sup = training.train_and_evaluate(
        _tiny("supervised", **{"train.epochs": 10}), str(tmp_path / "sup")
    )
    assert "knn_top1" not in sup and sup["test_top1"] > 0.8


def test_sigkill_mid_training_then_rerun_matches_uninterrupted(tmp_path):
    flags = [
        "--config.train.epochs=50",
        "--config.train.checkpoint_every_steps=100",
        "--config.train.log_every_steps=100",
    ]
    # Uninterrupted reference.
    ref = _cli(tmp_path / "ref", *flags)
    out, _ = ref.communicate(timeout=600)
    assert ref.returncode == 0, out[-3000:]

    victim = _cli(tmp_path / "run", *flags)
    ckpt_dir = tmp_path / "run" / "checkpoints"
    deadline = time.time() + 600
    killed_after = None
    while time.time() < deadline:
        steps = (
            [int(p.name) for p in ckpt_dir.glob("*") if p.name.isdigit()]
            if ckpt_dir.exists()
            else []
        )
        if steps and max(steps) >= 300:
            assert victim.poll() is None, "the run finished before it could be killed"
            victim.send_signal(signal.SIGKILL)
            killed_after = max(steps)
            break
        time.sleep(0.05)
    victim.wait(timeout=60)
    assert killed_after is not None and victim.returncode == -signal.SIGKILL
    assert not (tmp_path / "run" / "results.json").exists()

    resumed = _cli(tmp_path / "run", *flags)
    out, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out[-3000:]
    assert "restored checkpoint of step" in out
    restored = int(out.split("restored checkpoint of step ")[1].split()[0])
    assert killed_after <= restored < 50 * (1437 // 64)
    a, b = _results(tmp_path / "ref"), _results(tmp_path / "run")
    assert a["steps"] == b["steps"]
    assert b["final_loss"] == a["final_loss"]
    assert b["test_top1"] == a["test_top1"]
    assert b["knn_top1"] == a["knn_top1"]


def test_non_finite_loss_stops_with_step_and_metric_and_keeps_checkpoints(tmp_path, monkeypatch):
    clean = data_lib.load_digits_tabular()
    n = len(clean.train_x)
    # Batches are a function of (seed, epoch): poison a row of the 16th batch of epoch 0, so
    # step 15 is the first to see it (every row appears once per epoch).
    epoch0 = list(
        data_lib.iterate_batches(np.arange(n), np.arange(n), batch_size=64, seed=0, epoch=0)
    )
    bad_row, bad_step = int(epoch0[15][0][0]), 15
    train_x = clean.train_x.copy()
    train_x[bad_row, 3] = np.nan
    monkeypatch.setattr(
        _tasks, "load_dataset", lambda cfg: dataclasses.replace(clean, train_x=train_x)
    )
    config = _tiny(**{"train.checkpoint_every_steps": 10, "train.log_every_steps": 3})
    with pytest.raises(FloatingPointError) as err:
        training.train_and_evaluate(config, str(tmp_path))
    message = str(err.value)
    assert f"`loss` became nan at step {bad_step};" in message, message
    inspect_dir = tmp_path / f"nonfinite_step_{bad_step}"
    assert inspect_dir.exists() and str(inspect_dir) in message
    # The checkpoint of step 10 stays; the one of step 20 (after the failure) is never written.
    kept = sorted(int(p.name) for p in (tmp_path / "checkpoints").iterdir() if p.name.isdigit())
    assert kept == [10], kept
    assert not (tmp_path / "results.json").exists()


def test_cli_rejects_unknown_override_and_bad_value(tmp_path):
    proc = _cli(tmp_path / "a", "--config.optim.lrr=0.1")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "lrr" in out
    proc = _cli(tmp_path / "b", "--config.optim.lr=-1.0")
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode != 0 and "config.optim.lr = -1.0: expected a number > 0" in out


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_of_four_devices_match_one_process_of_eight(tmp_path):
    """The multi-host path: jax.distributed over two CPU processes, each feeding half a batch."""
    port = _free_port()
    procs = [
        _cli(
            tmp_path / "multi",
            env=_env(
                devices=4,
                JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
                JAX_NUM_PROCESSES=2,
                JAX_PROCESS_ID=pid,
            ),
        )
        for pid in range(2)
    ]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    for p, out in zip(procs, outs, strict=True):
        assert p.returncode == 0, out[-3000:]
    assert "process 0 of 2, 4 local / 8 global devices" in outs[0]
    single = _cli(tmp_path / "single")
    out, _ = single.communicate(timeout=600)
    assert single.returncode == 0, out[-3000:]
    multi, one = _results(tmp_path / "multi"), _results(tmp_path / "single")
    assert multi["devices"] == one["devices"] == 8
    np.testing.assert_allclose(multi["final_loss"], one["final_loss"], rtol=1e-4)
    assert abs(multi["test_top1"] - one["test_top1"]) <= 2 / 360


def test_jax_sees_eight_devices_here():
    assert jax.device_count() == 8
