"""ESCo Table 1 row ``sorf``: see :mod:`jaxcl.configs.esco_synthetic`.

    python -m jaxcl.main --config=experiments/esco/synthetic_sorf.py:cpu \
        --workdir=/tmp/esco_synthetic_sorf
    # paper scale (1500 epochs at lr 1e-5): no argument; smoke test: :quick

Paper (ESCo Table 1): 40.86 (lambda = 1.5). Measured on the configs' data (App. B.1's feature
MLP with ReLU hidden layers and a softmax output, fed unscaled; ``:cpu``: 100 epochs at lr 1e-4,
10-fold CV logistic regression on the embeddings of the 4000 examples; seeds 0, 1, 2 with
``--config.repeats=1 --config.seed=S``; commit 87069fa with
``--config.data.hidden_activation=relu``, the default since f253723; 2026-11-29, 2 Zen 3 AMD
EPYC cores shared by two runs, 9.2-9.9 min of training each): 48.64 ± 0.60 (48.02, 49.23,
48.68): **every run collapsed** (final loss log(2N - 1) = 6.23637, the examples'
normalised embeddings at mean cosine 0.999999; ``python experiments/esco/synthetic_table.py
--measure-geometry``), so this accuracy is the probe reading what collapse leaves, not a
measure of the objective. On this reading every kernel collapses from lambda 0.9-1.0 up
(Fig. 3's sweep, ``results/lambda_sweep_relu.*``; README, ESCo section). Not run at paper
scale; SimCLR's kernel at this lambda and the paper's lr collapsed within 300 steps.

The same features standardised (``--config.data.standardize=True``, ``:cpu``, seeds 0-2,
commits d7d61cd / 26d642b, 2026-11-29, 2 shared Zen 3 cores; results/
synthetic_table_relu_standardized_cpu.*): 43.53 ± 0.70 (42.92, 44.30, 43.38), no collapse
(mean cosine 0.0008).

Earlier readings (README, ESCo section): softmax after every layer, unscaled, where the float32
gradient is rounding noise and the numbers depend on the CPU (``:cpu``, Zen 5, commit 1230554
with ``--config.data.standardize=False``): 39.99 ± 0.29 (40.05, 39.68, 40.25), paper scale 42.40
(seed 0); seed 0 on Zen 3 (commit 72bdcae): 36.55; standardised (``:cpu``, commit 98b7091):
50.70 ± 0.45, paper scale 51.50 (295a712, seed 0).
"""

from jaxcl.configs import esco_synthetic


def get_config(arg: str | None = None):
    return esco_synthetic.make("sorf", arg)
