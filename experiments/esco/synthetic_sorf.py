"""ESCo Table 1 row ``sorf``: see :mod:`jaxcl.configs.esco_synthetic`.

    python -m jaxcl.main --config=experiments/esco/synthetic_sorf.py:cpu \
        --workdir=/tmp/esco_synthetic_sorf
    # paper scale (1500 epochs at lr 1e-5): no argument; smoke test: :quick

Paper (ESCo Table 1): 40.86 (lambda = 1.5). Measured (``:cpu``: 100 epochs at lr 1e-4,
10-fold CV logistic regression on the embeddings of the 4000 examples; the generator's
softmax outputs fed unscaled, the default since commit 9261bcb; seeds 0, 1, 2 with
``--config.repeats=1 --config.seed=S``; commit 1230554 with
``--config.data.standardize=False``, 2026-11-29, 2 Zen 5 AMD EPYC cores shared by two runs,
2.4-2.6 min of training each): 39.99 ± 0.29 (40.05, 39.68, 40.25). At paper scale (no argument,
``--config.repeats=1``, seed 0, the same commit and flag, beside another run, 34 min):
42.40.

With standardised features (``--config.data.standardize=True``, the default before 9261bcb;
``:cpu``, seeds 0-2, commit 98b7091, shared cores): 50.70 ± 0.45 (50.75, 51.23, 50.12); at
paper scale (no argument, ``--config.repeats=1``, seed 0, 2026-11-29, Zen 5): 51.50 (commit
295a712, 45 min beside another run). The README's ESCo section compares the rows.
"""

from jaxcl.configs import esco_synthetic


def get_config(arg: str | None = None):
    return esco_synthetic.make("sorf", arg)
