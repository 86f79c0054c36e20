"""Reader for the idx format of MNIST and Fashion-MNIST (raw or gzip-compressed).

An idx file is a 4-byte magic number ``00 00 TT NN`` (``TT`` the element type, ``NN`` the
number of dimensions), then ``NN`` big-endian uint32 sizes, then the elements in C order,
big-endian. See http://yann.lecun.com/exdb/mnist/ (section "file formats").
"""

from __future__ import annotations

import gzip
import os
import zlib

import numpy as np

# Element type code -> big-endian NumPy dtype.
IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}

_GZIP_MAGIC = b"\x1f\x8b"


def read_idx_bytes(path: str | os.PathLike) -> bytes:
    """The uncompressed bytes of an idx file; gzip is detected from the content, not the name."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] != _GZIP_MAGIC:
        return data
    try:
        return gzip.decompress(data)
    except (EOFError, OSError, zlib.error) as e:
        raise ValueError(f"{path}: corrupt or truncated gzip stream ({e})") from e


def parse_idx(data: bytes, *, source: str = "<bytes>") -> np.ndarray:
    """Parses the bytes of an idx file into an array of native byte order.

    Args:
      data: uncompressed idx bytes.
      source: a name for error messages (usually the file path).

    Returns:
      The array, shape given by the header, dtype given by the type code (native order).

    Raises:
      ValueError: bad magic number, unknown type code, or a header/data size that does not
        match the file (truncated or with trailing bytes); the message names ``source``.
    """
    if len(data) < 4:
        raise ValueError(
            f"{source}: truncated idx file: {len(data)} bytes, the magic number alone needs 4"
        )
    magic = int.from_bytes(data[:4], "big")
    if data[0] != 0 or data[1] != 0:
        raise ValueError(
            f"{source}: bad idx magic number 0x{magic:08x}: an idx file starts with two zero "
            "bytes (e.g. 0x00000803 for ubyte images, 0x00000801 for ubyte labels)"
        )
    type_code, ndim = data[2], data[3]
    if type_code not in IDX_DTYPES:
        known = ", ".join(f"0x{c:02x}" for c in IDX_DTYPES)
        raise ValueError(
            f"{source}: bad idx magic number 0x{magic:08x}: unknown element type code "
            f"0x{type_code:02x} (known: {known})"
        )
    if ndim == 0:
        raise ValueError(f"{source}: bad idx magic number 0x{magic:08x}: zero dimensions")
    header_len = 4 + 4 * ndim
    if len(data) < header_len:
        raise ValueError(
            f"{source}: truncated idx header: {ndim} dimensions need {header_len} bytes, "
            f"the file has {len(data)}"
        )
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = IDX_DTYPES[type_code]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    got = len(data) - header_len
    if got < expected:
        raise ValueError(
            f"{source}: truncated idx file: the header promises shape {shape} of {dtype.name} "
            f"({expected} bytes of data), the file has {got}"
        )
    if got > expected:
        raise ValueError(
            f"{source}: {got - expected} unexpected trailing bytes after the shape {shape} of "
            f"{dtype.name} promised by the idx header"
        )
    array = np.frombuffer(data, dtype=dtype, count=expected // dtype.itemsize, offset=header_len)
    # A copy in native order: the buffer view is read-only and may be big-endian.
    return array.reshape(shape).astype(dtype.newbyteorder("="))


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Reads an idx file (raw or gzip-compressed) into a NumPy array.

    Args:
      path: the file, e.g. ``train-images-idx3-ubyte`` or ``train-images-idx3-ubyte.gz``.

    Returns:
      The array in native byte order: ``uint8 [n, 28, 28]`` for (Fashion-)MNIST images,
      ``uint8 [n]`` for their labels.

    Raises:
      ValueError: a malformed file (bad magic number, truncated data or gzip stream, trailing
        bytes); the message names the file and what is wrong.

    Example:
      >>> from jaxcl.data import read_idx
      >>> images = read_idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")
      >>> images.shape, images.dtype
      ((10000, 28, 28), dtype('uint8'))
    """
    return parse_idx(read_idx_bytes(path), source=os.fspath(path))
