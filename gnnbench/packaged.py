"""Where the Snakemake workflow and the paper suites are, in an installed gnnbench or in the repository checkout.

The checkout keeps them at ``workflow/`` (``workflow/Snakefile``, the rules, scripts, report captions, profiles) and
``config/suites/*.yaml``; a built package (a wheel, ``pip install .``) carries the same files as
``gnnbench/_workflow/`` and ``gnnbench/_suites/`` (``pyproject.toml`` maps the folders), so that ``gnnbench run`` works
from any folder with nothing but the installed package. An editable install reads the checkout's folders.
"""

from __future__ import annotations

from pathlib import Path

from gnnbench.errors import ConfigError

PACKAGE_DIR = Path(__file__).resolve().parent
# (installed, checkout) locations of each folder
_WORKFLOW = (PACKAGE_DIR / "_workflow", PACKAGE_DIR.parent / "workflow")
_SUITES = (PACKAGE_DIR / "_suites", PACKAGE_DIR.parent / "config" / "suites")
SUITE_SUFFIXES = (".yaml", ".yml")


def workflow_dir() -> Path:
    """The folder holding the workflow's ``Snakefile``."""
    for folder in _WORKFLOW:
        if (folder / "Snakefile").is_file():
            return folder
    raise ConfigError(f"the gnnbench workflow is missing from {PACKAGE_DIR} (no _workflow/Snakefile); reinstall "
                      "gnnbench")


def snakefile() -> Path:
    """The workflow's Snakefile."""
    return workflow_dir() / "Snakefile"


def profile_dir(name: str) -> Path | None:
    """The workflow's Snakemake profile ``name`` (``local``, ``slurm``), or None where it has none."""
    folder = workflow_dir() / "profiles" / name
    return folder if (folder / "config.yaml").is_file() else None


def suites_dir() -> Path:
    """The folder of the paper suites (``benchmarking-gnns.yaml``, ``pitfalls.yaml``, ...)."""
    for folder in _SUITES:
        if folder.is_dir() and any(folder.glob("*.yaml")):
            return folder
    raise ConfigError(f"the paper suites are missing from {PACKAGE_DIR} (no _suites/*.yaml); reinstall gnnbench")


def paper_suites() -> dict[str, Path]:
    """Name (the file's stem, e.g. ``pitfalls``) -> file of every paper suite that ships with gnnbench."""
    return {path.stem: path for path in sorted(suites_dir().glob("*.yaml"), key=lambda p: p.stem)}


def paper_suite(name: str, where: str) -> Path:
    """The shipped paper suite called ``name``; an unknown name is a one-line ConfigError at ``where``."""
    suites = paper_suites()
    if name not in suites:
        raise ConfigError(f"{where}: no paper suite {name!r}; known: {', '.join(suites)} (or give the path of a suite "
                          "file, ending in .yaml)")
    return suites[name]


def default_suite(basedir: str | Path) -> Path | None:
    """The default suite of the workflow in ``basedir``: the checkout's ``config/config.yaml`` beside ``workflow/``.
    None for an installed package (``gnnbench/_workflow``), which has no default: a suite must be given."""
    root = Path(basedir).resolve().parent
    candidate = root / "config" / "config.yaml"
    if (root / "__init__.py").is_file() or not candidate.is_file():  # root is the gnnbench package itself
        return None
    return candidate
