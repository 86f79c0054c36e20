"""The tabular i-Mix methods' views: each view its own input dropout (the official code's
tabular setup), so the two views differ; the hyperparameters are checked; i-Mix's mixing
coefficient per batch or per sample."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxcl import losses, methods, mixers
from jaxcl.methods import _imix
from jaxcl.training import base_config


def test_each_view_drops_its_own_entries_without_rescaling():
    x = jnp.asarray(np.random.default_rng(0).uniform(1.0, 2.0, (200, 50)), jnp.float32)
    a, b = _imix._views(jax.random.key(0), x, 0.2, 0.0)
    for v in (a, b):
        dropped = np.asarray(v == 0)
        assert abs(dropped.mean() - 0.2) < 0.01
        np.testing.assert_array_equal(np.asarray(v)[~dropped], np.asarray(x)[~dropped])
    # Independent masks: about 0.2 * 0.2 of the entries are dropped in both views.
    both = np.asarray((a == 0) & (b == 0)).mean()
    assert abs(both - 0.04) < 0.01
    # Without dropout or noise the views are the input itself (the old, degenerate setup).
    a0, b0 = _imix._views(jax.random.key(0), x, 0.0, 0.0)
    assert a0 is x and b0 is x


@pytest.mark.parametrize(
    "method, key, value, match",
    [
        ("npair", "input_dropout", 1.0, r"input_dropout = 1.0: expected a number in \[0, 1\)"),
        ("imix", "input_dropout", -0.1, "input_dropout = -0.1"),
        ("imix", "view_noise", -1.0, r"view_noise = -1.0: expected a number in \[0.0, inf\)"),
        ("npair", "temperature", 0.0, r"temperature = 0.0: expected a number in \(0.0, inf\)"),
        # NaN compares false with everything: a bare `<= 0` check let these through
        ("npair", "temperature", float("nan"), r"temperature = nan: expected .* \(npair\)"),
        ("imix", "view_noise", float("nan"), r"view_noise = nan: expected .* \(imix\)"),
    ],
)
def test_bad_view_hyperparameters_are_refused(method, key, value, match):
    config = base_config("digits", method, optimizer="sgd")
    config.method[key] = value
    with pytest.raises(ValueError, match=match):
        methods.get(method)(config)


@pytest.mark.parametrize(
    "method, key, value, match",
    [
        ("imix", "alpha", 0.0, r"alpha = 0.0: expected a number in \(0.0, inf\) \(imix\)"),
        # Beta(alpha, alpha) of NaN or infinity: refused when built, not at the first step
        ("imix", "alpha", float("nan"), r"alpha = nan: expected .* \(imix\)"),
        ("imix_moco", "alpha", float("nan"), r"alpha = nan: expected .* \(imix_moco\)"),
        ("imix_moco", "alpha", float("inf"), r"alpha = inf: expected .* \(imix_moco\)"),
        ("imix_image", "mix", "cutmix", "lam_per_sample = True with mix = 'cutmix'"),
        ("imix_moco", "mix", "cutmix", "lam_per_sample = True with mix = 'cutmix'"),
        ("imix_byol", "mix", "cutmix", "lam_per_sample = True with mix = 'cutmix'"),
    ],
)
def test_bad_mixing_hyperparameters_are_refused(method, key, value, match):
    data = "digits" if method == "imix" else "cifar10"
    config = base_config(data, method)
    config.method.lam_per_sample = True
    config.method[key] = value
    with pytest.raises(ValueError, match=match):
        methods.get(method)(config)


@pytest.mark.parametrize("per_sample", [False, True])
def test_imix_loss_mixes_with_one_or_a_per_sample_coefficient(per_sample):
    # The method's loss is the N-pair loss on the mixer's output, with the mixer's lam:
    # a scalar (the paper's Algorithm 1) or one folded lam per sample (the official code).
    config = base_config("digits", "imix", optimizer="sgd")
    config.model.update(encoder_width=16, head_width=16, embed_dim=8, encoder_depth=2)
    config.method.lam_per_sample = per_sample
    method = methods.get("imix")(config)
    model = method.build(methods.DataSpec("tabular", 12, 3), nnx.Rngs(0))
    x = jnp.asarray(np.random.default_rng(1).normal(size=(16, 12)), jnp.float32)
    key = jax.random.key(2)
    loss, metrics = method.loss(model, methods.Batch(x, jnp.zeros(16, jnp.int32)), key, None)

    k_views, k_mix = jax.random.split(key)
    a, b = _imix._views(k_views, x, config.method.input_dropout, 0.0)
    a_mix, lam, perm = mixers.imix_mixup(k_mix, a, alpha=2.0, per_sample=per_sample)
    assert lam.shape == ((16,) if per_sample else ())
    z_a, z_b = jnp.split(model(jnp.concatenate([a_mix, b])), 2)
    want = losses.imix_npair_loss(z_a, z_b, lam=lam, perm=perm, temperature=0.1)
    np.testing.assert_allclose(float(loss), float(want), rtol=1e-6)
    assert float(metrics["lam"]) == pytest.approx(float(jnp.mean(lam)))


@pytest.mark.parametrize("per_sample", [False, True])
def test_momentum_imix_rows_mix_with_the_configured_coefficient(per_sample):
    # MoCo's queries and BYOL's two online views draw their lam the way
    # config.method.lam_per_sample says, through the same mixer; BYOL mixes view a with the
    # first half of the key's split and view b with the second.
    x = jnp.asarray(np.random.default_rng(3).uniform(size=(8, 6, 6, 3)), jnp.float32)
    y = jnp.asarray(np.random.default_rng(5).uniform(size=(8, 6, 6, 3)), jnp.float32)
    key = jax.random.key(4)
    for name in ("imix_moco", "imix_byol"):
        config = base_config("cifar10", name)
        config.method.lam_per_sample = per_sample
        method = methods.get(name)(config)
        if name == "imix_moco":
            checks = [(method.queries(key, x), key, x)]
        else:
            a_mix, b_mix, lams, perms = method.mix(key, x, y)
            k_a, k_b = jax.random.split(key)
            checks = [((a_mix, lams[0], perms[0]), k_a, x), ((b_mix, lams[1], perms[1]), k_b, y)]
        for got, k, view in checks:
            want = mixers.imix_mixup(k, view, alpha=config.method.alpha, per_sample=per_sample)
            assert got[1].shape == ((8,) if per_sample else ()), name
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)
