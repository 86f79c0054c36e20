"""The slab sparse matrices of :mod:`jaxcl.graphs`, defined below the subpackages
(:mod:`jaxcl._slabs`, :mod:`jaxcl._edge_slabs`) so that the mixers can use them too."""

from jaxcl._edge_slabs import edge_dots, edge_pattern
from jaxcl._slabs import Slabs, SparseMatrix, adjacency_pattern, sparse_matmul

__all__ = [
    "Slabs",
    "SparseMatrix",
    "adjacency_pattern",
    "edge_dots",
    "edge_pattern",
    "sparse_matmul",
]
