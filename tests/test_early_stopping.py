"""Early stopping on the training loss (``train.early_stopping_patience``), against a Python
transcription of MVGRL's loop (``node/train.py``): after each epoch, a loss strictly below
the best saves the parameters (those after the epoch's update) and resets the count, else
the count grows; at ``patience`` training stops and the saved parameters are evaluated."""

import dataclasses
import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from conftest import count_batches

from jaxcl import training
from jaxcl.training import _early_stopping, _loop, _node_task
from jaxcl.training._state import TrainState

REPO = Path(__file__).parents[1]


def _mvgrl_rule(epoch_losses, patience):
    """MVGRL's loop on given per-epoch losses: (best epoch, epochs trained), epochs from 1."""
    best, best_t, wait = 1e9, 0, 0
    for epoch, loss in enumerate(epoch_losses, start=1):
        if loss < best:
            best, best_t, wait = loss, epoch, 0
        else:
            wait += 1
        if wait == patience:
            return best_t, epoch
    return best_t, len(epoch_losses)


def _toy_state():
    params = {"w": jnp.zeros((3,))}
    state = TrainState.create(params, {}, optax.identity())
    return dataclasses.replace(state, best=_early_stopping.init(params, {}))


# Two steps per epoch. Epoch 3 repeats epoch 2's steps (a tie with the best), epoch 4 has a
# NaN step, epoch 9 an inf one: none of them improves, each counts one more bad epoch.
_STEP_LOSSES = [
    [0.9, 0.7],  # 1: 0.8, the first best
    [0.5, 0.3],  # 2: 0.4, best
    [0.5, 0.3],  # 3: 0.4, a tie: not lower
    [np.nan, 0.1],  # 4: NaN
    [0.6, 0.4],  # 5: 0.5
    [0.3, 0.1],  # 6: 0.2, best
    [0.35, 0.25],  # 7: 0.3
    [0.05, 0.15],  # 8: 0.1, best
    [np.inf, 0.1],  # 9: inf
    [0.3, 0.3],  # 10
    [0.2, 0.4],  # 11
    [0.5, 0.5],  # 12
    [0.01, 0.01],  # 13: best
]
# After each epoch: the epochs in a row without a lower loss, and the best epoch so far.
_BAD_EPOCHS = [0, 0, 1, 2, 3, 0, 1, 0, 1, 2, 3, 4, 0]
_BEST_EPOCH = [1, 2, 2, 2, 2, 6, 6, 8, 8, 8, 8, 8, 13]


@pytest.mark.parametrize("patience", [1, 2, 3, 4, 5])
def test_end_epoch_keeps_the_parameters_of_the_lowest_mean_epoch_loss(patience):
    """The parameters after epoch e are all e. A tie (epoch 3) and NaN (epoch 4) do not
    improve: the counter grows through them, and the best stays epoch 2 until epoch 6. The
    counter reaches ``patience`` at the epoch MVGRL's loop breaks at (3, 4 and 5 for patience
    1-3, past the tie and the NaN; 12 for 4; never for 5)."""
    step_losses = np.asarray(_STEP_LOSSES, np.float32)
    epoch_losses = step_losses.astype(np.float64).mean(1)
    expected_stop = {1: 3, 2: 4, 3: 5, 4: 12, 5: None}[patience]
    last = expected_stop or len(_STEP_LOSSES)  # the epoch trained last
    expected_best = _BEST_EPOCH[last - 1]
    assert _mvgrl_rule(epoch_losses, patience) == (expected_best, last)
    end_epoch = jax.jit(_early_stopping.end_epoch)
    state, stop, counts, bests = _toy_state(), None, [], []
    for epoch, losses in enumerate(step_losses, start=1):
        for loss in losses:
            state = dataclasses.replace(state, best=_early_stopping.add_step_loss(state.best, loss))
        state = dataclasses.replace(state, params={"w": jnp.full((3,), float(epoch))})
        state = end_epoch(state, np.int32(epoch))
        counts.append(int(state.best["bad_epochs"]))
        bests.append(_early_stopping.summary(state)["best_epoch"])
        if _early_stopping.stopped(state, patience):
            stop = epoch
            break
    assert stop == expected_stop
    trained = len(counts)
    assert counts == _BAD_EPOCHS[:trained] and bests == _BEST_EPOCH[:trained]
    if patience >= 3:  # the tie and the NaN came before the stop, and did not improve
        assert counts[1:5] == [0, 1, 2, 3] and bests[1:5] == [2, 2, 2, 2]
    summary = _early_stopping.summary(state)
    assert summary["best_epoch"] == expected_best
    np.testing.assert_allclose(summary["best_loss"], epoch_losses[expected_best - 1], rtol=1e-6)
    best = _early_stopping.best_state(state)
    np.testing.assert_array_equal(best.params["w"], np.full(3, float(expected_best)))
    assert int(state.best["steps"]) == 0 and float(state.best["loss_sum"]) == 0.0


