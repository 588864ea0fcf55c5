"""A Griffe extension for the API reference (loaded by mkdocstrings, ``mkdocs.yml``): gnnbench's docstrings name
other objects with Sphinx roles (``:func:`build_model```, ``:class:`~gnnbench.data.batching.GraphBatch```), which
Markdown would show as literal text. Each role becomes the name in code, linked to its entry where the API
reference renders that object (an *optional* cross-reference: no link, and no warning, where it does not)."""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`(~?)([\w.]+)(\(\))?`")


def _qualified(target: str, obj: griffe.Object) -> str:
    """The full path a role's target names: absolute when it starts with ``gnnbench``, else relative to the
    object's class (a method or attribute) or module."""
    if target.startswith("gnnbench."):
        return target
    scope = obj if obj.is_class or obj.is_module else obj.parent
    while scope is not None:
        if target.split(".")[0] in scope.members or scope.is_module:
            return f"{scope.path}.{target}"
        scope = scope.parent
    return target


def convert(text: str, obj: griffe.Object) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs cross-reference around the name in code."""

    def replace(match: re.Match) -> str:
        short, target, call = match.group(1), match.group(2), match.group(3) or ""
        shown = (target.rsplit(".", 1)[-1] if short else target) + call
        identifier = html.escape(_qualified(target, obj), quote=True)
        return f'<autoref identifier="{identifier}" optional><code>{html.escape(shown)}</code></autoref>'

    return ROLE.sub(replace, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the roles of every docstring Griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Called for every object (module, class, function, attribute) once it is loaded."""
        if obj.docstring is not None and ":`" in obj.docstring.value:
            obj.docstring.value = convert(obj.docstring.value, obj)
