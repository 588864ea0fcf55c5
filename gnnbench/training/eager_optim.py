"""torch's Adam and SGD, without importing ``torch._dynamo`` in a process that compiles nothing.

Why: torch.optim keeps its methods out of ``torch.compile`` graphs (``torch._disable_dynamo`` on ``add_param_group``,
``zero_grad``, ``state_dict``, ``load_state_dict`` and the update functions, and a ``_use_grad`` wrapper around
``step`` that inserts graph breaks). Each imports ``torch._dynamo`` on first use, which takes longer than importing
torch itself (2–3 s on one core): a large part of a short training job, paid by every job process
(``benchmarks/job_startup.py`` measures it). While ``torch._dynamo`` is not imported nothing in the process can be
compiling, so those wrappers have nothing to do: :class:`Adam` and :class:`SGD` here run torch's own ``step`` body
under the same grad mode, and the wrapped methods call the function they wrap. The arithmetic is torch's own
(the same kernels, fused or not). Once anything imports ``torch._dynamo``, every call goes through torch's wrappers
again. Where torch's internals are not what this expects (another torch version), nothing is changed and torch
imports its compiler as usual.
"""

from __future__ import annotations

import inspect
import sys

import torch
from torch.optim import adam as _adam
from torch.optim import sgd as _sgd

_DYNAMO = "torch._dynamo"
_CACHE = "__dynamo_disable"  # where torch._disable_dynamo caches the disabled function on the function it wraps
try:
    from torch._compile import _disable_dynamo

    _DISABLER_CODE = _disable_dynamo(lambda: None).__code__
except (ImportError, AttributeError, TypeError):  # another torch: nothing to defer
    _DISABLER_CODE = None


def _lazily_disabled(fn):
    """What ``torch._disable_dynamo`` caches for ``fn``: ``fn`` itself while no compiler is loaded, torch's disabled
    form from the first call after."""
    def call(*args, **kwargs):
        if _DYNAMO not in sys.modules:
            return fn(*args, **kwargs)
        import torch._dynamo

        disabled = torch._dynamo.disable(fn, True, wrapping=False)
        setattr(fn, _CACHE, disabled)
        return disabled(*args, **kwargs)

    return call


def _disabler(f):
    """The ``torch._disable_dynamo`` wrapper ``f`` is or calls (an update function's fallback wrapper holds one in
    its closure); None if neither."""
    if _DISABLER_CODE is None:
        return None
    if getattr(f, "__code__", None) is _DISABLER_CODE:
        return f
    for cell in getattr(f, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if getattr(value, "__code__", None) is _DISABLER_CODE:
            return value
    return None


def _defer(f) -> bool:
    """Let the ``torch._disable_dynamo`` wrapper of ``f`` call its function without importing the compiler; False
    where there is none (nothing changed)."""
    disabler = _disabler(f)
    if disabler is None:
        return False
    fn = dict(zip(disabler.__code__.co_freevars, disabler.__closure__, strict=True))["fn"].cell_contents
    if not hasattr(fn, _CACHE):
        setattr(fn, _CACHE, _lazily_disabled(fn))
    return True


def _torch_step(cls):
    """``cls.step`` as torch defines it (without the profiling hook torch adds to a class on first use)."""
    step = cls.__dict__["step"]
    return step.__wrapped__ if getattr(step, "hooked", False) else step


def _eager(cls, update):
    torch_step = _torch_step(cls)
    body = inspect.unwrap(torch_step)  # the step's own code, inside _use_grad
    if body is torch_step or not all(_defer(getattr(torch.optim.Optimizer, name)) for name in (
            "add_param_group", "zero_grad", "state_dict", "load_state_dict")):
        return cls  # not the torch this was written against: torch's class as it is
    _defer(update)  # Adam's update function has a wrapper of its own, SGD's none

    def step(self, closure=None):
        if _DYNAMO in sys.modules:
            return torch_step(self, closure)
        with torch.set_grad_enabled(self.defaults["differentiable"]):  # what _use_grad does besides graph breaks
            return body(self, closure)

    step.__doc__ = torch_step.__doc__
    return type(cls.__name__, (cls,), {"step": step, "__module__": __name__, "__doc__": cls.__doc__})


Adam = _eager(torch.optim.Adam, _adam.adam)
SGD = _eager(torch.optim.SGD, _sgd.sgd)
