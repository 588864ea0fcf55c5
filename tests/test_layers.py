"""The package's layers (docs/development.md#layers): imports point down, no module imports itself through others,
and gnnbench imports inside functions are the few that keep heavy optional parts (torch) out of jobs that do not
use them. Read from the source with ``ast``: nothing of the package is run, except the last test, which imports the
modules that must stay without torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gnnbench"

# The floors, bottom first: a module may import modules of its own floor or of a lower one. A module belongs to the
# floor of the longest prefix that names it (``gnnbench`` itself: the package module only).
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("ground", ("gnnbench", "gnnbench.errors", "gnnbench.io", "gnnbench.paths", "gnnbench.papers",
                "gnnbench.progress", "gnnbench.allocator", "gnnbench.packaged", "gnnbench.slurm")),
    ("data", ("gnnbench.data",)),
    ("splits and features", ("gnnbench.user_split", "gnnbench.splits", "gnnbench.features")),
    ("models", ("gnnbench.models",)),
    ("run configs", ("gnnbench.config",)),
    ("training", ("gnnbench.training",)),
    ("records and reports", ("gnnbench.records", "gnnbench.reporting", "gnnbench.tuning")),
    ("protocols", ("gnnbench.protocols",)),
    ("suite and stages", ("gnnbench.suite", "gnnbench.pipeline", "gnnbench.baselines", "gnnbench.report_jobs")),
    ("entry points", ("gnnbench.cli", "gnnbench.script_job")),
]

# Imports from a lower floor to a higher one that are allowed: (importer, imported) -> why. None today.
UPWARD: dict[tuple[str, str], str] = {}

# Circles left, as (importer, imported) of the import that closes each -> why. Each must go with its reason.
CIRCLES: dict[tuple[str, str], str] = {}

# gnnbench imports inside functions, as (importer, the module of the import statement) -> why. At most
# MAX_IN_FUNCTION statements in all: only where the import keeps a heavy optional part out of jobs that do not use it.
IN_FUNCTION: dict[tuple[str, str], str] = {
    ("gnnbench.cli", "gnnbench.models.build"): "torch: `gnnbench params` builds the model",
    ("gnnbench.cli", "gnnbench.config.budget"): "torch: `gnnbench fit-budget` builds models",
    ("gnnbench.pipeline", "gnnbench.features"): "torch: only the positional-encoding stage computes them",
    ("gnnbench.pipeline", "gnnbench.baselines"): "torch: only the TSP k-NN baseline stage scores with it",
    ("gnnbench.protocols.base", "gnnbench.models"): "torch: a model is built on stand-in data while a suite loads",
    ("gnnbench.protocols.benchmarking_gnns.plan", "gnnbench.config.budget"): "torch: a budget builds models",
    ("gnnbench.protocols.benchmarking_gnns.plan", "gnnbench.protocols.benchmarking_gnns.train"):
        "torch: the protocol object loads its jobs only when asked to train (gnnbench train)",
    ("gnnbench.protocols.fair_comparison.plan", "gnnbench.protocols.fair_comparison.train"):
        "torch: the protocol object loads its jobs only when asked to train (gnnbench train)",
    ("gnnbench.protocols.pitfalls.plan", "gnnbench.protocols.pitfalls.train"):
        "torch: the protocol object loads its jobs only when asked to train (gnnbench train)",
    ("gnnbench.protocols.heterophily.plan", "gnnbench.protocols.heterophily.train"):
        "torch: the protocol object loads its jobs only when asked to train (gnnbench train)",
}
MAX_IN_FUNCTION = 20

# Modules whose jobs do not train: importing them must not import torch (they run in the workflow's table,
# selection, split, significance and report jobs, and while a suite loads).
WITHOUT_TORCH = ("gnnbench.cli", "gnnbench.suite", "gnnbench.pipeline", "gnnbench.report_jobs", "gnnbench.splits",
                 "gnnbench.data.meta",
                 "gnnbench.data.generators", "gnnbench.records", "gnnbench.protocols.registry",
                 "gnnbench.protocols.benchmarking_gnns.tables", "gnnbench.protocols.fair_comparison.tables",
                 "gnnbench.protocols.pitfalls.tables", "gnnbench.protocols.fair_comparison.select",
                 "gnnbench.protocols.tuning",
                 "gnnbench.tuning.space", "gnnbench.tuning.sampler", "gnnbench.tuning.select", "gnnbench.tuning.record",
                 "gnnbench.protocols.heterophily.tables", "gnnbench.protocols.heterophily.select",
                 *(f"gnnbench.reporting.{p.stem}" for p in sorted((PACKAGE / "reporting").glob("*.py"))
                   if p.stem != "__init__"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _statements(name: str) -> list[tuple[str, list[str], bool]]:
    """(module the statement names, the gnnbench modules it imports, inside a function) of every gnnbench import
    statement of a module; imports under ``if TYPE_CHECKING:`` are annotations and are not counted. ``from P import
    m`` of a submodule m imports P.m."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, list[str], bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, True)
            elif isinstance(child, ast.Import):
                found.extend((a.name, [a.name], in_function) for a in child.names if a.name.startswith("gnnbench"))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative: from the package, up level - 1 packages
                    parts = package.split(".")
                    base = ".".join([*parts[:len(parts) - child.level + 1], *([base] if base else [])])
                if base.startswith("gnnbench"):
                    submodules = [f"{base}.{a.name}" for a in child.names if f"{base}.{a.name}" in MODULES]
                    found.append((base, submodules or [base], in_function))
            else:
                visit(child, in_function)

    visit(ast.parse(path.read_text(), str(path)), False)
    return found


