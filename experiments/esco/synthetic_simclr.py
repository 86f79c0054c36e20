"""ESCo Table 1 row ``simclr``: see :mod:`jaxcl.configs.esco_synthetic`.

    python -m jaxcl.main --config=experiments/esco/synthetic_simclr.py:cpu \
        --workdir=/tmp/esco_synthetic_simclr
    # paper scale (1500 epochs at lr 1e-5): no argument; smoke test: :quick

Paper (ESCo Table 1): 38.11. Measured on the configs' data (App. B.1's feature MLP with ReLU
hidden layers and a softmax output, fed unscaled; ``:cpu``: 100 epochs at lr 1e-4, 10-fold CV
logistic regression on the embeddings of the 4000 examples; seeds 0, 1, 2 with
``--config.repeats=1 --config.seed=S``; commit 87069fa with
``--config.data.hidden_activation=relu``, the default since f253723; 2026-11-29, 2 Zen 3 AMD
EPYC cores shared by two runs, 3.3-5.7 min of training each): 48.48 ± 0.56 (47.85, 48.90,
48.70); its encoder does not collapse (the examples' normalised embeddings at mean cosine
0.096, against 0.995 before training). Not run at paper scale on this reading.

The same features standardised (``--config.data.standardize=True``, ``:cpu``, seeds 0-2,
commits d7d61cd / 26d642b, 2026-11-29, 2 shared Zen 3 cores; results/
synthetic_table_relu_standardized_cpu.*): 43.14 ± 1.31 (43.57, 44.17, 41.67).

Earlier readings (README, ESCo section): softmax after every layer, unscaled, where the float32
gradient is rounding noise and the numbers depend on the CPU (``:cpu``, Zen 5, commit 1230554
with ``--config.data.standardize=False``): 39.07 ± 1.00 (39.23, 38.00, 39.98), paper scale 42.20
(seed 0); seed 0 on Zen 3 (commit 72bdcae): 37.95; standardised (``:cpu``, commit 98b7091):
51.91 ± 1.00, paper scale 54.23 (295a712, seed 0).
"""

from jaxcl.configs import esco_synthetic


def get_config(arg: str | None = None):
    return esco_synthetic.make("simclr", arg)
