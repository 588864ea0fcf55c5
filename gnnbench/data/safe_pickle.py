"""Reading downloaded pickles through an allow-list.

``pickle.load`` runs whatever callable a file names, so a tampered download could execute code. :func:`safe_load`
unpickles with a :class:`pickle.Unpickler` whose ``find_class`` only hands out the few constructors that plain data
needs; any other global is refused *before* anything is called, with a one-line :class:`DataError`.

Allowed (Python 2 names are accepted as well: the pickles are read with ``encoding="latin1"``):

* NumPy array, dtype and scalar reconstruction: ``numpy.ndarray``, ``numpy.dtype``,
  ``numpy.core.multiarray._reconstruct`` / ``scalar``, ``numpy.core.numeric._frombuffer`` (and the ``numpy._core``
  spellings of NumPy 2);
* ``builtins`` (Python 2: ``__builtin__``) ``list``, ``dict``, ``tuple``, ``set``, ``frozenset``, ``int``, ``float``,
  ``complex``, ``bool``, ``str``, ``bytes``, ``bytearray``;
* ``collections.defaultdict`` and ``collections.OrderedDict``; ``_codecs.encode`` for latin1 text only (how Python 3
  writes ``bytes`` at protocols < 3);
* SciPy sparse matrices — ``scipy.sparse.csr.csr_matrix`` (SciPy < 1.8 module names), ``scipy.sparse._csr.csr_matrix``,
  and the ``csc`` / ``coo`` equivalents, ``csr_array`` etc. — are *not* constructed: the class is replaced by
  :class:`PickledSparse`, a plain holder of the pickled state (``data``, ``indices``, ``indptr``, ``_shape``; COO:
  ``row``, ``col`` or, since SciPy 1.13, ``coords``), and :func:`to_csr` builds a ``scipy.sparse.csr_matrix``
  from that state, checking it. (LIL matrices, whose state holds object arrays of Python lists, are not accepted:
  no file gnnbench reads contains one.)
* PyTorch tensors pickled the classic way (``pickle.dump`` of a tensor, as the ZINC ``molecules.zip`` pickles hold
  them): ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])`` with
  the storage from ``torch.storage._load_from_bytes(bytes)``. Neither stock function is called: the stock
  ``_load_from_bytes`` runs ``torch.load(..., weights_only=False)``, i.e. unpickles the embedded bytes without any
  restriction. Unpickling keeps the bytes unread in a :class:`TorchStorageBytes` and the view in a
  :class:`PickledTensor` (after checking that the arguments are such bytes, ints, tuples of ints, a bool and an
  empty ``OrderedDict``); :func:`to_numpy` then reads the bytes with ``torch.load(..., weights_only=True)``
  (PyTorch's own restricted unpickler: tensor data only), checks that they hold one storage and that the view lies
  inside it, and returns the array of the rebuilt tensor. Reading lazily also means that a loader which keeps
  only some of a file's tensors (ZINC's 12k subset of 250k molecules) only decodes those.

A reader may widen the allow-list for its own file only (``extra`` of :func:`safe_load`); the one such table here is
:data:`NETWORKX_GRAPHS`, for the CYCLES release (pickled networkx graphs): ``networkx.classes.graph.Graph`` and the
views a graph caches in its ``__dict__`` (``NodeView``, ``EdgeView``, ``DegreeView`` of
``networkx.classes.reportviews``; ``AdjacencyView``, ``AtlasView`` of ``networkx.classes.coreviews``) are *not*
constructed either: each becomes a
:class:`PickledObject` holding the pickled state (a graph's ``_node``, ``_adj``, ``graph`` dicts — ``node``/``adj``
in networkx 1.x), built by ``NEWOBJ`` (protocol ≥ 2) or by ``copyreg._reconstructor`` (protocols 0 and 1), which the
table admits for those holders only. networkx is never imported.

Reading never imports a module named by the file. What the allowed callables can still do with hostile arguments is
build data (or exhaust memory, reported as a corrupt file); none of them runs code, opens files or imports.
"""

from __future__ import annotations

import io
import os
import pickle
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from gnnbench.errors import DataError


class PickledSparse:
    """The state of a pickled SciPy sparse matrix, held as plain data (never a live SciPy object)."""

    format = ""  # "csr", "csc" or "coo", set per subclass
    state: dict | None = None  # set by BUILD (unpickling calls __new__, never __init__)

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, dict):
            raise pickle.UnpicklingError(f"sparse {self.format} matrix state is a {type(state).__name__}, not a dict")
        self.state = state


