"""The tabular i-Mix methods' views: each view its own input dropout (the official code's
tabular setup), so the two views differ; the hyperparameters are checked."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcl import methods
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
        ("imix", "view_noise", -1.0, "view_noise = -1.0: expected >= 0"),
        ("npair", "temperature", 0.0, "temperature = 0.0: expected > 0"),
    ],
)
def test_bad_view_hyperparameters_are_refused(method, key, value, match):
    config = base_config("digits", method, optimizer="sgd")
    config.method[key] = value
    with pytest.raises(ValueError, match=match):
        methods.get(method)(config)