STATEMENTS = {name: _statements(name) for name in MODULES}


def _in_functions() -> dict[tuple[str, str], int]:
    """(importer, module the statement names) -> how many such import statements stand inside functions."""
    counts: dict[tuple[str, str], int] = {}
    for name, statements in STATEMENTS.items():
        for base, _, inside in statements:
            if inside:
                counts[name, base] = counts.get((name, base), 0) + 1
    return counts


def _edges(*, in_functions: bool) -> set[tuple[str, str]]:
    """(importer, imported) of every gnnbench import, inside functions too where ``in_functions``."""
    return {(name, target) for name, statements in STATEMENTS.items() for _, targets, inside in statements
            for target in targets if target != name and target in MODULES and (in_functions or not inside)}


def floor(module: str) -> int:
    """The floor of a module: that of the longest prefix in :data:`FLOORS` that names it (or a package above it)."""
    best = None
    for number, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            named = module == prefix or (prefix != "gnnbench" and module.startswith(prefix + "."))
            if named and (best is None or len(prefix) > best[1]):
                best = (number, len(prefix))
    assert best is not None, f"{module} is on no floor: add it to FLOORS in tests/test_layers.py"
    return best[0]


def _cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def connect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, []):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_every_module_is_on_a_floor():
    for name in MODULES:
        floor(name)  # fails for a module no prefix names
    with pytest.raises(AssertionError, match="gnnbench.newroom is on no floor"):
        floor("gnnbench.newroom")
    assert floor("gnnbench.models.build") == 3 and floor("gnnbench.protocols.pitfalls.train") == 7
    assert floor("gnnbench.papers") == 0 and floor("gnnbench.data.generators.tu") == 1


def test_module_level_imports_make_no_circle():
    circles = _cycles(_edges(in_functions=False))
    assert not circles, f"modules that import each other in a loop: {circles}"


def test_no_circle_through_imports_inside_functions_either():
    """A lazy import is an arrow too: a lower module that imports a higher one when a function runs still ties
    them into one. The circles left are listed, each with the import that closes it and why it is there."""
    edges = _edges(in_functions=True)
    assert set(CIRCLES) <= edges, f"listed circles that no longer exist: {sorted(set(CIRCLES) - edges)}"
    circles = _cycles(edges - set(CIRCLES))
    assert not circles, f"modules that import each other in a loop (in functions too): {circles}"


def _upward(edges: set[tuple[str, str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, b in edges if floor(b) > floor(a))


def test_imports_point_down():
    upward = _upward(_edges(in_functions=True))
    assert upward == sorted(UPWARD), "\n".join(f"{a} (floor {FLOORS[floor(a)][0]}) imports {b} (floor "
                                               f"{FLOORS[floor(b)][0]})" for a, b in upward if (a, b) not in UPWARD)


def test_imports_inside_functions_are_the_listed_few():
    counts = _in_functions()
    assert sum(counts.values()) <= MAX_IN_FUNCTION
    unlisted, gone = sorted(set(counts) - set(IN_FUNCTION)), sorted(set(IN_FUNCTION) - set(counts))
    assert not unlisted and not gone, (f"not listed: {unlisted}; listed but gone: {gone} — import at module level, "
                                       "or list the import with the heavy part it keeps out")


def test_the_checks_catch_a_circle_and_an_upward_import():
    edges = _edges(in_functions=True) - set(CIRCLES)
    assert ("gnnbench.io", "gnnbench.errors") in edges  # io raises the errors: errors importing io closes a circle
    assert _cycles(edges | {("gnnbench.errors", "gnnbench.io")}) == [["gnnbench.errors", "gnnbench.io"]]
    assert _upward(edges | {("gnnbench.data.meta", "gnnbench.models.registry")}) == [
        ("gnnbench.data.meta", "gnnbench.models.registry")]
    assert _statements("gnnbench.pipeline")[-1][2] and not _statements("gnnbench.pipeline")[0][2]  # seen as lazy


def test_jobs_that_do_not_train_import_no_torch():
    script = f"import sys\nfor m in {list(WITHOUT_TORCH)!r}:\n    __import__(m)\nprint('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    if done.stdout.strip() != "False":  # name the modules that do, one process each
        culprits = [m for m in WITHOUT_TORCH if subprocess.run(
            [sys.executable, "-c", f"import sys, {m}; sys.exit('torch' in sys.modules)"], timeout=120).returncode]
        pytest.fail(f"importing these modules imports torch: {culprits}")
