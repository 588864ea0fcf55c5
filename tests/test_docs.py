"""The documentation (docs/, built with MkDocs): every reference a reader can meet in the code, the configs, the
workflow and the docs resolves to a document of this repository, and the site builds in strict mode.

A reference is a path ending in ``.md`` (with an optional ``#anchor``), e.g.
``docs/protocols/pitfalls.md#departures-from-the-released-code``: it must name an existing file and, when an anchor is
given, a heading of that file (MkDocs' slugs). Citations of private notes outside the repository (the word "spec"
before a section sign or a note's file name) are refused: cite the paper (section, table, equation) and the docs page
that records gnnbench's decision instead. This file's own deliberate bad examples are not scanned."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs"
SCANNED = ["gnnbench", "tests", "config", "workflow", "benchmarks", "examples", "tools", "docs", ".ci"]
SUFFIXES = {".py", ".smk", ".yaml", ".yml", ".md", ".rst", ".csv", ".toml", ".txt", ""}
# a path-like token ending in .md, optionally with an anchor; the character before it must not be part of a path
MD_REF = re.compile(r"(?<![\w./${}*-])((?:\.{1,2}/)*[\w][\w./-]*\.md)(?![\w])(#[\w-]+)?")
# what the workflow writes is not a document: results/tables/CSL.md, a dataset's table named alone (CSBM.md)
OUTPUT = re.compile(r"^results/|^[A-Z0-9][A-Z0-9_-]*\.md$")
OUTSIDE = re.compile(r"(?i)\bthe spec\b|\bspec's\b|\bspec\s*§|\bspec\s+[\w-]+\.md|[\[(]spec[\s:]|\bspecs?/[\w-]+\.md")
MODULE_DOCS = ["gnnbench.models.plugins", "gnnbench.models.adapters", "gnnbench.models.base",
               "gnnbench.models.registry", "gnnbench.models.build", "gnnbench.protocols", "gnnbench.protocols.registry",
               "gnnbench.protocols.base", "gnnbench.protocols.benchmarking_gnns",
               "gnnbench.protocols.pitfalls", "gnnbench.protocols.fair_comparison", "gnnbench.data.store",
               "gnnbench.cli", "gnnbench.training.engine", "gnnbench.records", "gnnbench.tuning.space",
               "gnnbench.tuning.sampler", "gnnbench.tuning.pruning", "gnnbench.tuning.select", "gnnbench.tuning.record"]


def scanned_files() -> list[Path]:
    files = []
    for top in SCANNED:
        for path in sorted((REPO_ROOT / top).rglob("*")):
            if path.is_file() and (path.suffix in SUFFIXES or path.name == "Snakefile") \
                    and "__pycache__" not in path.parts and "expected" not in path.parts:
                files.append(path)
    files = [path for path in files if path != Path(__file__).resolve()]
    return files + [REPO_ROOT / "README.md", REPO_ROOT / "mkdocs.yml", REPO_ROOT / "pyproject.toml"]


def slugify(text: str) -> str:
    """MkDocs' default heading id (Python-Markdown's toc ``slugify``), written out here so that the test does not
    trust the code it checks."""
    text = re.sub(r"\{[^}]*\}\s*$", "", text)  # attr_list
    text = re.sub(r"`|\*|\[|\]\([^)]*\)", "", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The heading ids of a Markdown page (duplicates get MkDocs' ``_1``, ``_2`` suffixes), outside code blocks."""
    ids: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            custom = re.search(r"\{[^}]*#([\w-]+)[^}]*\}\s*$", match.group(1))
            slug = custom.group(1) if custom else slugify(match.group(1))
            base, n = slug, 0
            while slug in ids:
                n += 1
                slug = f"{base}_{n}"
            ids.add(slug)
    ids.update(re.findall(r"<a (?:id|name)=\"([\w-]+)\"", page.read_text(encoding="utf-8")))
    return ids


def resolve(ref: str, source: Path) -> Path | None:
    """The file a reference names: relative to the citing file's folder, to the repository root or to docs/."""
    for base in (source.parent, REPO_ROOT, DOCS):
        candidate = (base / ref).resolve()
        if candidate.is_file() and REPO_ROOT in candidate.parents:
            return candidate
    return None


