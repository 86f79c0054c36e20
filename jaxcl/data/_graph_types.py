"""In-memory form of graph data sets: host-side NumPy, shared by every reader.

Edges are directed pairs ``(senders[k], receivers[k])``; an undirected edge is stored in
both directions. The files' readers store each pair once, sorted by sender then receiver, and
drop self-loops (as PyG's TU and Planetoid readers do); that order is theirs, not a property
every ``Graph`` or ``NodeDataset`` has (``ppr_dataset``'s diffusion graphs hold self-loops,
and nothing downstream relies on the order: batching sorts edges by receiver). Arrays are
read-only views, so a data set shared between pipelines cannot be changed by one of them by
accident; copy an array (``np.array(x)``) to modify it.
"""

from __future__ import annotations

import dataclasses

import numpy as np


def _frozen(name: str, value, dtype, ndim: int) -> np.ndarray:
    """``value`` as a read-only array of ``dtype`` and rank ``ndim`` (a view, never in place)."""
    arr = np.asarray(value)
    if arr.ndim != ndim:
        raise ValueError(f"`{name}` must have rank {ndim}, got shape {arr.shape}")
    if arr.size and not np.can_cast(arr.dtype, dtype, casting="same_kind"):
        raise ValueError(f"`{name}` must hold {np.dtype(dtype).name} values, got {arr.dtype}")
    if arr.size and np.issubdtype(dtype, np.integer) and arr.dtype != dtype:
        # A wider integer would wrap around in the cast (2**32 -> 0) into a valid-looking id.
        info = np.iinfo(dtype)
        low, high = arr.min(), arr.max()
        if low < info.min or high > info.max:
            raise ValueError(
                f"`{name}` must hold values that fit {np.dtype(dtype).name} "
                f"([{info.min}, {info.max}]), got values {low}..{high}"
            )
    arr = arr.astype(dtype, copy=False).view()
    arr.flags.writeable = False
    return arr


def _check_edges(senders: np.ndarray, receivers: np.ndarray, num_nodes: int) -> None:
    if senders.shape != receivers.shape:
        raise ValueError(
            f"`senders` and `receivers` must have the same shape, got {senders.shape} and "
            f"{receivers.shape}"
        )
    if senders.size and (
        min(senders.min(), receivers.min()) < 0 or max(senders.max(), receivers.max()) >= num_nodes
    ):
        raise ValueError(f"edge endpoints must lie in [0, {num_nodes}) (the number of nodes)")


@dataclasses.dataclass(frozen=True, eq=False)
class Graph:
    """One graph of a graph-classification data set.

    Attributes:
      senders: int32 ``[num_edges]`` source node of each directed edge.
      receivers: int32 ``[num_edges]`` target node of each directed edge; every undirected
        edge appears in both directions, once each.
      node_features: float32 ``[num_nodes, num_features]``.
      label: graph class in ``0..num_classes-1``, or -1 if unlabelled.

    Example:
      >>> g = Graph(senders=[0, 1], receivers=[1, 0], node_features=np.eye(2), label=1)
      >>> g.num_nodes, g.num_edges
      (2, 2)
    """

    senders: np.ndarray
    receivers: np.ndarray
    node_features: np.ndarray
    label: int

    def __post_init__(self):
        s = _frozen("senders", self.senders, np.int32, 1)
        r = _frozen("receivers", self.receivers, np.int32, 1)
        x = _frozen("node_features", self.node_features, np.float32, 2)
        _check_edges(s, r, x.shape[0])
        if isinstance(self.label, bool) or not isinstance(self.label, (int, np.integer)):
            raise ValueError(f"`label` must be an integer, got {self.label!r}")
        object.__setattr__(self, "senders", s)
        object.__setattr__(self, "receivers", r)
        object.__setattr__(self, "node_features", x)
        object.__setattr__(self, "label", int(self.label))

    @property
    def num_nodes(self) -> int:
        return int(self.node_features.shape[0])

    @property
    def num_edges(self) -> int:
        """Number of directed edges (twice the number of undirected ones)."""
        return int(self.senders.shape[0])


def trusted_graph(
    senders: np.ndarray, receivers: np.ndarray, node_features: np.ndarray, label: int
) -> Graph:
    """A :class:`Graph` from arrays a reader has already checked (int32/float32, ids in
    range), skipping ``__post_init__``: its per-graph checks would dominate the loading
    time of data sets with thousands of small graphs."""
    graph = object.__new__(Graph)
    for name, value in (
        ("senders", senders),
        ("receivers", receivers),
        ("node_features", node_features),
    ):
        view = value.view()
        view.flags.writeable = False
        object.__setattr__(graph, name, view)
    object.__setattr__(graph, "label", int(label))
    return graph


