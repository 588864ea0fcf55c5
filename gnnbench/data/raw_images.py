"""Raw image sets for the superpixel datasets: MNIST (IDX files), CIFAR-10 (python tarball), sklearn digits.

Parsed here without torchvision, in the formats torchvision's ``datasets/mnist.py`` and ``datasets/cifar.py`` read
(docs/datasets.md#superpixels-mnist-cifar-10-and-digits):

* IDX (MNIST): 4-byte big-endian magic ``0x0000TTDD`` (TT = type code, DD = number of dimensions), one 4-byte
  big-endian size per dimension, then the data in row-major order. Gzipped or plain files are accepted (by the
  gzip magic bytes, not the file name). Magic, type code and data size are validated; any mismatch raises a
  :class:`DataError` naming the file.
* CIFAR-10: ``cifar-10-python.tar.gz`` is read directly (no extraction to disk): members
  ``cifar-10-batches-py/data_batch_1..5`` then ``test_batch``; each a pickle (``encoding="latin1"``) of a dict with
  ``data`` uint8 (10000, 3072) = R, G, B planes of 32×32 row-major, and ``labels``. Returned as (N, 32, 32, 3) uint8
  HWC RGB, as torchvision produces. Safety: only those named members are read, and only when they are regular
  files (no links/devices, no path games since nothing is written); pickles are loaded with gnnbench's allow-list
  unpickler (:func:`gnnbench.data.safe_pickle.restricted_loads`: plain containers, NumPy arrays and scalars,
  ``_codecs.encode`` for the bytes of Python 3 protocol-2 pickles), so a crafted tarball cannot run code.
* Digits (offline stand-in): scikit-learn's bundled ``load_digits`` (1,797 images 8×8, values 0..16) upsampled to
  28×28 with ``skimage.transform.resize(order=1 bilinear, anti_aliasing=False)`` — anti-aliasing only matters when
  shrinking — on values/16, then ×255 rounded to uint8, so the images look like (blurry) MNIST digits. Split: no
  official one exists; gnnbench takes the first 1,500 images as the "training" set and the last 297 as the "test"
  set (the bundled order interleaves all classes), giving the same prefix semantics as MNIST.

File registries: :data:`MNIST_FILES` (canonical URLs from both torchvision mirrors, published MD5s) and
:data:`CIFAR10_FILES`, as :class:`~gnnbench.data.download.RawFile` with paths under ``mnist/`` and ``cifar10/``.
"""

from __future__ import annotations

import gzip
import os
import tarfile
from pathlib import Path

import numpy as np

from gnnbench.data.download import RawFile, fetch
from gnnbench.data.safe_pickle import UNREADABLE, restricted_loads
from gnnbench.errors import ConfigError, DataError

MNIST_MIRRORS = ("http://yann.lecun.com/exdb/mnist/", "https://ossci-datasets.s3.amazonaws.com/mnist/")
_MNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}
MNIST_FILES: dict[str, RawFile] = {
    name: RawFile(f"mnist/{name}", md5, tuple(m + name for m in MNIST_MIRRORS)) for name, md5 in _MNIST_MD5.items()
}
CIFAR10_FILES: dict[str, RawFile] = {
    "cifar-10-python.tar.gz": RawFile("cifar10/cifar-10-python.tar.gz", "c58f30108f718f92721af3b95e74349a",
                                      ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",)),
}
RAW_FILES: dict[str, RawFile] = {f.relative_path: f for f in (*MNIST_FILES.values(), *CIFAR10_FILES.values())}

_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"),
              0x0E: np.dtype(">f8")}
