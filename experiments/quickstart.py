"""The quickstart: DACL's tabular comparison on scikit-learn's digits, in about a minute on CPU.

    python -m jaxcl.main                                   # the same config, embedded
    python -m jaxcl.main --config=experiments/quickstart.py --workdir=DIR

The config lives in the package (jaxcl/configs/quickstart.py) so that ``python -m jaxcl.main``
runs it right after ``pip install``; this file is its entry among the experiments. What it
runs, how its hyperparameters were chosen and the measured table: that module's docstring
and README.md ("Quickstart").
"""

from jaxcl.configs.quickstart import get_config

__all__ = ["get_config"]
