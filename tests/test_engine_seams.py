"""The engine's seams, each proven by a small real method run through ``train_and_evaluate``
(tests/configs/consumers.py): an EMA target in the train state, a second-order step with
two optimisers, a queue split over the mesh and updated in place once per step; plus mixed
precision and a method registered in one place."""

import functools
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from conftest import subprocess_xla_flags
from flax import nnx

from jaxcl import methods, training

ROOT = Path(__file__).parents[1]
CONSUMERS = ROOT / "tests" / "configs" / "consumers.py"
sys.path.insert(0, str(CONSUMERS.parent))
import consumers  # noqa: E402  (registers the test methods)

sys.path.pop(0)


def _config(name, **overrides):
    c = consumers.get_config(name)
    for dotted, value in overrides.items():
        section, key = dotted.split(".")
        c[section][key] = value
    return c


def _tree_allclose(a, b, **kw):
    jax.tree.map(lambda x, y: np.testing.assert_allclose(np.asarray(x), np.asarray(y), **kw), a, b)


# --------------------------------------------------------------------------------------------
# 1. EMA target


def test_ema_target_equals_a_numpy_ema_of_the_online_parameters_history(tmp_path):
    config = _config(
        "ema",
        **{
            "train.batch_size": 256,  # 5 steps per epoch
            "train.epochs": 2,
            "train.checkpoint_every_steps": 1,
            "train.keep_checkpoints": 20,
            "method.horizon": 6,  # the momentum changes over the steps, then stays at 1
            "mesh.data": 2,
        },
    )
    training.train_and_evaluate(config, str(tmp_path))
    run, final = training.load_run(config, str(tmp_path))
    steps = run.checkpointer(str(tmp_path)).all_steps()
    assert steps == list(range(1, 11)), steps

    def online(state):
        p = nnx.to_pure_dict(state.params)
        return {"encoder": p["encoder"], "head": p["head"]}

    # The parameters before the first step: the model as built from the seed.
    model = run.method.build(run.task.spec, rngs=nnx.Rngs(config.seed))
    p0 = nnx.to_pure_dict(nnx.state(model, nnx.Param))
    target = jax.tree.map(np.float64, {"encoder": p0["encoder"], "head": p0["head"]})
    momenta = []
    for step in steps:
        state = training.load_run(config, str(tmp_path), step)[1]
        tau = float(consumers.ema_momentum(jnp.int32(step - 1), 0.5, 6))
        momenta.append(tau)
        target = jax.tree.map(lambda t, p, tau=tau: tau * t + (1 - tau) * p, target, online(state))
        got = {k: nnx.to_pure_dict(v) for k, v in state.extra["target"].items()}
        _tree_allclose(got, target, rtol=2e-5, atol=1e-6)
    assert momenta[0] == 0.5 and momenta[-1] == 1.0 and len(set(momenta)) > 3
    # The target differs from the online parameters (it lags), and the final state is the
    # last checkpoint's.
    diff = jax.tree.map(lambda t, p: float(np.abs(t - p).max()), target, online(final))
    assert max(jax.tree.leaves(diff)) > 1e-4


# --------------------------------------------------------------------------------------------
# 2. Second order through an inner optax step, two optimisers


