"""ESCo Table 1 row ``none``: see :mod:`jaxcl.configs.esco_synthetic`.

    python -m jaxcl.main --config=experiments/esco/synthetic_none.py:cpu \
        --workdir=/tmp/esco_synthetic_none
    # paper scale (1500 epochs at lr 1e-5): no argument; smoke test: :quick

Paper (ESCo Table 1): not in the paper (the randomly initialised encoder, a reference). Measured
on the configs' data (App. B.1's feature MLP with ReLU hidden layers and a softmax output, fed
unscaled; the encoder as initialised, 10-fold CV logistic regression on the embeddings of the
4000 examples; seeds 0, 1, 2 with ``--config.repeats=1 --config.seed=S``; commit 87069fa with
``--config.data.hidden_activation=relu``, the default since f253723; 2026-11-29, 2 Zen 3 AMD
EPYC cores): 46.69 ± 0.29 (47.02, 46.58, 46.48); again at d17c15f, which reports the geometry,
with the same accuracies: on these all-positive inputs the untrained encoder's normalised
outputs are nearly one point (mean cosine 0.995). Every trained row lies above it (SimCLR
48.48; ESCo-RFF 48.52 and ESCo-SORF 48.64, but those encoders collapsed: README, ESCo).

The same features standardised (``--config.data.standardize=True``, ``:cpu``, seeds 0-2,
commits d7d61cd / 26d642b, 2026-11-29, 2 shared Zen 3 cores; results/
synthetic_table_relu_standardized_cpu.*): 38.01 ± 0.71 (37.20, 38.30, 38.52), mean cosine 0.47.

Earlier readings (README, ESCo section): softmax after every layer, unscaled, where the float32
gradient is rounding noise and the numbers depend on the CPU (Zen 5, commit 1230554 with
``--config.data.standardize=False``): 54.53 ± 0.35 (54.55, 54.18, 54.88); seed 0 on Zen 3
(commit 72bdcae): 52.80; standardised (commit 98b7091): 42.73 ± 0.36.
"""

from jaxcl.configs import esco_synthetic


def get_config(arg: str | None = None):
    return esco_synthetic.make("none", arg)