def test_without_early_stopping_the_state_carries_no_bookkeeping():
    assert _early_stopping.add_step_loss(None, jnp.float32(1.0)) is None
    state = TrainState.create({"w": jnp.zeros(2)}, {}, optax.identity())
    assert state.best is None and len(jax.tree.leaves(state)) == 4


def _grace_config(epochs, patience):
    """GRACE on a tenth of a synthetic Cora: 1 step per epoch, a noisy loss (its random views)
    that stops within a few dozen epochs at lr 1e-3 (patience 2)."""
    c = training.base_config("cora", "grace", optimizer="adam_l2")
    c.data.synthetic = True
    c.data.synthetic_scale = 0.1
    c.model.encoder_width = c.model.head_width = c.model.embed_dim = 16
    c.model.head_depth = 2
    c.optim.update(schedule="constant", lr=1e-3, weight_decay=0.0, warmup_epochs=0.0)
    c.train.update(epochs=epochs, log_every_steps=1, early_stopping_patience=patience)
    c.train.checkpoint_every_steps = 5
    c.eval.node_classifier_steps = 200
    return c


def _record_step_losses(monkeypatch):
    """The loss of every step, as the loop fetches them for logging (log_every_steps=1)."""
    losses = {}
    flush = _loop._Loop.flush

    def recording(self, step):
        pending = list(self.pending)
        flush(self, step)
        for s, m in self.history[-len(pending) :] if pending else []:
            losses[s] = m["loss"]

    monkeypatch.setattr(_loop._Loop, "flush", recording)
    return losses


def _count_batches(monkeypatch):
    return count_batches(monkeypatch, _node_task.NodeClassificationTask)


def test_a_node_run_stops_and_is_scored_with_its_best_epochs_parameters(tmp_path, monkeypatch):
    losses = _record_step_losses(monkeypatch)
    drawn = _count_batches(monkeypatch)
    c = _grace_config(epochs=80, patience=2)
    r = training.train_and_evaluate(c, str(tmp_path / "a"))
    assert drawn["n"] == r["steps"]  # the spy sees every step's batch
    epoch_losses = [losses[s] for s in sorted(losses)]
    best, stop = _mvgrl_rule(epoch_losses, 2)
    assert stop < 80, "the test's setting must stop early"
    assert 1 < best < stop
    assert r["early_stopped"] and r["epochs_trained"] == stop == len(epoch_losses)
    assert r["steps"] == stop and r["early_stopping_best_epoch"] == best
    assert r["early_stopping_best_loss"] == pytest.approx(epoch_losses[best - 1], rel=1e-6)

    # The same run trained for the best epoch's number of epochs, without early stopping:
    # the same parameters and the same score.
    c_best = _grace_config(epochs=best, patience=0)
    r_best = training.train_and_evaluate(c_best, str(tmp_path / "b"))
    assert "early_stopped" not in r_best
    assert r["test_top1"] == r_best["test_top1"]
    _, stopped = training.load_run(c, str(tmp_path / "a"))
    _, plain = training.load_run(c_best, str(tmp_path / "b"))
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7),
        stopped.best["params"],
        plain.params,
    )

    # A rerun of the stopped run trains nothing (not one batch drawn) and reports the same.
    drawn["n"] = 0
    written = training.read_scalars(str(tmp_path / "a"), "test_top1")
    rerun = training.train_and_evaluate(c, str(tmp_path / "a"))
    assert drawn["n"] == 0
    # ... and writes no point to the event files a second time
    assert training.read_scalars(str(tmp_path / "a"), "test_top1") == written
    assert {k: rerun[k] for k in ("steps", "early_stopping_best_epoch", "test_top1")} == {
        k: r[k] for k in ("steps", "early_stopping_best_epoch", "test_top1")
    }


def test_a_resumed_run_stops_where_an_uninterrupted_one_does(tmp_path):
    """Trained for 12 epochs (a checkpoint every 5 steps, the last at 12), then resumed with
    the full budget: it stops at the epoch, with the best epoch and score, of one run."""
    whole = training.train_and_evaluate(_grace_config(80, 2), str(tmp_path / "whole"))
    assert whole["early_stopped"] and whole["epochs_trained"] > 12
    part = training.train_and_evaluate(_grace_config(12, 2), str(tmp_path / "parts"))
    assert part["steps"] == 12 and not part["early_stopped"]
    resumed = training.train_and_evaluate(_grace_config(80, 2), str(tmp_path / "parts"))
    for key in ("steps", "epochs_trained", "early_stopping_best_epoch", "test_top1"):
        assert resumed[key] == whole[key], key