@dataclasses.dataclass(frozen=True, eq=False)
class GraphDataset:
    """A graph-classification data set (TU / GIN format).

    Attributes:
      name: the data set's name, e.g. ``"MUTAG"``.
      graphs: the graphs, in file order.
      labels: int32 ``[num_graphs]``, ``labels[i] == graphs[i].label``.
      num_classes: number of graph classes.
      num_features: width of every graph's ``node_features``.

    Example:
      >>> g = Graph(senders=[0, 1], receivers=[1, 0], node_features=np.eye(2), label=0)
      >>> ds = GraphDataset("toy", (g,), np.array([0]), num_classes=1, num_features=2)
      >>> len(ds)
      1
    """

    name: str
    graphs: tuple[Graph, ...]
    labels: np.ndarray
    num_classes: int
    num_features: int

    def __post_init__(self):
        graphs = tuple(self.graphs)
        labels = _frozen("labels", self.labels, np.int32, 1)
        if len(graphs) != labels.shape[0]:
            raise ValueError(f"got {len(graphs)} graphs but {labels.shape[0]} labels")
        for i, g in enumerate(graphs):
            if g.node_features.shape[1] != self.num_features:
                raise ValueError(
                    f"graph {i} has {g.node_features.shape[1]} node features, the data set "
                    f"says num_features={self.num_features}"
                )
            if g.label != labels[i]:
                raise ValueError(f"graph {i} has label {g.label} but labels[{i}]={labels[i]}")
        if labels.size and (labels.min() < -1 or labels.max() >= self.num_classes):
            raise ValueError(
                f"labels must lie in [-1, {self.num_classes}) (num_classes={self.num_classes}), "
                f"got values {labels.min()}..{labels.max()}"
            )
        object.__setattr__(self, "graphs", graphs)
        object.__setattr__(self, "labels", labels)

    def __len__(self) -> int:
        return len(self.graphs)

    @property
    def num_nodes(self) -> int:
        """Total number of nodes over all graphs."""
        return sum(g.num_nodes for g in self.graphs)

    @property
    def num_edges(self) -> int:
        """Total number of directed edges over all graphs."""
        return sum(g.num_edges for g in self.graphs)


@dataclasses.dataclass(frozen=True, eq=False)
class NodeDataset:
    """A single graph for node classification (Planetoid), with its public split.

    Attributes:
      name: the data set's name, e.g. ``"cora"``.
      senders, receivers: int32 ``[num_edges]``; undirected edges stored both ways.
      node_features: float32 ``[num_nodes, num_features]``.
      labels: int32 ``[num_nodes]`` class ids, or int32 ``[num_nodes, num_classes]`` of 0/1
        for a multi-label set (PPI: each node has any subset of the classes).
      num_classes: number of node classes.
      train_mask, val_mask, test_mask: bool ``[num_nodes]``, the public split (Planetoid's;
        PPI's by graph: training, validation and test graphs).

    Example:
      >>> m = np.array([True, False])
      >>> ds = NodeDataset("toy", [0, 1], [1, 0], np.eye(2), [0, 1], 2, m, ~m, ~m)
      >>> ds.num_nodes, ds.num_features
      (2, 2)
    """

    name: str
    senders: np.ndarray
    receivers: np.ndarray
    node_features: np.ndarray
    labels: np.ndarray
    num_classes: int
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray

    def __post_init__(self):
        x = _frozen("node_features", self.node_features, np.float32, 2)
        n = x.shape[0]
        s = _frozen("senders", self.senders, np.int32, 1)
        r = _frozen("receivers", self.receivers, np.int32, 1)
        _check_edges(s, r, n)
        y = _frozen("labels", self.labels, np.int32, 2 if np.ndim(self.labels) == 2 else 1)
        if y.ndim == 2:
            if y.shape[1] != self.num_classes:
                raise ValueError(
                    f"multi-label `labels` have {y.shape[1]} columns for num_classes="
                    f"{self.num_classes}; expected one column per class"
                )
            if y.size and not np.isin(y, (0, 1)).all():
                raise ValueError("multi-label `labels` must hold only 0 and 1")
        elif y.size and (y.min() < 0 or y.max() >= self.num_classes):
            raise ValueError(
                f"`labels` must lie in [0, {self.num_classes}) (num_classes="
                f"{self.num_classes}), got values {y.min()}..{y.max()}"
            )
        fields = {"node_features": x, "senders": s, "receivers": r, "labels": y}
        for name in ("train_mask", "val_mask", "test_mask"):
            fields[name] = _frozen(name, getattr(self, name), np.bool_, 1)
        for name in ("labels", "train_mask", "val_mask", "test_mask"):
            if fields[name].shape[0] != n:
                raise ValueError(f"`{name}` has {fields[name].shape[0]} entries for {n} nodes")
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @property
    def num_nodes(self) -> int:
        return int(self.node_features.shape[0])

    @property
    def num_features(self) -> int:
        return int(self.node_features.shape[1])

    @property
    def num_edges(self) -> int:
        """Number of directed edges (twice the number of undirected ones)."""
        return int(self.senders.shape[0])

    @property
    def multilabel(self) -> bool:
        """Whether ``labels`` is ``[num_nodes, num_classes]`` of 0/1 (PPI) rather than ids."""
        return self.labels.ndim == 2

    def subgraph(self, mask) -> NodeDataset:
        """The nodes ``mask`` selects and the edges between them, renumbered in order.

        An inductive set's training graph (PPI's 20 training graphs: the training mask
        selects whole graphs, so no edge leaves it); the split masks are restricted to the
        kept nodes.

        Example:
          >>> m = np.array([True, True, False])
          >>> ds = NodeDataset("toy", [0, 1, 1, 2], [1, 0, 2, 1], np.eye(3), [0, 1, 0], 2,
          ...                  m, ~m, ~m)
          >>> sub = ds.subgraph(m)
          >>> sub.num_nodes, sub.senders.tolist(), sub.receivers.tolist()
          (2, [0, 1], [1, 0])
        """
        keep = np.asarray(mask)
        if keep.dtype != bool or keep.shape != (self.num_nodes,):
            raise ValueError(
                f"`mask` must be a boolean array of shape ({self.num_nodes},), got dtype "
                f"{keep.dtype} with shape {keep.shape}"
            )
        new_id = np.cumsum(keep) - 1
        inside = keep[self.senders] & keep[self.receivers]
        return NodeDataset(
            self.name,
            new_id[self.senders[inside]],
            new_id[self.receivers[inside]],
            self.node_features[keep],
            self.labels[keep],
            self.num_classes,
            self.train_mask[keep],
            self.val_mask[keep],
            self.test_mask[keep],
        )
