"""ESCo Table 1 row ``rff``: see :mod:`jaxcl.configs.esco_synthetic`.

    python -m jaxcl.main --config=experiments/esco/synthetic_rff.py:cpu \
        --workdir=/tmp/esco_synthetic_rff
    # paper scale (1500 epochs at lr 1e-5): no argument; smoke test: :quick

Paper (ESCo Table 1): 40.52 (lambda = 1.6). Measured on the configs' data (App. B.1's feature
MLP with ReLU hidden layers and a softmax output, fed unscaled; ``:cpu``: 100 epochs at lr 1e-4,
10-fold CV logistic regression on the embeddings of the 4000 examples; seeds 0, 1, 2 with
``--config.repeats=1 --config.seed=S``; commit 87069fa with
``--config.data.hidden_activation=relu``, the default since f253723; 2026-11-29, 2 Zen 3 AMD
EPYC cores shared by two runs, 10.3-10.6 min of training each): 48.52 ± 0.54 (48.02, 49.10,
48.45): **every run collapsed** (final loss log(2N - 1) = 6.23637, the examples'
normalised embeddings at mean cosine 0.999999; ``python experiments/esco/synthetic_table.py
--measure-geometry``), so this accuracy is the probe reading what collapse leaves, not a
measure of the objective. On this reading every kernel collapses from lambda 0.9-1.0 up
(Fig. 3's sweep, ``results/lambda_sweep_relu.*``; README, ESCo section). Not run at paper
scale; SimCLR's kernel at this lambda and the paper's lr collapsed within 300 steps.

The same features standardised (``--config.data.standardize=True``, ``:cpu``, seeds 0-2,
commits d7d61cd / 26d642b, 2026-11-29, 2 shared Zen 3 cores; results/
synthetic_table_relu_standardized_cpu.*): 43.70 ± 0.39 (43.48, 44.15, 43.47), no collapse
(mean cosine 0.0004).

Earlier readings (README, ESCo section): softmax after every layer, unscaled, where the float32
gradient is rounding noise and the numbers depend on the CPU (``:cpu``, Zen 5, commit 1230554
with ``--config.data.standardize=False``): 39.20 ± 0.23 (38.95, 39.25, 39.40), paper scale 43.45
(seed 0); seed 0 on Zen 3 (commit 72bdcae): 37.98; standardised (``:cpu``, commit 98b7091):
50.82 ± 0.26, paper scale 50.85 (295a712, seed 0).
"""

from jaxcl.configs import esco_synthetic


def get_config(arg: str | None = None):
    return esco_synthetic.make("rff", arg)