CIFAR_DIR = "cifar-10-batches-py"
CIFAR_TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
DIGITS_TRAIN = 1500  # first 1,500 bundled digits = training pool, the remaining 297 = test


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """The array stored in an IDX file (gzipped or plain), in native byte order."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"IDX file {path} does not exist; download it first (see gnnbench.data.download)")
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise DataError(f"IDX file {path} is a corrupt gzip file ({exc}); delete it and download it again") \
                from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise DataError(f"IDX file {path} has magic {raw[:4].hex() or '(empty)'}, expected 0000TTDD (type, dims); "
                        "it is not an IDX file: delete it and download it again")
    type_code, ndim = raw[2], raw[3]
    if type_code not in _IDX_TYPES or ndim == 0:
        raise DataError(f"IDX file {path} has type code 0x{type_code:02x} and {ndim} dims, expected a type in "
                        f"{{{', '.join(f'0x{t:02x}' for t in _IDX_TYPES)}}} and ≥ 1 dim; delete it and download it "
                        "again")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DataError(f"IDX file {path} is truncated inside its header; delete it and download it again")
    shape = tuple(int(s) for s in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_TYPES[type_code])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise DataError(f"IDX file {path} holds {len(raw) - header} data bytes, expected {expected} for shape "
                        f"{shape}; it is truncated or corrupt: delete it and download it again")
    data = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


def _mnist_part(raw_dir: Path, name: str, ndim: int, what: str) -> np.ndarray:
    path = Path(raw_dir) / MNIST_FILES[name].relative_path
    array = read_idx(path)
    if array.dtype != np.uint8 or array.ndim != ndim or (ndim == 3 and array.shape[1:] != (28, 28)):
        raise DataError(f"IDX file {path} holds {array.dtype} {array.shape}, expected uint8 {what}; delete it "
                        "and download it again")
    return array


def load_mnist(raw_dir: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train_images (N,28,28) uint8, train_labels (N,) uint8, test_images, test_labels) from ``raw_dir/mnist``."""
    raw_dir = Path(raw_dir)
    out = []
    for prefix in ("train", "t10k"):
        images = _mnist_part(raw_dir, f"{prefix}-images-idx3-ubyte.gz", 3, "images (N, 28, 28)")
        labels = _mnist_part(raw_dir, f"{prefix}-labels-idx1-ubyte.gz", 1, "labels (N,)")
        if len(images) != len(labels):
            raise DataError(f"{raw_dir / 'mnist'}: {prefix} has {len(images)} images but {len(labels)} labels; "
                            "delete the files and download them again")
        out += [images, labels]
    return out[0], out[1], out[2], out[3]


def _read_batch(tar: tarfile.TarFile, member_name: str, path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        member = tar.getmember(member_name)
    except KeyError:
        raise DataError(f"CIFAR-10 tarball {path} has no member {member_name}; delete it and download it again") \
            from None
    if not member.isfile():
        raise DataError(f"CIFAR-10 tarball {path}: member {member_name} is not a regular file (unsafe or corrupt "
                        "archive); delete it and download it again")
    fh = tar.extractfile(member)
    try:
        batch = restricted_loads(fh.read())
        data = np.asarray(batch["data"], dtype=np.uint8)
        labels = np.asarray(batch["labels"], dtype=np.int64)
    except UNREADABLE as exc:
        raise DataError(f"CIFAR-10 tarball {path}: member {member_name} is not a valid batch ({exc}); delete it and "
                        "download it again") from None
    if data.ndim != 2 or data.shape[1] != 3072 or len(labels) != len(data) or labels.min(initial=0) < 0 \
            or labels.max(initial=0) > 9:
        raise DataError(f"CIFAR-10 tarball {path}: member {member_name} holds data {data.shape} and {len(labels)} "
                        "labels, expected (N, 3072) and N labels in 0..9; delete it and download it again")
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).copy(), labels.astype(np.uint8)


def load_cifar10(tarball_path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train_images (N,32,32,3) uint8 HWC RGB, train_labels uint8, test_images, test_labels) from the tarball."""
    path = Path(tarball_path)
    if not path.is_file():
        raise DataError(f"CIFAR-10 tarball {path} does not exist; download it first (see gnnbench.data.download)")
    try:
        with tarfile.open(path, "r:gz") as tar:
            train = [_read_batch(tar, f"{CIFAR_DIR}/{b}", path) for b in CIFAR_TRAIN_BATCHES]
            test = _read_batch(tar, f"{CIFAR_DIR}/test_batch", path)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise DataError(f"CIFAR-10 tarball {path} cannot be read ({exc}); delete it and download it again") from None
    return (np.concatenate([t[0] for t in train]), np.concatenate([t[1] for t in train]), test[0], test[1])


def load_digits_28() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's digits upsampled to 28×28 uint8: (train_images, train_labels, test_images, test_labels)."""
    from skimage.transform import resize
    from sklearn.datasets import load_digits

    digits = load_digits()
    small = digits.images.astype(np.float64) / 16.0  # (1797, 8, 8) in [0, 1]
    big = resize(small, (len(small), 28, 28), order=1, mode="edge", anti_aliasing=False)
    images = np.clip(np.rint(big * 255.0), 0, 255).astype(np.uint8)
    labels = digits.target.astype(np.uint8)
    return images[:DIGITS_TRAIN], labels[:DIGITS_TRAIN], images[DIGITS_TRAIN:], labels[DIGITS_TRAIN:]


def fetch_into(raw_dir: str | os.PathLike, relative_path: str, mirror: str | None = None, **kwargs) -> Path:
    """Download one registered raw file (e.g. ``"mnist/train-images-idx3-ubyte.gz"``) into ``raw_dir``.

    For a Snakemake download rule: the output is ``raw_dir/relative_path``. ``mirror`` "" or None = canonical URLs.
    """
    if relative_path not in RAW_FILES:
        raise ConfigError(f"raw file {relative_path!r} is not registered; known: {', '.join(sorted(RAW_FILES))}")
    return fetch(RAW_FILES[relative_path], raw_dir, mirror=mirror or None, **kwargs)
