"""``training.eigen_cpu_convolutions``: XLA:CPU then compiles convolutions without YNNPACK
(checked in the compiled program, in fresh interpreters: XLA reads its flags once, when JAX
creates its backends), computes the same values, and a user's own XLA_FLAGS choice is kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jaxcl import training

# A conv layer's forward and both gradients, compiled (wide enough for YNNPACK to take some
# of them by default); prints whether YNNPACK got any convolution, and the values.
_PROGRAM = r"""
import json, re, sys
import numpy as np
from jaxcl import training
applied = training.eigen_cpu_convolutions() if sys.argv[1] == "call" else None
import jax, jax.numpy as jnp
def f(x, w):
    dims = ("NHWC", "HWIO", "NHWC")
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dims)
    return jnp.sum(jnp.tanh(y))
g = jax.jit(jax.value_and_grad(f, argnums=(0, 1)))
rng = np.random.default_rng(0)
x = jnp.asarray(rng.normal(size=(8, 16, 16, 64)), jnp.float32)
w = jnp.asarray(rng.normal(size=(3, 3, 64, 64)) * 0.1, jnp.float32)
hlo = g.lower(x, w).compile().as_text()
# the computations XLA hands to YNNPACK, and whether any of them convolves
ynn = re.findall(r"calls=%([\w.\-]+), backend_config=\{[^\n]*__ynn_fusion", hlo)
bodies = [re.search(r"^%" + re.escape(c) + r" .*?^}", hlo, re.S | re.M).group(0) for c in ynn]
value, (gx, gw) = g(x, w)
print(json.dumps(dict(applied=applied, ynn_convolution=any(" convolution(" in b for b in bodies),
                      value=float(value), gx=np.asarray(gx).ravel()[:64].tolist(),
                      gw=np.asarray(gw).ravel()[:64].tolist())))
"""


def _run(mode: str, xla_flags: str = "") -> dict:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=xla_flags)
    out = subprocess.run(
        [sys.executable, "-c", _PROGRAM, mode], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_eigen_cpu_convolutions_takes_convolutions_from_ynnpack_with_the_same_values():
    default, eigen = _run("default"), _run("call")
    if not default["ynn_convolution"]:
        pytest.fail("this jaxlib compiles convolutions without YNNPACK already: revisit the flag")
    assert eigen["applied"] is True
    assert eigen["ynn_convolution"] is False
    assert eigen["value"] == pytest.approx(default["value"], rel=1e-5)
    for key in ("gx", "gw"):  # float32 sums in another order: within 1e-5 of the largest
        scale = max(abs(v) for v in default[key])
        assert eigen[key] == pytest.approx(default[key], abs=1e-5 * scale)


def test_eigen_cpu_convolutions_keeps_a_users_xla_flags_choice():
    flags = "--xla_cpu_experimental_ynn_fusion_type=individual_convolution"
    kept = _run("call", xla_flags=flags)
    assert kept["applied"] is False
    assert kept["ynn_convolution"] is True


def test_eigen_cpu_convolutions_after_the_backends_exist_changes_nothing(monkeypatch):
    import jax

    jax.devices()  # the test process's backends exist (conftest's fake devices)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert training.eigen_cpu_convolutions() is False
    assert "XLA_FLAGS" not in os.environ


def test_eigen_cpu_convolutions_config_key():
    c = training.base_config("cifar10", "simclr")
    assert c.train.eigen_cpu_convolutions is True
    with c.unlocked():
        del c.train["eigen_cpu_convolutions"]
        c.train.eigen_cpu_convolutions = "yes"
    with pytest.raises(training.ConfigError, match="config.train.eigen_cpu_convolutions = 'yes'"):
        training.validate(c)


@pytest.mark.parametrize("setting", [True, False])
def test_the_trainer_sets_it_first_unless_the_config_says_no(setting, monkeypatch, tmp_path):
    from jaxcl.training import _host, _loop

    class Called(Exception):
        pass

    class Next(Exception):
        pass

    def called():
        raise Called

    def next_step():
        raise Next

    monkeypatch.setattr(_host, "eigen_cpu_convolutions", called)
    monkeypatch.setattr(_loop._mesh, "maybe_initialize_distributed", next_step)
    c = training.base_config("fashion_mnist", "dacl")
    c.train.eigen_cpu_convolutions = setting
    with pytest.raises(Called if setting else Next):
        training.train_and_evaluate(c, str(tmp_path / "run"))
