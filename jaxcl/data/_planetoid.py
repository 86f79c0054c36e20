"""Reader for the Planetoid citation graphs (Cora, Citeseer) in their ``ind.*`` files.

Follows the preprocessing every paper's code inherits (Kipf's GCN ``load_data``, PyG's
``read_planetoid_data``):

- features ``x = [allx; tx]`` and labels ``y = argmax([ally; ty])``, with the test rows
  moved to the node ids listed in ``test.index`` (the files store the test nodes sorted,
  the graph numbers them as ``test.index`` says);
- Citeseer's gap: 15 of its nodes (ids within the test range but missing from
  ``test.index``) are isolated and have no row in ``tx``/``ty``. As PyG does, the test
  block is widened to ``max(test.index) - min(test.index) + 1`` rows, the missing ones
  zero: those nodes get all-zero features and label 0 (the argmax of a zero row), and are
  in no split mask (a random split over all nodes, as GRACE's protocol and PyG-based code
  draw it, does place them, and k-means scores them: 15 of 3,327 nodes). The widening is
  applied whenever ``test.index`` is not a contiguous
  range, which for these files means Citeseer only;
- edges from the ``graph`` adjacency dict, made undirected, deduplicated and without
  self-loops (PyG's ``edge_index_from_dict``): Cora 10,556 and Citeseer 9,104 directed
  edges;
- the public split: train = the ``len(y)`` nodes of ``y`` (20 per class), val = the next
  500 ids, test = ``test.index`` (1,000 nodes).

The pickles are read with an unpickler that only builds NumPy arrays, SciPy sparse
matrices and plain containers, so a tampered file cannot run code.
"""

from __future__ import annotations

import collections
import os
import pickle
from pathlib import Path

import numpy as np
import scipy.sparse

from jaxcl.data._graph_build import undirected_edges
from jaxcl.data._graph_io import GraphFormatError, missing, read_int_table, require_file
from jaxcl.data._graph_types import NodeDataset

_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
_NUM_VAL = 500
_SPARSE = ("csr_matrix", "csc_matrix", "coo_matrix", "lil_matrix", "dok_matrix")
_NUMPY = {
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
}
_BUILTINS = {"list", "dict", "set", "tuple", "int", "float", "object"}


