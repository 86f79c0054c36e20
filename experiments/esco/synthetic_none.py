"""ESCo Table 1 row ``none``: see :mod:`jaxcl.configs.esco_synthetic`.

    python -m jaxcl.main --config=experiments/esco/synthetic_none.py:cpu \
        --workdir=/tmp/esco_synthetic_none
    # paper scale (1500 epochs at lr 1e-5): no argument; smoke test: :quick

Paper (ESCo Table 1): not in the paper (the randomly initialised encoder, a reference).
Measured (``:cpu``: 100 epochs at lr 1e-4, 10-fold CV logistic regression on the embeddings
of the 4000 examples; seeds 0, 1, 2): 42.73 ± 0.36 (43.03, 42.95, 42.23). Commit 98b7091,
2-core CPU shared with other jobs, 27 s for the three. ESCo's gain over SimCLR is not
reproduced at this scale (SimCLR 51.91 ± 1.00, ESCo-RFF 50.82 ± 0.26, ESCo-SORF 50.70 ±
0.45); all rows are ~10 points above the paper's, a sign that our reading of App. B.1's
generator is an easier task than theirs (see :func:`jaxcl.data.esco_synthetic`). Not run at
paper scale (1500 epochs at lr 1e-5: 30-60 minutes a run on 2 CPU cores).
"""

from jaxcl.configs import esco_synthetic


def get_config(arg: str | None = None):
    return esco_synthetic.make("none", arg)