def broken_references(files: list[Path]) -> list[str]:
    broken = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            where = f"{path.relative_to(REPO_ROOT) if REPO_ROOT in path.parents else path.name}:{number}"
            if OUTSIDE.search(line):
                broken.append(f"{where}: cites a note outside the repository: {line.strip()[:100]}")
            for match in MD_REF.finditer(line):
                ref, anchor = match.group(1), match.group(2)
                if OUTPUT.match(ref) and ref != "README.md":
                    continue
                # a bare file name is a reference when it is cited (a section sign after it, "see" before it, an
                # anchor, a Markdown link); otherwise it names a file the code writes (out.md, table.md)
                cited = (anchor or line[match.end():].lstrip().startswith("§")
                         or line[:match.start()].endswith(("see ", "](")))
                if "/" not in ref and ref != "README.md" and not cited:
                    continue
                if re.match(r"https?:|www\.", line[max(0, match.start() - 60):match.start()].split()[-1:][0]
                            if line[:match.start()].split() else ""):
                    continue  # part of a URL
                target = resolve(ref, path)
                if target is None:
                    broken.append(f"{where}: {ref} is not a file of the repository")
                elif anchor and anchor[1:] not in anchors(target):
                    broken.append(f"{where}: {ref}{anchor}: no such heading in {target.relative_to(REPO_ROOT)}")
    return broken


def test_the_reference_check_finds_what_it_must(tmp_path):
    """The checker itself, on made-up lines: a missing page, a missing anchor and a citation of the old notes."""
    page = DOCS / "getting-started.md"
    good = next(iter(sorted(anchors(page))))
    probe = tmp_path / "probe.py"
    note = "spec"  # spelled apart so that a grep for citations of the notes does not find this file's examples
    probe.write_text(f"# docs/getting-started.md#{good}\n# docs/no-such-page.md\n# docs/getting-started.md#nope\n"
                     f"# {note} §2.4\n# see p2-pitfalls.md\n# the {note}'s choice\n"
                     "# README.md results/tables/CSL.md `{d}_x.md` raw.md5 out.md\n")
    found = broken_references([probe])
    assert [line.split(":")[1] for line in found] == ["2", "3", "4", "5", "6"], found
    assert slugify("Departures from the released code") == "departures-from-the-released-code"
    assert slugify("`stack`, `seeds_per_job` and GPUs") == "stack-seeds_per_job-and-gpus"


def test_every_reference_resolves_to_a_document_of_the_repository():
    broken = broken_references(scanned_files())
    assert not broken, f"{len(broken)} references do not resolve:\n" + "\n".join(broken[:60])


def public_members(module) -> list[tuple[str, object]]:
    """Public functions and classes defined in ``module`` and the public methods and properties its classes define."""
    found = []
    for name, value in vars(module).items():
        if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(value) or inspect.isclass(value):
            found.append((name, value))
        if inspect.isclass(value):
            for attr, member in vars(value).items():
                if attr.startswith("_"):
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if inspect.isfunction(member) or isinstance(member, property):
                    found.append((f"{name}.{attr}", member))
    return found


@pytest.mark.parametrize("module_name", MODULE_DOCS)
def test_the_public_interface_has_docstrings(module_name):
    """The model contract, the protocols, the store, the engine, the records and the CLI: every public class,
    function, method and property says what it is (its own docstring, not an inherited one)."""
    module = importlib.import_module(module_name)
    assert module.__doc__ and module.__doc__.strip()
    missing = [name for name, member in public_members(module)
               if not (member.__doc__ or "").strip() or (inspect.isclass(member) and "__doc__" not in vars(member))]
    assert not missing, f"{module_name}: no docstring for {', '.join(missing)}"


def test_the_site_builds_in_strict_mode(tmp_path):
    """``mkdocs build --strict``: a broken link, a page outside the nav, an unknown anchor or an API reference that
    does not resolve fails the build. The docs dependencies come with the test extra; CI sets
    GNNBENCH_REQUIRE_DOCS=1 so that a missing MkDocs is a failure there, not a skip."""
    if shutil.which("mkdocs") is None and importlib.util.find_spec("mkdocs") is None:
        if os.environ.get("GNNBENCH_REQUIRE_DOCS") == "1":
            pytest.fail("mkdocs is not installed: pip install -e '.[test]'")
        pytest.skip("mkdocs is not installed (pip install -e '.[test]')")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=REPO_ROOT, capture_output=True, text=True,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-4000:]
    for page in ("index.html", "protocols/pitfalls/index.html", "tutorial/index.html", "api/models/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
