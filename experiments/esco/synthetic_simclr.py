"""ESCo Table 1 row ``simclr``: see :mod:`jaxcl.configs.esco_synthetic`.

    python -m jaxcl.main --config=experiments/esco/synthetic_simclr.py:cpu \
        --workdir=/tmp/esco_synthetic_simclr
    # paper scale (1500 epochs at lr 1e-5): no argument; smoke test: :quick

Paper (ESCo Table 1): 38.11. Measured (``:cpu``: 100 epochs at lr 1e-4, 10-fold CV logistic
regression on the embeddings of the 4000 examples; the generator's softmax outputs fed
unscaled, the default since commit 9261bcb; seeds 0, 1, 2 with ``--config.repeats=1
--config.seed=S``; commit 1230554 with ``--config.data.standardize=False``, 2026-11-29, 2
Zen 5 AMD EPYC cores shared by two runs, 1.3 min of training each): 39.07 ± 1.00 (39.23,
38.00, 39.98). At paper scale (no argument,
``--config.repeats=1``, seed 0, the same commit and flag, beside another run, 18 min):
42.20.

With standardised features (``--config.data.standardize=True``, the default before 9261bcb;
``:cpu``, seeds 0-2, commit 98b7091, shared cores): 51.91 ± 1.00 (52.55, 52.68, 50.50); at
paper scale (no argument, ``--config.repeats=1``, seed 0, 2026-11-29, Zen 5): 54.23 (commit
295a712, 16 min). The README's ESCo section compares the rows.
"""

from jaxcl.configs import esco_synthetic


def get_config(arg: str | None = None):
    return esco_synthetic.make("simclr", arg)
