"""Text-file plumbing shared by the graph readers: tokens, numbers, and errors.

A file is split into whitespace-separated tokens once, in C (``bytes.split``), and the
line of every token is found with NumPy on the raw bytes, so that readers work on token
index arrays instead of looping over lines in Python. Every problem found in a data file
is raised as :class:`GraphFormatError` naming the file and the 1-based line number.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

# Where the benchmark files live for a jaxcl checkout, and where to get them elsewhere.
DATA_HINTS = {
    "tu": (
        "The TU data sets used by jaxcl's tests live in ../shared/data/tu_raw beside the "
        "repository checkout. Elsewhere, download <NAME>.zip from the TU Dortmund collection "
        "(https://chrsmrrs.github.io/datasets/, files at "
        "https://www.chrsmrrs.com/graphkerneldatasets/<NAME>.zip) and unzip it into `root`, "
        "giving root/<NAME>/<NAME>_A.txt and its sibling files."
    ),
    "gin": (
        "The GIN/DGCNN text files used by jaxcl's tests live in ../shared/data/tu_gin beside "
        "the repository checkout. Elsewhere, take dataset.zip from the GIN code "
        "(https://github.com/weihua916/powerful-gnns) and point `root_or_file` at "
        "dataset/<NAME> or at the <NAME>.txt file itself."
    ),
    "planetoid": (
        "Cora and Citeseer live in ../shared/data/planetoid beside the repository checkout. "
        "Elsewhere, take the data/ folder of https://github.com/kimiyoung/planetoid, which "
        "holds the ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index} files."
    ),
    "ppi": (
        "PPI is not among the data sets here. On a machine with network access, unzip "
        "https://data.dgl.ai/dataset/ppi.zip (the GraphSAGE preprocessing that DGL's and "
        "PyG's PPI readers download; PyG keeps it in <root>/raw) into the folder, giving "
        "{train,valid,test}_{graph.json,feats.npy,labels.npy,graph_id.npy}."
    ),
}

# Python's bytes.split() separators; numbers never need more characters than this.
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[9, 10, 11, 12, 13, 32]] = True
_MAX_TOKEN = 64


class GraphFormatError(ValueError):
    """A graph data file is malformed.

    Attributes:
      path: the file that is wrong.
      line: 1-based line number of the problem, or None where the file has no lines
        (a pickle) or the problem concerns the file as a whole.
      problem: what was wrong, without the location.
    """

    def __init__(self, path: str | os.PathLike, line: int | None, problem: str):
        self.path = Path(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}" if line is None else f"{self.path}, line {line}"
        super().__init__(f"{where}: {problem}")

    def __reduce__(self):
        return type(self), (self.path, self.line, self.problem)


def missing(path: Path, what: str, source: str, name: str) -> FileNotFoundError:
    """A FileNotFoundError naming the missing ``path`` and saying how to obtain data set
    ``name`` from ``source`` (a key of ``DATA_HINTS``)."""
    hint = DATA_HINTS[source].replace("<NAME>", name)
    return FileNotFoundError(f"{what} not found: {path}. {hint}")


def require_file(path: Path, what: str, source: str, name: str) -> Path:
    if not path.is_file():
        raise missing(path, what, source, name)
    return path


class TokenizedFile:
    """A text file as whitespace-separated tokens, with the line of every token.

    Lines are split on ``\\n`` only, so numbers match an editor's. Trailing blank lines
    are ignored; a blank line anywhere else is an error, since every line of these
    formats carries data and a blank one means something went missing.

    Attributes:
      path: the file.
      tokens: bytes array ``[T]``, every token in file order.
      token_line: int64 ``[T]`` 0-based line of each token.
      line_start: int64 ``[L]`` index in ``tokens`` of each line's first token.
      line_size: int64 ``[L]`` number of tokens on each line.
    """

    def __init__(self, path: Path, *, separator: bytes | None = None):
        """Reads ``path``; a ``separator`` (e.g. ``b","`` for TU files) separates values
        like whitespace does, and :meth:`table` checks how many each line holds."""
        self.path = path
        self._raw = path.read_bytes()
        self._separator = separator
        raw = self._raw if separator is None else self._raw.replace(separator, b" ")
        data = np.frombuffer(raw, dtype=np.uint8)
        space = _WHITESPACE[data]
        space_before = np.ones_like(space)  # the file's start counts as a separator
        space_before[1:] = space[:-1]
        space_after = np.ones_like(space)
        space_after[:-1] = space[1:]
        starts = np.flatnonzero(~space & space_before)
        ends = np.flatnonzero(~space & space_after)
        self._newlines = np.flatnonzero(data == 10)
        self.token_line = np.searchsorted(self._newlines, starts)
        num_lines = int(self.token_line[-1]) + 1 if starts.size else 0
        self.line_size = np.bincount(self.token_line, minlength=num_lines)
        self.line_start = np.searchsorted(self.token_line, np.arange(num_lines))
        blank = np.flatnonzero(self.line_size == 0)
        if blank.size:
            raise self.error(int(blank[0]), "empty line inside the file")
        long = np.flatnonzero(ends - starts + 1 > _MAX_TOKEN)
        if long.size:
            i = int(long[0])
            raise self.error(
                int(self.token_line[i]),
                f"a token of {ends[i] - starts[i] + 1} characters: not a text file of numbers",
            )
        self.tokens = np.array(raw.split(), dtype=np.bytes_)

    @property
    def num_lines(self) -> int:
        return int(self.line_size.shape[0])

    def text(self, line: int, limit: int = 80) -> str:
        """Line ``line`` (0-based), quoted for an error message, shortened when long."""
        lo = 0 if line == 0 else int(self._newlines[line - 1]) + 1
        hi = int(self._newlines[line]) if line < self._newlines.size else len(self._raw)
        text = self._raw[lo:hi].decode("utf-8", errors="replace").strip()
        return repr(text if len(text) <= limit else text[: limit - 3] + "...")

    def error(self, line: int | None, problem: str) -> GraphFormatError:
        """A GraphFormatError at 0-based ``line`` (None: the whole file)."""
        return GraphFormatError(self.path, None if line is None else line + 1, problem)

    def ints(self, index: np.ndarray, what: str) -> np.ndarray:
        """The tokens at ``index`` (any shape) as int64; a bad token is reported at its line."""
        index = np.asarray(index)
        tokens = self.tokens[index.reshape(-1)]
        try:
            return tokens.astype(np.int64).reshape(index.shape)
        except (ValueError, OverflowError):
            pass
        for k, token in enumerate(tokens.tolist()):
            try:
                np.int64(int(token))
            except (ValueError, OverflowError):
                raise self._bad_token(index.reshape(-1)[k], what, "an integer") from None
        raise AssertionError("unreachable: bulk conversion failed but no token is bad")

    def floats(self, index: np.ndarray, what: str) -> np.ndarray:
        """The tokens at ``index`` (any shape) as finite float64; reports a bad one at its line."""
        index = np.asarray(index)
        tokens = self.tokens[index.reshape(-1)]
        try:
            values = tokens.astype(np.float64)
            bad = np.flatnonzero(~np.isfinite(values))
        except ValueError:
            bad = [k for k, token in enumerate(tokens.tolist()) if not _is_float(token)]
        if len(bad):
            raise self._bad_token(index.reshape(-1)[bad[0]], what, "a finite number")
        return values.reshape(index.shape)

    def _bad_token(self, i: int, what: str, expected: str) -> GraphFormatError:
        token = self.tokens[i].decode(errors="replace")
        return self.error(int(self.token_line[i]), f"{what}: {token!r} is not {expected}")

    def table(self, columns: int | None, what: str) -> np.ndarray:
        """Token indices ``[num_lines, columns]`` of a file with one record per line.

        Each line must hold ``columns`` values and, where the file was read with a
        separator, exactly ``columns - 1`` separators between them.

        Args:
          columns: values per line; None takes the first line's count.
          what: what one line holds, for error messages.
        """
        if columns is None:
            columns = int(self.line_size[0]) if self.num_lines else 1
        bad = self.line_size != columns
        if self._separator is not None:
            data = np.frombuffer(self._raw, dtype=np.uint8)
            where = np.flatnonzero(data == ord(self._separator))
            line = np.searchsorted(self._newlines, where)
            bad |= np.bincount(line, minlength=self.num_lines)[: self.num_lines] != columns - 1
        if bad.any():
            line = int(np.argmax(bad))
            separated = (
                "" if self._separator is None else f" separated by {self._separator.decode()!r}"
            )
            raise self.error(
                line,
                f"expected {what} ({columns} value{'s' * (columns != 1)}{separated}), "
                f"got {self.text(line)}",
            )
        return np.arange(self.num_lines * columns).reshape(self.num_lines, columns)


def _is_float(token: bytes) -> bool:
    try:
        return bool(np.isfinite(float(token)))
    except ValueError:
        return False


def read_int_table(path: Path, what: str, columns: int) -> np.ndarray:
    """A comma-separated integer file as an int64 array ``[num_lines, columns]``."""
    file = TokenizedFile(path, separator=b",")
    return file.ints(file.table(columns, what), what)


def read_float_table(path: Path, what: str) -> np.ndarray:
    """A comma-separated float file (column count from its first line), ``[num_lines, cols]``."""
    file = TokenizedFile(path, separator=b",")
    return file.floats(file.table(None, what), what)