def _graph_experiment(arg):
    path = REPO / "experiments" / "mmix" / "graph_mp.py"
    spec = importlib.util.spec_from_file_location("cfg", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


def test_a_graph_run_compares_mean_epoch_losses_and_scores_the_best_epoch(tmp_path, monkeypatch):
    """Several steps per epoch: the epoch's mean loss decides; the SVM scores the best
    epoch's parameters, reported as the one evaluated epoch."""
    losses = _record_step_losses(monkeypatch)
    c = _graph_experiment("reddit_binary,quick")
    c.train.batch_size = 32
    c.train.epochs = 30
    c.train.log_every_steps = 1
    c.train.early_stopping_patience = 1
    c.optim.lr = 0.05
    c.eval.svm_jobs = 1
    r = training.train_and_evaluate(c, str(tmp_path))
    per_epoch = len(losses) // r["epochs_trained"]
    assert per_epoch > 1 and len(losses) == per_epoch * r["epochs_trained"]
    steps = [losses[s] for s in sorted(losses)]
    epoch_losses = np.mean(np.reshape(steps, (-1, per_epoch)), axis=1)
    best, stop = _mvgrl_rule(epoch_losses, 1)
    assert (r["early_stopping_best_epoch"], r["epochs_trained"]) == (best, stop)
    assert r["early_stopped"] == (stop < 30)
    assert r["evaluated_epochs"] == [best] and r["per_epoch_top1"] == [r["test_top1"]]


@pytest.mark.parametrize(
    "data,setting,message",
    [
        ("cora", {"train.early_stopping_patience": -1}, r"train.early_stopping_patience"),
        ("digits", {"train.early_stopping_patience": 20}, r"node and graph tasks"),
        ("mutag", {"train.early_stopping_patience": 20}, r"eval.last_epochs = 5: expected 1"),
    ],
)
def test_bad_early_stopping_settings_are_named(data, setting, message):
    method = {"cora": "grace", "digits": "dacl", "mutag": "dacl_graph"}[data]
    c = training.base_config(data, method)
    for key, value in setting.items():
        section, name = key.split(".")
        c[section][name] = value
    with pytest.raises(training.ConfigError, match=message):
        training.validate(c)


def test_switching_early_stopping_on_when_resuming_is_a_named_error(tmp_path):
    training.train_and_evaluate(_grace_config(epochs=2, patience=0), str(tmp_path))
    # Refused before the restore (which would fail on the state's other structure), naming it.
    with pytest.raises(training.ConfigError, match=r"train.early_stopping_patience: 0 -> 2"):
        training.train_and_evaluate(_grace_config(epochs=4, patience=2), str(tmp_path))


@dataclasses.dataclass
class _StateBeforeEarlyStopping:
    """TrainState's pytree as checkpoints were written before ``best`` existed."""

    step: jax.Array
    params: dict
    model_state: dict
    opt_state: tuple
    extra: dict
    nonfinite_step: jax.Array
    last_loss: jax.Array


jax.tree_util.register_dataclass(
    _StateBeforeEarlyStopping,
    data_fields=[f.name for f in dataclasses.fields(_StateBeforeEarlyStopping)],
    meta_fields=[],
)


def test_checkpoints_written_before_early_stopping_existed_still_restore(tmp_path):
    """Without early stopping a checkpoint holds exactly the fields it held before (no
    ``best``), so older workdirs resume and load; with it, ``best`` round-trips."""
    import orbax.checkpoint as ocp

    from jaxcl.training._checkpoint import Checkpointer

    tx = optax.adam(1e-3)
    params = {"w": jnp.arange(3.0)}
    state = TrainState.create(params, {}, tx)
    old = _StateBeforeEarlyStopping(**{f: getattr(state, f) for f in ("step", "params",
        "model_state", "opt_state", "extra", "nonfinite_step", "last_loss")})  # fmt: skip
    manager = ocp.CheckpointManager(tmp_path / "old" / "checkpoints")
    manager.save(7, args=ocp.args.StandardSave(old))
    manager.wait_until_finished()
    manager.close()
    restored = Checkpointer(str(tmp_path / "old"), every_steps=1, keep=1).restore(
        jax.eval_shape(lambda: state)
    )
    assert isinstance(restored, TrainState) and restored.best is None
    np.testing.assert_array_equal(restored.params["w"], params["w"])

    with_best = dataclasses.replace(state, best=_early_stopping.init(params, {}))
    ckpt = Checkpointer(str(tmp_path / "new"), every_steps=1, keep=1)
    ckpt.maybe_save(3, with_best, force=True)
    ckpt.wait()
    back = ckpt.restore(jax.eval_shape(lambda: with_best))
    assert int(back.best["bad_epochs"]) == 0 and float(back.best["loss"]) == np.inf
    np.testing.assert_array_equal(back.best["params"]["w"], params["w"])
