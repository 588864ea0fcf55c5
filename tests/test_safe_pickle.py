"""Allow-list unpickler (gnnbench.data.safe_pickle): genuine data loads, anything else is refused unexecuted.

Malicious pickles are built with ``__reduce__`` (what an attacker would write); a marker file shows whether the
payload ran. The real Planetoid files (../shared/data/real/planetoid) are compared with a plain ``pickle.load``
(trusted here: they are the checked originals).
"""

from __future__ import annotations

import collections
import os
import pickle
import pickletools
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from gnnbench.data.safe_pickle import PickledSparse, safe_load, to_csr
from gnnbench.errors import DataError

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "planetoid"


class _Payload:
    """Unpickling this object calls ``func(*args)``."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _one_line(info: pytest.ExceptionInfo) -> str:
    msg = str(info.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("protocol", [0, 2, 4])
def test_os_system_payload_is_refused_without_running(tmp_path, protocol):
    marker = tmp_path / "pwned"
    data = pickle.dumps({"x": [1, 2, _Payload(os.system, f"touch {marker}")]}, protocol=protocol)
    path = tmp_path / "evil.pkl"
    path.write_bytes(data)
    with pytest.raises(DataError) as info:
        safe_load(path, "Planetoid file")
    msg = _one_line(info)
    assert not marker.exists()
    assert f"Planetoid file {path} wants to load" in msg and (".system" in msg)
    assert "not on gnnbench's allow-list" in msg and "not a genuine Planetoid file" in msg
    assert "delete it and download it again" in msg
    pickle.loads(data)  # the same bytes do run the payload with plain pickle: the test's premise holds
    assert marker.exists()


@pytest.mark.parametrize("func, args", [(eval, ("1+1",)), (getattr, (int, "real")), (__import__, ("os",)),
                                        (np.load, ("x.npy",)), (collections.Counter, ("ab",))])
def test_other_callables_are_refused(func, args):
    with pytest.raises(DataError) as info:
        safe_load(pickle.dumps(_Payload(func, *args), protocol=2), "test pickle")
    msg = _one_line(info)
    assert f".{func.__name__}, which is not on gnnbench's allow-list" in msg  # module spelled as pickled
    assert "(in memory)" in msg


def test_python2_global_names_and_plain_data():
    """``__builtin__`` / ``copy_reg`` era names: a protocol-2 pickle written by hand with Python 2 module names."""
    obj = collections.defaultdict(list, {0: [1, 2], 5: [3]})
    data = pickle.dumps(obj, protocol=2, fix_imports=True)
    assert b"__builtin__" in data  # fix_imports wrote the Python 2 name, as in the Planetoid files
    got = safe_load(data, "graph")
    assert type(got) is collections.defaultdict and got.default_factory is list and got == obj
    plain = {"a": (1, 2.5, "s", b"b", None, True), "b": {3, 4}, "c": collections.OrderedDict(z=1),
             "d": np.arange(6, dtype=np.int16).reshape(2, 3), "e": np.float32(1.5), "f": np.dtype("<f8"),
             "g": 2 ** 70, "h": frozenset({1})}
    for protocol in (0, 2, 4, 5):
        back = safe_load(pickle.dumps(plain, protocol=protocol), "data")
        assert back.keys() == plain.keys()
        for key in "abcfgh":
            assert back[key] == plain[key]
        assert back["d"].dtype == np.int16 and np.array_equal(back["d"], plain["d"])
        assert back["e"] == np.float32(1.5) and back["e"].dtype == np.float32


@pytest.mark.parametrize("kind", ["csr", "csc", "coo"])
def test_sparse_matrices_become_placeholders_and_convert(kind):
    rng = np.random.default_rng(0)
    dense = (rng.random((7, 5)) < 0.3) * rng.integers(1, 9, (7, 5)).astype(np.float64)
    matrix = getattr(sp, f"{kind}_matrix")(dense)
    data = pickle.dumps(matrix, protocol=2)
    modules = {arg.split()[0] for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"}
    assert f"scipy.sparse._{kind}" in modules  # current SciPy's module name (old files: scipy.sparse.{kind})
    holder = safe_load(data, "features")
    assert isinstance(holder, PickledSparse) and not isinstance(holder, sp.spmatrix) and holder.format == kind
    csr = to_csr(holder, "features", "(in memory)")
    assert isinstance(csr, sp.csr_matrix) and csr.dtype == np.float32 and csr.has_canonical_format
    np.testing.assert_array_equal(csr.toarray(), dense.astype(np.float32))


def test_old_scipy_module_name_is_accepted():
    """Files pickled with SciPy < 1.8 name ``scipy.sparse.csr.csr_matrix``: rewrite the name in a current pickle."""
    matrix = sp.csr_matrix(np.eye(3))
    data = pickle.dumps(matrix, protocol=2).replace(b"scipy.sparse._csr", b"scipy.sparse.csr")
    assert b"scipy.sparse.csr\ncsr_matrix" in data
    np.testing.assert_array_equal(to_csr(safe_load(data, "x"), "x", "-").toarray(), np.eye(3))


def test_malformed_sparse_state_and_wrong_objects():
    holder = safe_load(pickle.dumps(sp.csr_matrix(np.eye(3)), protocol=2), "x")
    holder.state["indices"] = np.array([0, 1, 7], dtype=np.int32)  # column 7 outside a 3-column matrix
    with pytest.raises(DataError) as info:
        to_csr(holder, "Planetoid file", "ind.cora.x")
    assert "ind.cora.x holds a malformed sparse csr matrix" in _one_line(info)
    holder.state.pop("indices")
    with pytest.raises(DataError, match="malformed sparse csr matrix .*KeyError"):
        to_csr(holder, "Planetoid file", "ind.cora.x")
    with pytest.raises(DataError, match="holds a list, expected a SciPy sparse matrix"):
        to_csr([1], "Planetoid file", "ind.cora.x")


def test_truncated_and_missing_files(tmp_path):
    path = tmp_path / "t.pkl"
    path.write_bytes(pickle.dumps(np.arange(1000), protocol=2)[:100])
    with pytest.raises(DataError) as info:
        safe_load(path, "Planetoid file")
    msg = _one_line(info)
    assert str(path) in msg and "not a readable pickle" in msg and "delete it and download it again" in msg
    with pytest.raises(DataError, match="does not exist"):
        safe_load(tmp_path / "missing.pkl", "Planetoid file")
    path.write_bytes(b"\x80\x02garbage")
    with pytest.raises(DataError, match="not a readable pickle"):
        safe_load(path, "Planetoid file")


@pytest.mark.skipif(not REAL.is_dir(), reason="real Planetoid files not available (../shared/data/real/planetoid)")
@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_real_planetoid_files_equal_plain_pickle(name):
    for ext in ("x", "y", "tx", "ty", "allx", "ally", "graph"):
        path = REAL / name / "raw" / f"ind.{name}.{ext}"
        got = safe_load(path, "Planetoid file")
        with open(path, "rb") as fh, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = pickle.load(fh, encoding="latin1")  # trusted reference copy
        if ext == "graph":
            assert type(got) is collections.defaultdict and got == want
        elif sp.issparse(want):
            csr = to_csr(got, "Planetoid file", str(path))
            assert csr.shape == want.shape and (csr != want).nnz == 0
        else:
            assert got.dtype == want.dtype and np.array_equal(got, want)