def test_second_order_gradient_matches_finite_differences_and_not_first_order(tmp_path):
    config = _config("second_order", **{"train.epochs": 1, "mesh.data": 1})
    results = training.train_and_evaluate(config, str(tmp_path))
    assert np.isfinite(results["final_loss"])
    run, state = training.load_run(config, str(tmp_path))
    method = run.method
    # Both optimisers ran: the generator moved, and its Adam counted every step.
    model0 = method.build(run.task.spec, rngs=nnx.Rngs(config.seed))
    g0 = np.asarray(model0.generator.kernel[...])
    g1 = np.asarray(state.params["generator"]["kernel"][...])
    assert np.abs(g1 - g0).max() > 1e-3
    counts = [int(c) for c in jax.tree.leaves(state.opt_state) if np.ndim(c) == 0]
    assert counts and all(c == results["steps"] for c in counts), counts

    batch = next(iter(run.task.batches(0)))
    key = jax.random.key(11)
    with jax.enable_x64(True):
        f64 = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), (state.params, state.model_state))
        params, model_state = f64
        batch64 = jax.tree.map(
            lambda x: jnp.asarray(x, jnp.float64) if x.dtype.kind == "f" else jnp.asarray(x), batch
        )

        def merge(p, s):
            return nnx.merge(run.graphdef, p, s, copy=True)

        def outer(p, first_order=False):
            return method.outer_objective(
                merge, p, model_state, batch64, key, first_order=first_order
            )

        # Jitted: run op by op, these gradients compiled some 750 small programs, most of
        # the test's time. One program serves the gradient and the shifted values.
        value_and_grad = jax.jit(jax.value_and_grad(outer))
        full = value_and_grad(params)[1]["generator"]
        first = jax.jit(jax.grad(lambda p: outer(p, True)))(params)["generator"]
        # Central differences along a random direction in the generator's parameters.
        direction = jax.tree.map(
            lambda x: jnp.asarray(np.random.default_rng(0).normal(size=x.shape)), full
        )
        eps = 1e-5

        def shifted(sign):
            p = dict(params)
            p["generator"] = jax.tree.map(
                lambda g, d: g + sign * eps * d, params["generator"], direction
            )
            return float(value_and_grad(p)[0])

        fd = (shifted(1.0) - shifted(-1.0)) / (2 * eps)

        def dot(a, b):
            return float(
                sum(
                    jnp.sum(x * y)
                    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
                )
            )

        assert dot(full, direction) == pytest.approx(fd, rel=1e-5)
        # The first-order approximation misses the path through the inner step.
        gap = abs(dot(first, direction) - fd)
        # (Measured: full 0.15371, finite differences 0.15371, first order 0.05262.)
        assert gap > 1e4 * abs(dot(full, direction) - fd) and gap > 0.1 * abs(fd)

    # The step the trainer runs applies that gradient: one step of `run.train_step()` moves
    # the generator as the generator's optimiser does on the second-order gradient, and not as
    # it would on the first-order one.
    with jax.set_mesh(run.mesh):
        placed = run.task.place(batch)
        step_key = jax.random.fold_in(key, state.step)

        @functools.partial(jax.jit, static_argnums=0)
        def generator_after(first_order):
            grads = jax.grad(
                lambda p: method.outer_objective(
                    run.step_context().merge,
                    p,
                    state.model_state,
                    placed,
                    step_key,
                    first_order=first_order,
                )
            )(state.params)
            updates, _ = run.tx.update(grads, state.opt_state, state.params)
            return optax.apply_updates(state.params, updates)["generator"]

        expected, first_order_update = jax.device_get(
            (generator_after(False), generator_after(True))
        )
        before = jax.device_get(state.params["generator"])
        stepped, metrics = run.train_step()(jax.tree.map(jnp.copy, state), placed, key)
    assert "outer_loss" in metrics
    got = jax.device_get(stepped.params["generator"])
    moved = max(
        float(np.abs(np.asarray(a) - np.asarray(b)).max())
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(before), strict=True)
    )
    err = max(
        float(np.abs(np.asarray(a) - np.asarray(b)).max())
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(expected), strict=True)
    )
    off = max(
        float(np.abs(np.asarray(a) - np.asarray(b)).max())
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(first_order_update), strict=True)
    )
    assert err < 1e-6 < moved, (err, moved)
    assert off > 100 * err, (off, err)


# --------------------------------------------------------------------------------------------
# Parameter groups: a frozen group and another learning rate, through the trainer


def test_parameter_groups_freeze_one_group_and_scale_another_through_the_trainer(tmp_path):
    config = _config("groups", **{"train.epochs": 1, "mesh.data": 2, "optim.lr": 1e-2})
    training.train_and_evaluate(config, str(tmp_path))
    run, state = training.load_run(config, str(tmp_path))
    initial = jax.jit(run.init_state, out_shardings=run.shardings)()
    # The frozen encoder never moved; the head did.
    _tree_allclose(state.params["encoder"], initial.params["encoder"], rtol=0, atol=0)
    assert not all(
        np.array_equal(a, b)
        for a, b in zip(
            jax.tree.leaves(state.params["head"]),
            jax.tree.leaves(initial.params["head"]),
            strict=True,
        )
    )
    # One step of the trainer's jitted step, from the mid-run checkpoint (the cosine schedule
    # is 0 at the end): the head moves by -scale * lr(step) * gradient.
    run, state = training.load_run(config, str(tmp_path), step=10)
    key = jax.random.key(5)
    with jax.set_mesh(run.mesh):
        batch = run.task.place(next(iter(run.task.batches(0))))
        ctx = run.step_context()
        step_key = jax.random.fold_in(key, state.step)
        grads = jax.jit(ctx.loss_and_grads)(state, batch, step_key).grads
        lr = float(config.method.head_lr_scale * run.schedule(state.step))
        expected = jax.tree.map(lambda p, g: p - lr * g, state.params["head"], grads["head"])
        expected, before = jax.device_get((expected, state.params))
        stepped, _ = run.train_step()(jax.tree.map(jnp.copy, state), batch, key)
    _tree_allclose(stepped.params["head"], expected, rtol=1e-5, atol=1e-7)
    _tree_allclose(stepped.params["encoder"], before["encoder"], rtol=0, atol=0)
    assert lr > 0 and max(float(np.abs(g).max()) for g in jax.tree.leaves(grads["head"])) > 0