class PickledObject:
    """The pickled state of an object of an allowed class, held as plain data (the class is never constructed).

    Unpickling creates it with ``__new__`` (``NEWOBJ``) and hands it the state (``BUILD``): whatever the file holds
    is kept in :attr:`state` unread, so the reader checks it before using anything."""

    state: Any = None

    def __setstate__(self, state: Any) -> None:
        self.state = state


class PickledGraph(PickledObject):
    """A pickled ``networkx.Graph``: :attr:`state` is its ``__dict__`` (``_node``, ``_adj``, ``graph``, ...)."""


class PickledGraphView(PickledObject):
    """A view (``NodeView``, ``AdjacencyView``, ...) a networkx graph cached in its ``__dict__``; never read."""


def _holder_reconstructor(cls: Any, base: Any, state: Any) -> PickledObject:
    """Stand-in for ``copyreg._reconstructor`` (how protocols 0 and 1 rebuild objects), for the holders only."""
    if not (isinstance(cls, type) and issubclass(cls, PickledObject) and base is object and state is None):
        raise pickle.UnpicklingError("copyreg._reconstructor is allowed only to rebuild an allowed networkx object")
    return cls.__new__(cls)


def _networkx_graphs() -> dict[tuple[str, str], Any]:
    table: dict[tuple[str, str], Any] = {("networkx.classes.graph", "Graph"): PickledGraph}
    for module, names in (("networkx.classes.reportviews", ("NodeView", "EdgeView", "DegreeView")),
                          ("networkx.classes.coreviews", ("AdjacencyView", "AtlasView"))):
        for name in names:
            table[(module, name)] = PickledGraphView
    for module in ("copyreg", "copy_reg"):  # Python 3 / Python 2 name
        table[(module, "_reconstructor")] = _holder_reconstructor
    for module in ("builtins", "__builtin__"):
        table[(module, "object")] = object  # the base class _reconstructor names (checked to be object there)
    return table


NETWORKX_GRAPHS = _networkx_graphs()
"""Extra allow-list for pickled networkx graphs (module doc); pass it as ``safe_load(..., extra=NETWORKX_GRAPHS)``."""


def _sparse_class(fmt: str) -> type[PickledSparse]:
    return type(f"Pickled{fmt.upper()}", (PickledSparse,), {"format": fmt})


_SPARSE = {fmt: _sparse_class(fmt) for fmt in ("csr", "csc", "coo")}


class TorchStorageBytes:
    """The ``torch.save`` bytes of one pickled torch storage, held unread (:func:`to_numpy` reads them)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class PickledTensor:
    """A pickled torch tensor as plain data: its storage's bytes and the view (offset, size, stride) on them."""

    __slots__ = ("storage", "offset", "size", "stride")

    def __init__(self, storage: TorchStorageBytes, offset: int, size: tuple[int, ...], stride: tuple[int, ...]):
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride


def _storage_bytes(data: Any) -> TorchStorageBytes:
    """Stand-in for ``torch.storage._load_from_bytes``: keeps the bytes, runs nothing."""
    if not isinstance(data, (bytes, bytearray)):
        raise pickle.UnpicklingError(f"torch storage data is a {type(data).__name__}, not bytes")
    return TorchStorageBytes(bytes(data))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _tensor_view(storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any,
                 backward_hooks: Any, metadata: Any = None) -> PickledTensor:
    """Stand-in for ``torch._utils._rebuild_tensor_v2``: checks the arguments are plain tensor data and keeps them."""
    ok = (isinstance(storage, TorchStorageBytes) and _is_int(storage_offset) and storage_offset >= 0
          and isinstance(size, tuple) and isinstance(stride, tuple) and len(size) == len(stride)
          and all(_is_int(v) and v >= 0 for v in size + stride) and isinstance(requires_grad, bool)
          and type(backward_hooks) is OrderedDict and not backward_hooks and not metadata)
    if not ok:
        raise pickle.UnpicklingError("a pickled torch tensor has arguments other than plain tensor data (a storage, "
                                     "ints, tuples of ints, a bool, an empty OrderedDict)")
    return PickledTensor(storage, storage_offset, size, stride)