class _DataUnpickler(pickle.Unpickler):
    """Builds only arrays, sparse matrices and containers; refuses any other global."""

    def find_class(self, module: str, name: str):
        if module.startswith("scipy.sparse") and name in _SPARSE:
            # The Python-2 pickles name scipy.sparse.csr, deprecated in SciPy 1.8+.
            return getattr(scipy.sparse, name)
        if (module, name) in _NUMPY:
            return super().find_class(module, name)
        if module in ("__builtin__", "builtins") and name in _BUILTINS:
            return super().find_class(module, name)
        if (module, name) == ("_codecs", "encode"):
            # Protocol-2 pickles written by Python 3 store bytes as codecs.encode(str).
            return super().find_class(module, name)
        if module == "collections" and name in ("defaultdict", "OrderedDict"):
            return getattr(collections, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: not array data")


def _load_pickle(path: Path):
    with path.open("rb") as f:
        try:
            return _DataUnpickler(f, encoding="latin1").load()
        except Exception as e:  # noqa: BLE001 - any failure here means a bad file
            raise GraphFormatError(
                path, None, f"not a readable Planetoid pickle ({type(e).__name__}: {e})"
            ) from None


def _matrix(path: Path, value, *, rows: int | None = None) -> np.ndarray:
    if scipy.sparse.issparse(value):
        value = value.toarray()
    if not isinstance(value, np.ndarray) or value.ndim != 2:
        raise GraphFormatError(
            path, None, f"expected a 2-D array or sparse matrix, got {type(value).__name__}"
        )
    if rows is not None and value.shape[0] != rows:
        raise GraphFormatError(
            path, None, f"has {value.shape[0]} rows, expected {rows} (one per node)"
        )
    return value


def _adjacency_lists(path: Path, graph) -> tuple[np.ndarray, np.ndarray]:
    """The (sender, receiver) pairs listed in the adjacency dict, as given."""
    if not isinstance(graph, dict):
        raise GraphFormatError(path, None, f"expected an adjacency dict, got {type(graph)}")
    try:
        senders = np.fromiter((k for k, nbrs in graph.items() for _ in nbrs), dtype=np.int64)
        receivers = np.fromiter((v for nbrs in graph.values() for v in nbrs), dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise GraphFormatError(
            path, None, "adjacency dict must map node ids to lists of node ids"
        ) from None
    bad = np.flatnonzero((senders < 0) | (receivers < 0))
    if bad.size:
        i = int(bad[0])
        raise GraphFormatError(path, None, f"edge ({senders[i]}, {receivers[i]}) has a negative id")
    return senders, receivers


def _test_index(path: Path, *, first: int, count: int, bound: int) -> np.ndarray:
    """Reads test.index: ``count`` distinct ids, smallest ``first``, all below ``bound``."""
    test_index = read_int_table(path, "one node id", 1)[:, 0]
    if test_index.shape[0] != count:
        line = min(test_index.shape[0], count) + 1
        problem = "extra line" if test_index.shape[0] > count else "the file ends early"
        raise GraphFormatError(
            path, line, f"{problem}: expected {count} test node ids (one per row of tx)"
        )
    out = np.flatnonzero((test_index < first) | (test_index >= bound))
    if out.size:
        i = int(out[0])
        raise GraphFormatError(
            path,
            i + 1,
            f"test node id {test_index[i]} outside {first}..{bound - 1} (after the {first} "
            "rows of allx, within the graph)",
        )
    if test_index.min() != first:
        raise GraphFormatError(
            path,
            int(test_index.argmin()) + 1,
            f"smallest test id is {test_index.min()}, expected {first} (= rows of allx)",
        )
    seen = np.bincount(test_index - first)[test_index - first]
    repeated = np.flatnonzero(seen > 1)
    if repeated.size:
        i = int(repeated[-1])
        raise GraphFormatError(path, i + 1, f"test node id {test_index[i]} repeats")
    return test_index


def load_planetoid(
    root: str | os.PathLike, name: str, *, normalize_features: bool = False
) -> NodeDataset:
    """Loads Cora or Citeseer (or another Planetoid set) with its public split.

    Args:
      root: the directory holding ``ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}``.
      name: ``"cora"`` or ``"citeseer"`` (case-insensitive; the files use lower case).
      normalize_features: divide each feature row by its sum (GCN's and GRACE's
        preprocessing; zero rows stay zero). The default gives the binary bag-of-words
        features as stored; normalising is a model choice.

    Returns:
      A :class:`NodeDataset`; ``train_mask``/``val_mask``/``test_mask`` are the public
      split (Cora 140/500/1000, Citeseer 120/500/1000).

    Raises:
      FileNotFoundError: the directory or one of the eight files is missing.
      GraphFormatError: a ValueError naming the malformed file (and line, for
        ``test.index``).

    Example (from the repository root, with ``../shared`` beside it):
      >>> ds = load_planetoid("../shared/data/planetoid", "cora")
      >>> ds.num_nodes, ds.num_features, ds.num_classes, int(ds.train_mask.sum())
      (2708, 1433, 7, 140)
    """
    root = Path(root)
    if not root.is_dir():
        raise missing(root, "Planetoid data directory", "planetoid", name)
    prefix = name.lower()
    paths = {p: root / f"ind.{prefix}.{p}" for p in (*_PARTS, "test.index")}
    for part, path in paths.items():
        require_file(path, f"Planetoid file '{part}' of {name!r}", "planetoid", name)
    parts = {p: _load_pickle(paths[p]) for p in _PARTS}

    y = _matrix(paths["y"], parts["y"])
    allx = _matrix(paths["allx"], parts["allx"])
    ally = _matrix(paths["ally"], parts["ally"], rows=allx.shape[0])
    tx = _matrix(paths["tx"], parts["tx"])
    ty = _matrix(paths["ty"], parts["ty"], rows=tx.shape[0])
    _matrix(paths["x"], parts["x"], rows=y.shape[0])
    if ty.shape[1] != ally.shape[1] or tx.shape[1] != allx.shape[1]:
        raise GraphFormatError(
            paths["tx"],
            None,
            f"tx/ty widths {tx.shape[1]}/{ty.shape[1]} differ from "
            f"allx/ally widths {allx.shape[1]}/{ally.shape[1]}",
        )

    list_senders, list_receivers = _adjacency_lists(paths["graph"], parts["graph"])
    first, count = allx.shape[0], tx.shape[0]
    listed = max(np.max(list_senders, initial=-1), np.max(list_receivers, initial=-1))
    bound = max(first + count, int(listed) + 1)
    test_index = _test_index(paths["test.index"], first=first, count=count, bound=bound)
    num_train = y.shape[0]
    if num_train + _NUM_VAL > first:
        raise GraphFormatError(
            paths["y"], None, f"{num_train} train + {_NUM_VAL} val nodes exceed allx's {first} rows"
        )

    # The test block spans min..max(test.index); ids missing from test.index (Citeseer's
    # isolated nodes) keep zero features and a zero label row, as in PyG.
    # Row i of tx/ty belongs to node test_index[i]: Kipf and PyG get there by writing the
    # rows at the sorted ids, then `x[test_index] = x[sorted_index]`.
    num_nodes = int(test_index.max()) + 1
    features = np.zeros((num_nodes, allx.shape[1]), dtype=np.float32)
    onehot = np.zeros((num_nodes, ally.shape[1]), dtype=np.float32)
    features[:first], onehot[:first] = allx, ally
    features[test_index], onehot[test_index] = tx, ty
    labels = onehot.argmax(axis=1)
    if normalize_features:
        sums = features.sum(axis=1, keepdims=True)
        features = features / np.where(sums == 0, 1, sums)

    out = np.flatnonzero(np.maximum(list_senders, list_receivers) >= num_nodes)
    if out.size:
        i = int(out[0])
        raise GraphFormatError(
            paths["graph"],
            None,
            f"edge ({list_senders[i]}, {list_receivers[i]}) refers to a node outside "
            f"0..{num_nodes - 1}",
        )
    senders, receivers = undirected_edges(list_senders, list_receivers, num_nodes)
    masks = np.zeros((3, num_nodes), dtype=bool)
    masks[0, :num_train] = True
    masks[1, num_train : num_train + _NUM_VAL] = True
    masks[2, test_index] = True
    return NodeDataset(
        name=prefix,
        senders=senders,
        receivers=receivers,
        node_features=features,
        labels=labels,
        num_classes=int(ally.shape[1]),
        train_mask=masks[0],
        val_mask=masks[1],
        test_mask=masks[2],
    )
