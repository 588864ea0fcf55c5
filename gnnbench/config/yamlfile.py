"""Reading the YAML files a user writes (suites, presets): a key given twice in one mapping is an error.

YAML parsers, PyYAML and Snakemake's ``--configfile`` loader among them, keep the last of two equal keys in a
mapping without a word, so a suite with two ``seeds:`` lines or two models of one label silently loses one of
them. :func:`load_yaml` reads like ``yaml.safe_load`` but refuses such a file, naming it, the key and both lines
(and both columns when the two share a line, as in ``{a: 1, a: 2}``).
A merge key (``<<: *anchor``) followed by a key it also brings is not a duplicate: overriding merged values is
what merge keys are for.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from gnnbench.errors import ConfigError

_MERGE = "tag:yaml.org,2002:merge"


class _DuplicateKey(Exception):
    """A key given twice: where each is, as (line, column), both counted from 1."""

    def __init__(self, key: object, first: tuple[int, int], second: tuple[int, int]) -> None:
        super().__init__(key, first, second)
        self.key, self.first, self.second = key, first, second

    @property
    def where(self) -> str:
        """``lines 5 and 7``, or ``line 2, columns 5 and 11`` for two keys on one line (a flow mapping)."""
        (line, column), (other_line, other_column) = self.first, self.second
        if line == other_line:
            return f"line {line}, columns {column} and {other_column}"
        return f"lines {line} and {other_line}"


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that raises on a key written twice in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        """The mapping of ``node``, after checking that no key (merge keys aside) appears twice in it."""
        seen: dict[object, tuple[int, int]] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = self.construct_object(key_node, deep=deep)
            place = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if key in seen:
                raise _DuplicateKey(key, seen[key], place)
            seen[key] = place
        return super().construct_mapping(node, deep=deep)


def _duplicate(source: str, exc: _DuplicateKey) -> ConfigError:
    return ConfigError(f"{source}: key {exc.key!r} is given twice in one mapping ({exc.where}), and YAML would "
                       "silently keep only the last; remove or merge one")


def parse_yaml(text: str, source: str) -> Any:
    """``text`` parsed; ``source`` (e.g. ``config file suite.yaml``) names it in the errors."""
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader subclass
    except _DuplicateKey as exc:
        raise _duplicate(source, exc) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source} is not valid YAML ({str(exc).splitlines()[0]}); fix it") from None


def load_yaml(path: str | os.PathLike, what: str = "config file") -> Any:
    """The YAML file ``path`` parsed (``what`` names it in errors: ``config file``, ``preset file``)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{what} {path} is not UTF-8 text; save it as UTF-8") from None
    return parse_yaml(text, f"{what} {path}")


def check_unique_keys(path: str | os.PathLike, what: str = "config file") -> None:
    """Refuse a file (e.g. a ``--configfile`` Snakemake has already read) that gives a key twice in one mapping;
    a file this reader cannot parse is left to the reader that accepted it (Snakemake also reads JSON)."""
    try:
        yaml.load(Path(path).read_text(encoding="utf-8"), Loader=UniqueKeyLoader)  # a SafeLoader subclass
    except _DuplicateKey as exc:
        raise _duplicate(f"{what} {path}", exc) from None
    except (yaml.YAMLError, UnicodeDecodeError):
        return  # Snakemake has read the file its own way (JSON too): its parse errors are Snakemake's to report