def to_numpy(obj: Any, what: str, where: str) -> np.ndarray:
    """The array of a :class:`PickledTensor`: its storage read by ``torch.load(weights_only=True)``, the pickled view
    taken on it (checked to lie inside the storage). Anything else raises a one-line :class:`DataError`."""
    fix = "the file is not genuine — delete it and download it again"
    if not isinstance(obj, PickledTensor):
        raise DataError(f"{what} {where} holds a {type(obj).__name__} where a torch tensor belongs; {fix}")
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TypedStorage deprecation notes: reading old files is the point here
        try:
            storage = torch.load(io.BytesIO(obj.storage.data), map_location="cpu", weights_only=True)
        except Exception as exc:  # torch.load raises many types; each means "refused" or "corrupt"
            raise DataError(f"{what} {where} holds a torch storage that torch.load(weights_only=True) refuses "
                            f"({_reason(exc)}); {fix}") from None
        if not isinstance(storage, torch.storage.TypedStorage):
            raise DataError(f"{what} {where} holds a {type(storage).__name__} where a torch storage belongs; {fix}")
        extent = obj.offset + sum((n - 1) * s for n, s in zip(obj.size, obj.stride, strict=True)) + 1
        if all(obj.size) and extent > storage.size():
            raise DataError(f"{what} {where} holds a tensor view (offset {obj.offset}, size {obj.size}, stride "
                            f"{obj.stride}) outside its storage of {storage.size()} elements; {fix}")
        try:
            return torch._utils._rebuild_tensor(storage, obj.offset, obj.size, obj.stride).numpy()
        except (RuntimeError, TypeError) as exc:  # e.g. a dtype NumPy lacks (bfloat16)
            raise DataError(f"{what} {where} holds a tensor that cannot be read as a NumPy array "
                            f"({_reason(exc)}); {fix}") from None


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:160] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _numpy_core():
    try:
        from numpy._core import multiarray, numeric  # NumPy ≥ 2
    except ImportError:  # pragma: no cover - NumPy 1.x
        from numpy.core import multiarray, numeric
    return multiarray, numeric


def _latin1_encode(text: str, encoding: str = "latin1") -> bytes:
    """``_codecs.encode`` as Python 3 pickles bytes at protocols < 3, restricted to that use."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"_codecs.encode is allowed only for latin1 text (got {encoding!r})")
    return text.encode("latin1")


def _allowed() -> dict[tuple[str, str], Any]:
    import builtins
    import collections

    multiarray, numeric = _numpy_core()
    table: dict[tuple[str, str], Any] = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}
    for core in ("numpy.core", "numpy._core"):
        table[(f"{core}.multiarray", "_reconstruct")] = multiarray._reconstruct
        table[(f"{core}.multiarray", "scalar")] = multiarray.scalar
        table[(f"{core}.numeric", "_frombuffer")] = numeric._frombuffer
    for name in ("list", "dict", "tuple", "set", "frozenset", "int", "float", "complex", "bool", "str", "bytes",
                 "bytearray"):
        for module in ("builtins", "__builtin__"):
            table[(module, name)] = getattr(builtins, name)
    table[("__builtin__", "unicode")] = str  # Python 2 names of str/bytes
    table[("__builtin__", "long")] = int
    table[("_codecs", "encode")] = _latin1_encode
    table[("collections", "defaultdict")] = collections.defaultdict
    table[("collections", "OrderedDict")] = collections.OrderedDict
    for fmt, holder in _SPARSE.items():
        for module in (f"scipy.sparse.{fmt}", f"scipy.sparse._{fmt}", "scipy.sparse"):
            table[(module, f"{fmt}_matrix")] = holder
            table[(module, f"{fmt}_array")] = holder
    table[("torch.storage", "_load_from_bytes")] = _storage_bytes
    table[("torch._utils", "_rebuild_tensor_v2")] = _tensor_view
    return table


_ALLOWED = _allowed()


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle names a global outside the allow-list (raised before anything is called)."""

    def __init__(self, module: str, name: str) -> None:
        super().__init__(f"refusing to load {module}.{name}, which is not on gnnbench's allow-list")
        self.module, self.name = module, name


class _AllowListUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BufferedIOBase, extra: dict[tuple[str, str], Any] | None = None) -> None:
        super().__init__(file, encoding="latin1")
        self.extra = extra or {}

    def find_class(self, module: str, name: str) -> Any:
        found = self.extra.get((module, name), _ALLOWED.get((module, name)))
        if found is None:
            raise RefusedGlobal(module, name)
        return found


def restricted_loads(data: bytes, extra: dict[tuple[str, str], Any] | None = None) -> Any:
    """Unpickle ``data`` through the allow-list (plus ``extra``, e.g. :data:`NETWORKX_GRAPHS`), raising what
    :mod:`pickle` raises: :class:`RefusedGlobal` (a :class:`pickle.UnpicklingError`) for a global outside it. For
    readers with their own error messages; others use :func:`safe_load`."""
    return _AllowListUnpickler(io.BytesIO(data), extra).load()


