"""Pages of the Snakemake HTML report that are not figures: the suite's parameters and the tables as HTML.

Snakemake's report shows images and HTML inline and offers every other file (CSV, YAML, Markdown) as a
download only; these helpers turn the suite and the Markdown tables into small self-contained HTML pages.

- ``suite_description``: the resolved suite as plain data — per dataset its generator, seed, parameters (the
  generator's defaults filled in) and split; per benchmark its protocol, its settings (seeds, folds, inits, ...,
  the ``set`` overrides as written) and per model the preset, architecture and the model's own overrides.
- ``write_suite``: that description as YAML and as an HTML page of two tables.
- ``markdown_to_html``: the Markdown the table rules write (headings, pipe tables, ``**bold**``, paragraphs) as
  an HTML page.
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
import re
from pathlib import Path

import yaml

from gnnbench.io import atomic_path

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 14px; margin: 1em;
       color: #1a1a1a; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; }
th, td { border: 1px solid #c8c8c8; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eef3f8; }
tr:nth-child(even) td { background: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 12px; }
h2, h3 { margin: 0.8em 0 0.3em 0; }
"""
_SKIP_FIELDS = ("dataset", "protocol", "models", "grids", "tuning")  # benchmark fields not listed as settings


def _plain(value):
    """JSON-like plain data (tuples → lists, unknown objects → str)."""
    return json.loads(json.dumps(value, default=str))


def suite_description(suite, config: dict) -> dict:
    """The suite's parameters as plain data (see the module docstring). ``suite`` is the resolved
    :class:`gnnbench.suite.Suite`, ``config`` the config it was resolved from (for the overrides as
    written)."""
    datasets = {name: {"generator": spec.generator, "seed": spec.seed, "params": spec.params, "split": spec.split}
                for name, spec in suite.datasets.items()}
    benchmarks = {}
    for name, benchmark in suite.benchmarks.items():
        entry = config["benchmarks"][name]
        settings = {f.name: getattr(benchmark, f.name) for f in dataclasses.fields(benchmark)
                    if f.name not in _SKIP_FIELDS and getattr(benchmark, f.name) not in (None, {}, [])}
        if entry.get("set"):
            settings["set"] = entry["set"]
        if entry.get("tuning"):
            settings["tuning"] = entry["tuning"]
        tuned = {search.tuned_label: label for label, search in benchmark.tuning.items()}
        models = {}
        for label, spec in benchmark.models.items():
            raw = entry["models"][label] if label not in tuned else {
                "tuned": tuned[label], "trials": benchmark.tuning[tuned[label]].trials}
            raw = {"preset": raw} if isinstance(raw, str) else raw
            model = {"preset": spec.preset, "architecture": spec.config.get("model")}
            model.update({k: v for k, v in raw.items() if k not in ("preset", "model")})
            if spec.config.get("pos_enc"):
                model["pos_enc_dim"] = spec.config.get("pos_enc_dim")
            grid = getattr(benchmark, "grids", {}).get(label)
            if grid is not None:
                model["grid_size"] = len(grid)
            models[label] = {k: v for k, v in model.items() if v is not None}
        benchmarks[name] = {"protocol": benchmark.protocol, **settings, "models": models}
    return _plain({"datasets": datasets, "benchmarks": benchmarks})


def _compact(value) -> str:
    """A mapping or list on one line (YAML flow style), a scalar as text."""
    if isinstance(value, (dict, list)):
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000).strip()
    return str(value)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def suite_html(description: dict) -> str:
    """The suite description as an HTML page: a table of datasets and a table of benchmarks with their models."""
    def code(value) -> str:
        return f"<code>{html.escape(_compact(value))}</code>" if value not in (None, {}, []) else "–"

    datasets = [[html.escape(name), html.escape(d["generator"]), str(d["seed"]), code(d["params"]), code(d["split"])]
                for name, d in description["datasets"].items()]
    benchmarks = []
    for name, b in description["benchmarks"].items():
        settings = {k: v for k, v in b.items() if k not in ("protocol", "models")}
        models = "<br>".join(f"<b>{html.escape(label)}</b>: {code(m)}" for label, m in b["models"].items())
        benchmarks.append([html.escape(name), html.escape(b["protocol"]),
                           "<br>".join(f"{html.escape(k)}: {code(v)}" for k, v in settings.items()) or "–", models])
    body = ("<h2>Datasets</h2>\n" + _table(["dataset", "generator", "seed", "params", "split"], datasets)
            + "\n<h2>Benchmarks</h2>\n" + _table(["dataset", "protocol", "settings", "models"], benchmarks))
    return _page("gnnbench suite", body)


def write_suite(description: dict, yaml_path: str | os.PathLike, html_path: str | os.PathLike) -> None:
    """Write the suite description as YAML and as an HTML page, atomically."""
    with atomic_path(yaml_path) as tmp:
        Path(tmp).write_text(yaml.safe_dump(description, sort_keys=False, allow_unicode=True))
    with atomic_path(html_path) as tmp:
        Path(tmp).write_text(suite_html(description))


_NUMBER = re.compile(r"^[-+−]?[\d.,]+( ± [\d.,]+)?( \[.*\])?$")


def _inline(text: str) -> str:
    """Escape and turn ``**x**`` into bold and ``` `x` ``` into code."""
    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def _cell(text: str) -> str:
    numeric = _NUMBER.match(text.replace("**", ""))
    return f"<td class=\"num\">{_inline(text)}</td>" if numeric else f"<td>{_inline(text)}</td>"


def _cells(row: str) -> list[str]:
    """The cells of a pipe-table row; ``\\|`` is a pipe inside a cell (Markdown's escape), not a separator."""
    return re.split(r"(?<!\\)\|", row)[1:-1]  # a row starts and ends with a separator


def markdown_to_html(markdown: str, title: str) -> str:
    """The Markdown of a gnnbench table file as an HTML page: ``#``-headings, pipe tables (header row, separator
    row, body rows; number cells right-aligned), ``**bold**`` and paragraphs. Nothing else is interpreted."""
    parts, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        line = lines[i].strip()
        if not line:
            i += 1
        elif line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")), 6)
            parts.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
            i += 1
        elif line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                block.append([c.strip().replace("\\|", "|") for c in _cells(lines[i].strip())])
                i += 1
            header, rows = block[0], [r for r in block[1:] if not all(set(c) <= set("-: ") for c in r)]
            body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)
            head = "".join(f"<th>{_inline(h)}</th>" for h in header)
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        else:
            paragraph = []
            while i < len(lines) and lines[i].strip() and not lines[i].strip().startswith(("#", "|")):
                paragraph.append(lines[i].strip())
                i += 1
            parts.append(f"<p>{_inline(' '.join(paragraph))}</p>")
    return _page(title, "\n".join(parts))


def table_html(markdown_path: str | os.PathLike, html_path: str | os.PathLike) -> None:
    """Write the HTML page of a Markdown table file, atomically."""
    markdown_path = Path(markdown_path)
    with atomic_path(html_path) as tmp:
        Path(tmp).write_text(markdown_to_html(markdown_path.read_text(), markdown_path.stem))
