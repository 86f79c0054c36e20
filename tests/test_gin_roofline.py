"""experiments/benchmarks/gin_roofline.py: its count of DACL-GIN's dense products against
XLA's flop count of jaxcl's compiled gradient, and how it adds up the floor."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "experiments" / "benchmarks"


@pytest.fixture(scope="module")
def roofline():
    sys.path.insert(0, str(BENCHMARKS))  # the script imports its folder's _common
    try:
        path = BENCHMARKS / "gin_roofline.py"
        spec = importlib.util.spec_from_file_location("gin_roofline", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


MODEL = {
    "encoder_width": 512,
    "encoder_depth": 4,
    "head_width": 2048,
    "head_depth": 3,
    "embed_dim": 2048,
}


def test_linears_and_their_flops(roofline):
    layers = roofline.linears(MODEL, num_features=1)
    assert [(lin["name"], lin["k"], lin["n"]) for lin in layers] == [
        ("gin0.a", 1, 512),
        ("gin0.b", 512, 512),
        ("gin1.a", 512, 512),
        ("gin1.b", 512, 512),
        ("gin2.a", 512, 512),
        ("gin2.b", 512, 512),
        ("gin3.a", 512, 512),
        ("gin3.b", 512, 512),
        ("head0", 2048, 2048),
        ("head1", 2048, 2048),
        ("head2", 2048, 2048),
    ]
    dacl = roofline.product_flops(layers, nodes=100, graphs=5, order="dacl")
    # 7 square GIN Linears x 3 products + the first Linear's forward and weight gradient.
    assert dacl["gin"] == 7 * 3 * 2 * 100 * 512 * 512 + 2 * 2 * 100 * 1 * 512
    assert dacl["head"] == 3 * 3 * 2 * 10 * 2048 * 2048  # both views: 10 rows
    # jaxcl's order: the head's first Linear on the 5 graphs' rows before the mixing.
    jaxcl = roofline.product_flops(layers, nodes=100, graphs=5, order="jaxcl")
    assert jaxcl["gin"] == dacl["gin"]
    assert jaxcl["head"] == 3 * 2 * (5 + 10 + 10) * 2048 * 2048
    assert roofline.distinct_shapes(layers, nodes=100, graphs=5) == [
        [5, 2048, 2048],
        [10, 2048, 2048],
        [100, 1, 512],
        [100, 512, 512],
    ]


def test_products_are_what_xla_counts_in_jaxcls_gradient(roofline):
    """The listed products are nearly all of XLA's flops for jaxcl's DACL-GIN gradient on a
    real IMDB-BINARY batch (the rest: batch norm, aggregation, loss, element-wise work): a
    Linear left out or counted twice, or the head's first Linear counted on both views'
    rows, would move the share by 7% or more."""
    data = REPO.parent / "shared" / "data"
    if not (data / "tu_gin").is_dir():
        pytest.fail(f"benchmark data not found at {data} (../shared/data beside the checkout)")
    check = roofline.flop_check(argparse.Namespace(data_dir=data))["check_batch"]
    assert check["padded_nodes"] >= check["real_nodes"]
    share = check["product_flops"] / check["xla_flops"]
    assert 0.95 <= share <= 1.0, share


def test_floor_takes_the_faster_library_per_product(roofline):
    layers = roofline.linears({**MODEL, "encoder_depth": 1, "head_depth": 1}, num_features=1)
    nodes, graphs, steps = 8, 2, 3
    a = {
        "8x1x512": {"forward": 1.0, "input_grad": 100.0, "weight_grad": 3.0},
        "8x512x512": {"forward": 10.0, "input_grad": 20.0, "weight_grad": 30.0},
        "4x512x2048": {"forward": 5.0, "input_grad": 6.0, "weight_grad": 7.0},
        "2x512x2048": {"forward": 3.0, "input_grad": 3.0, "weight_grad": 6.0},
        "adam": 0.5,
    }
    b = {
        "8x1x512": {"forward": 2.0, "input_grad": 0.0, "weight_grad": 2.0},
        "8x512x512": {"forward": 11.0, "input_grad": 19.0, "weight_grad": 31.0},
        "4x512x2048": {"forward": 4.0, "input_grad": 8.0, "weight_grad": 7.5},
        "2x512x2048": {"forward": 2.5, "input_grad": 4.0, "weight_grad": 5.0},
        "adam": 0.25,
    }
    result = roofline.floor(layers, {"a": a, "b": b}, nodes, graphs, steps)
    dacl, jaxcl = result["dacl"], result["jaxcl"]
    # gin0.a: forward 1 (a), weight gradient 2 (b), no input gradient (the data's).
    assert dacl["parts"]["gin"] == steps * (1 + 2 + 10 + 19 + 30)
    assert dacl["parts"]["head"] == steps * (4 + 6 + 7)  # both views' rows: 4
    assert dacl["products"]["gin0.b.input_grad"] == {"library": "b", "seconds": 19.0}
    assert dacl["parts"]["adam"] == steps * 0.25  # one update per step, the faster library
    assert dacl["seconds"] == steps * (62 + 17 + 0.25)
    # jaxcl's order: the head's (only) Linear on the graphs' 2 rows, timed at that shape.
    assert jaxcl["parts"]["gin"] == dacl["parts"]["gin"]
    assert jaxcl["parts"]["head"] == steps * (2.5 + 3 + 5)
    assert jaxcl["seconds"] == steps * (62 + 10.5 + 0.25)