UNREADABLE = (pickle.UnpicklingError, EOFError, AttributeError, IndexError, KeyError, TypeError, ValueError,
              MemoryError, OverflowError, UnicodeDecodeError)
"""What unpickling a damaged or hostile file through the allow-list can raise (all mean "not a genuine file")."""


def safe_load(path_or_bytes: str | os.PathLike | bytes, what: str, where: str = "(in memory)",
              extra: dict[tuple[str, str], Any] | None = None, fix: str | None = None) -> Any:
    """Unpickle a file (or bytes) through the allow-list; ``what`` names the file's role in error messages, and
    ``where`` names bytes' origin (e.g. an archive member; a file is named by its path). ``extra`` widens the
    allow-list for this file only (e.g. :data:`NETWORKX_GRAPHS`); ``fix`` replaces the default advice ("delete it
    and download it again") at the end of the messages.

    A refused global, a truncated or corrupt pickle, or a missing file raises :class:`DataError` (one line).
    """
    if isinstance(path_or_bytes, (bytes, bytearray)):
        data = bytes(path_or_bytes)
    else:
        path = Path(path_or_bytes)
        where = str(path)
        if not path.is_file():
            raise DataError(f"{what} {path} does not exist; download it first")
        data = path.read_bytes()
    try:
        return restricted_loads(data, extra)
    except DataError:
        raise
    except RefusedGlobal as exc:
        raise DataError(f"{what} {where} wants to load {exc.module}.{exc.name}, which is not on gnnbench's "
                        f"allow-list; the file is not a genuine {what} (it could run code when unpickled) — "
                        f"{fix or 'delete it and download it again'}") from None
    except UNREADABLE as exc:
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        advice = fix or "the file is truncated or corrupt — delete it and download it again"
        raise DataError(f"{what} {where} is not a readable pickle ({type(exc).__name__}: {reason}); {advice}") from None


def to_csr(obj: Any, what: str, where: str) -> sp.csr_matrix:
    """A ``csr_matrix`` (float32 values, int32/int64 indices as stored) from a :class:`PickledSparse` holder.

    The pickled arrays are checked (lengths, monotone ``indptr``, column/row indices inside the shape) so a
    malformed file is a :class:`DataError`, not a crash deep inside SciPy.
    """
    if not isinstance(obj, PickledSparse):
        raise DataError(f"{what} {where} holds a {type(obj).__name__}, expected a SciPy sparse matrix; the file is "
                        "not the expected one — delete it and download it again")
    state = obj.state or {}
    try:
        shape = state.get("_shape", state.get("shape"))
        rows, cols = (int(v) for v in shape)
        data = np.asarray(state["data"])
        if obj.format in ("csr", "csc"):
            indices, indptr = np.asarray(state["indices"]), np.asarray(state["indptr"])
            major, minor = (rows, cols) if obj.format == "csr" else (cols, rows)
            ok = (indptr.ndim == indices.ndim == data.ndim == 1 and indptr.shape == (major + 1,)
                  and indptr[0] == 0 and np.all(np.diff(indptr) >= 0) and indptr[-1] == indices.size == data.size
                  and (indices.size == 0 or (indices.min() >= 0 and indices.max() < minor)))
            if not ok:
                raise ValueError("inconsistent index arrays")
            cls = sp.csr_matrix if obj.format == "csr" else sp.csc_matrix
            matrix = cls((data, indices, indptr), shape=(rows, cols))
        else:
            if "coords" in state:  # SciPy ≥ 1.13 stores (row, col) as one tuple
                row, col = (np.asarray(c) for c in state["coords"])
            else:
                row, col = np.asarray(state["row"]), np.asarray(state["col"])
            ok = (row.shape == col.shape == data.shape and row.ndim == 1
                  and (row.size == 0 or (row.min() >= 0 and row.max() < rows and col.min() >= 0 and col.max() < cols)))
            if not ok:
                raise ValueError("inconsistent index arrays")
            matrix = sp.coo_matrix((data, (row, col)), shape=(rows, cols))
        out = matrix.tocsr().astype(np.float32)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{what} {where} holds a malformed sparse {obj.format} matrix ({type(exc).__name__}: "
                        f"{exc}); delete it and download it again") from None
    out.sum_duplicates()  # canonical: sorted, unique column indices per row
    return out