# --------------------------------------------------------------------------------------------
# 3. Queue on the mesh, in place, once per step; SIGKILL and reruns


def test_queue_is_split_over_the_mesh_and_updated_in_place_once_per_step(tmp_path):
    config = _config("queue", **{"train.epochs": 1, "mesh.data": 8})
    results = training.train_and_evaluate(config, str(tmp_path))
    run, state = training.load_run(config, str(tmp_path))
    steps, per_device = results["steps"], config.train.batch_size // 8
    ring = config.method.queue_size // 8
    assert int(state.extra["ptr"]) == (steps * per_device) % ring
    assert int(state.extra["filled"]) == min(steps * per_device, ring)
    queue = state.extra["keys"]
    assert queue.sharding.spec == jax.sharding.PartitionSpec("data")
    assert {s.data.shape for s in queue.addressable_shards} == {(ring, config.model.embed_dim)}
    # Rows written hold unit-norm embeddings (the keys), the rest of each ring is still 0.
    norms = np.linalg.norm(np.asarray(queue).reshape(8, ring, -1), axis=-1)
    filled = int(state.extra["filled"])
    np.testing.assert_allclose(norms[:, :filled], 1.0, rtol=1e-5)

    # With the 65,536 entries, the compiled step updates the queue where it lies: no
    # gather, no temporary of its size, and the donated buffers are the output's.
    big = _config("queue", **{"mesh.data": 8, "method.queue_size": 65536})
    mesh = training.make_mesh(8)
    with jax.set_mesh(mesh):
        run = training.Run.build(big, methods.get("test_queue")(big), mesh)
        state = jax.jit(run.init_state, out_shardings=run.shardings)()
        step = run.train_step()
        batch = run.task.place(next(iter(run.task.batches(0))))
        compiled = step.lower(state, batch, jax.random.key(0)).compile()
        queue = state.extra["keys"]
        shard = f"f32[{65536 // 8},{big.model.embed_dim}]"  # one device's part, 0.5 MiB
        memory = compiled.memory_analysis()  # per device
        assert memory.alias_size_in_bytes >= (65536 // 8) * big.model.embed_dim * 4
        whole = f"f32[65536,{big.model.embed_dim}]"
        text = compiled.as_text().splitlines()
        assert not [line for line in text if f"= {whole}" in line]  # never assembled
        made = [line for line in text if f"= {shard}" in line]
        assert made and not [line for line in made if " copy(" in line or "gather" in line]
        before = [s.data.unsafe_buffer_pointer() for s in queue.addressable_shards]
        new_state, _ = step(state, batch, jax.random.key(0))
        after = [s.data.unsafe_buffer_pointer() for s in new_state.extra["keys"].addressable_shards]
    assert before == after
    assert int(new_state.extra["ptr"]) == config.train.batch_size // 8


def test_a_queue_resumed_on_more_devices_is_laid_out_again_for_them(tmp_path):
    """A run checkpointed on one device and resumed on eight (``mesh.data`` differs, or is
    -1 on another machine) lays its queue out again: the rows written before the resume are
    all kept, and the counters and mask are those of eight rings."""
    one = _config("queue", **{"train.epochs": 1, "mesh.data": 1, "method.queue_size": 4096})
    first = training.train_and_evaluate(one, str(tmp_path))
    _, before = training.load_run(one, str(tmp_path))
    written = int(before.extra["filled"])
    assert written == first["steps"] * one.train.batch_size < 4096  # not full yet
    eight = _config("queue", **{"train.epochs": 2, "mesh.data": 8, "method.queue_size": 4096})
    results = training.train_and_evaluate(eight, str(tmp_path))
    run, after = training.load_run(eight, str(tmp_path))
    assert results["steps"] == 2 * first["steps"]
    per_device = eight.train.batch_size // 8
    assert int(after.extra["filled"]) == int(after.extra["ptr"]) == results["steps"] * per_device
    keys = np.asarray(after.extra["keys"])
    with jax.set_mesh(run.mesh):
        mask = np.asarray(jax.jit(methods.queue_mask)(after.extra))
        assert int(jax.jit(methods.queue_filled)(after.extra)) == mask.sum()
    assert mask.sum() == results["steps"] * eight.train.batch_size
    np.testing.assert_allclose(np.linalg.norm(keys[mask], axis=1), 1.0, rtol=1e-5)
    assert not keys[~mask].any()  # no unwritten row among the negatives
    old = np.asarray(before.extra["keys"])[:written]
    kept = {r.tobytes() for r in keys[mask]}
    assert all(r.tobytes() in kept for r in old)  # every key from before the resume
    # Another batch cannot continue the queue (its rings step by the old batch): refused.
    other = _config(
        "queue",
        **{"train.epochs": 3, "mesh.data": 8, "method.queue_size": 4096, "train.batch_size": 32},
    )
    with pytest.raises(training.ConfigError, match="train.batch_size = 32: the checkpoint"):
        training.train_and_evaluate(other, str(tmp_path))


def test_a_run_resumed_with_another_batch_is_refused(tmp_path):
    """Steps, epochs and the schedule count batches of the written size: resuming with
    another batch used to shift the epoch count (dropping recorded evaluations) and restart
    the schedule's shape; it is refused, naming the key and the written batch. Resuming with
    more epochs, as to train a finished run longer, stays allowed."""
    first = _config("ema", **{"train.epochs": 1})
    done = training.train_and_evaluate(first, str(tmp_path))
    other = _config("ema", **{"train.epochs": 2, "train.batch_size": first.train.batch_size // 2})
    saved = (tmp_path / "config.json").read_text()
    with pytest.raises(training.ConfigError) as err:
        training.train_and_evaluate(other, str(tmp_path))
    assert f"config.train.batch_size = {other.train.batch_size}" in str(err.value)
    assert f"written with a batch of {first.train.batch_size}" in str(err.value)
    # Refused before the workdir is touched: the run's own config stays where it was.
    assert (tmp_path / "config.json").read_text() == saved
    assert not (tmp_path / "config.1.json").exists()
    # Reading the finished run back is not resuming it: any batch may read it.
    assert int(training.load_run(other, str(tmp_path))[1].step) == done["steps"]
    longer = _config("ema", **{"train.epochs": 2})
    assert training.train_and_evaluate(longer, str(tmp_path))["steps"] == 2 * done["steps"]


def _cli(workdir, *flags):
    env = dict(
        __import__("os").environ,
        XLA_FLAGS=subprocess_xla_flags(8),
        JAX_PLATFORMS="cpu",
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    cmd = [sys.executable, "-m", "jaxcl.main", f"--config={CONSUMERS}:queue",
           f"--workdir={workdir}", *flags]  # fmt: skip
    return subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _table_without_wall_time(stdout: str) -> list[list[str]]:
    """The printed results table, the wall-time column removed."""
    rows = [line.split("|")[1:-1] for line in stdout.splitlines() if line.startswith("|")]
    assert rows and rows[0][5].strip() == "pretrain s", stdout
    return [[c.strip() for i, c in enumerate(r) if i != 5] for r in rows]


def test_sigkill_then_rerun_and_a_rerun_of_the_finished_run_match_an_uninterrupted_run(tmp_path):
    flags = [
        "--config.train.epochs=12",
        "--config.train.checkpoint_every_steps=40",
        "--config.train.log_every_steps=40",
        "--config.mesh.data=4",
    ]
    ref = _cli(tmp_path / "ref", *flags)
    out_ref, err = ref.communicate(timeout=600)
    assert ref.returncode == 0, err[-3000:]

    victim = _cli(tmp_path / "run", *flags)
    ckpt = tmp_path / "run" / "checkpoints"
    deadline, killed_after = time.time() + 600, None
    while time.time() < deadline:
        done = [int(p.name) for p in ckpt.glob("*") if p.name.isdigit()] if ckpt.exists() else []
        if done and max(done) >= 120:
            assert victim.poll() is None, "the run finished before it could be killed"
            victim.send_signal(signal.SIGKILL)
            killed_after = max(done)
            break
        time.sleep(0.05)
    victim.wait(timeout=60)
    assert killed_after is not None and victim.returncode == -signal.SIGKILL
    assert not (tmp_path / "run" / "results.json").exists()

    resumed = _cli(tmp_path / "run", *flags)
    out_resumed, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-3000:]
    restored = int(err.split("restored checkpoint of step ")[1].split()[0])
    assert killed_after <= restored < 12 * 22
    again = _cli(tmp_path / "run", *flags)  # the finished run, rerun
    out_again, err = again.communicate(timeout=600)
    assert again.returncode == 0, err[-3000:]

    table = _table_without_wall_time(out_ref)
    assert table == _table_without_wall_time(out_resumed) == _table_without_wall_time(out_again)
    assert "-" not in table[2][4] and "nan" not in out_again.lower()  # the final loss is shown
    # The summaries, read as TensorBoard reads them: the killed run's steps past its
    # checkpoint are replaced by the resumed run's, so each step is there once, as in one run.
    ref_steps, ref_losses = training.read_scalars(str(tmp_path / "ref"), "loss")
    steps, losses = training.read_scalars(str(tmp_path / "run"), "loss")
    assert steps == ref_steps == [*range(40, 12 * 22, 40), 12 * 22]  # and the last step
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-6)
    config = _config("queue", **{"train.epochs": 12, "mesh.data": 4})
    with config.unlocked():
        config.train.checkpoint_every_steps = 40
        config.train.log_every_steps = 40
    a = training.load_run(config, str(tmp_path / "ref"))[1]
    b = training.load_run(config, str(tmp_path / "run"))[1]
    assert int(a.step) == int(b.step) == 12 * 22
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(a), jax.device_get(b))


# --------------------------------------------------------------------------------------------
# Mixed precision, registration


def test_bfloat16_compute_matches_float32_and_keeps_float32_parameters(tmp_path):
    losses = {}
    for dtype in ("float32", "bfloat16"):
        config = training.base_config("digits", "dacl")
        config.model.encoder_depth, config.model.encoder_width = 2, 64
        config.model.head_depth, config.model.head_width, config.model.embed_dim = 2, 64, 32
        config.train.batch_size = 128
        config.model.compute_dtype = dtype
        config.mesh.data = 1
        method = methods.get("dacl")(config)
        mesh = training.make_mesh(1)
        with jax.set_mesh(mesh):
            run = training.Run.build(config, method, mesh)
            state = jax.jit(run.init_state, out_shardings=run.shardings)()
            assert {x.dtype for x in jax.tree.leaves(state.params)} == {jnp.dtype("float32")}
            batch = run.task.place(next(iter(run.task.batches(0))))
            model = run.model(state, train=True)
            out = model(batch.x)
            assert out.dtype == jnp.dtype(dtype)
            state, metrics = run.train_step()(state, batch, jax.random.key(0))
        # Parameters stay float32 after the update, and the loss is accumulated in float32.
        assert {x.dtype for x in jax.tree.leaves(state.params)} == {jnp.dtype("float32")}
        assert metrics["loss"].dtype == jnp.dtype("float32")
        losses[dtype] = float(metrics["loss"])
        assert np.isfinite(losses[dtype]) and float(metrics["grad_norm"]) > 0
    # The stated tolerance: bfloat16 has an 8-bit mantissa (relative rounding 2^-8 ~ 0.4%)
    # per operation; through 4 layers and the loss, 2% of the loss.
    assert losses["bfloat16"] == pytest.approx(losses["float32"], rel=2e-2)
    config.train.epochs = 1
    results = training.train_and_evaluate(config, str(tmp_path))
    assert np.isfinite(results["final_loss"]) and results["test_top1"] > 0.3


def test_a_method_is_registered_by_its_class_alone():
    assert methods.get("test_queue") is consumers.QueueMethod
    with pytest.raises(ValueError, match="method name 'dacl' is taken"):

        @methods.register
        class Impostor(methods.Method):
            name = "dacl"
