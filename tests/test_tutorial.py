"""The tutorial (docs/tutorial.md) as a reader follows it: its commands, run in a project folder holding only the
example's files (examples/own-model/), print what the page shows; the files it names exist. The long run itself is
tests/test_examples.py's, which takes its commands from the same page."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = REPO_ROOT / "docs" / "tutorial.md"
EXAMPLE = REPO_ROOT / "examples" / "own-model"


def blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block of a Markdown page, in order."""
    return re.findall(r"^```(\w*)[^\n]*\n(.*?)^```", text, flags=re.S | re.M)


def tutorial_commands() -> list[str]:
    """The ``gnnbench`` command lines of the tutorial's bash blocks, without their trailing comments."""
    lines = [line.split("  #")[0].strip() for lang, body in blocks(TUTORIAL.read_text()) if lang == "bash"
             for line in body.splitlines()]
    return [line for line in lines if line.startswith("gnnbench ")]


def test_the_tutorial_shows_the_examples_files_and_runs_them():
    text = TUTORIAL.read_text()
    included = re.findall(r'--8<-- "([^"]+)"', text)
    assert {"examples/own-model/my_gnn.py", "examples/own-model/suite.yaml",
            "examples/own-model/suite-pyg-gin.yaml"} <= set(included)
    assert all((REPO_ROOT / path).is_file() for path in included)
    commands = tutorial_commands()
    # the two runs tests/test_examples.py performs, spelled as the reader types them
    assert "gnnbench run suite.yaml --cores 2" in commands
    assert "gnnbench run suite-pyg-gin.yaml --cores 2" in commands
    for command in commands:
        for word in shlex.split(command):
            if word.endswith((".yaml", ".py")) and "/" not in word and not word.startswith("my_suite"):
                assert (EXAMPLE / word).is_file(), command  # every file a command names is one the reader copied


def mixjk_count(h: int, layers: int) -> int:
    """MixJK's trainable parameters on PATTERN, from the layer shapes: PATTERN's 3 node ids embedded into
    in_channels = h; the input Linear, per layer a GINConv MLP (two Linears), its eps and a BatchNorm, the layers + 1
    mixing logits; the benchmark's node head MLPReadout h -> h/2 -> h/4 -> 2 classes."""
    encoder = 3 * h
    backbone = (h * h + h) + layers * (2 * (h * h + h) + 1 + 2 * h) + (layers + 1)
    head = (h * (h // 2) + h // 2) + ((h // 2) * (h // 4) + h // 4) + ((h // 4) * 2 + 2)
    return encoder + backbone + head


def shown_outputs() -> dict[str, str]:
    """Each ``gnnbench`` command of the tutorial that a ``text`` block follows -> that block (what it prints)."""
    found = blocks(TUTORIAL.read_text())
    return {body.strip(): found[i + 1][1].strip() for i, (lang, body) in enumerate(found[:-1])
            if lang == "bash" and body.startswith("gnnbench ") and "\n" not in body.strip()
            and found[i + 1][0] == "text"}


def test_the_commands_print_what_the_tutorial_shows(tmp_path):
    shutil.copy(EXAMPLE / "my_gnn.py", tmp_path / "my_gnn.py")
    shown = shown_outputs()
    assert {command.split()[1] for command in shown} == {"params", "fit-budget"}
    for command, output in shown.items():
        result = subprocess.run([sys.executable, "-m", "gnnbench.cli", *shlex.split(command)[1:]], cwd=tmp_path,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == output, command


def test_the_counts_the_tutorial_gives_are_mixjks_layer_shapes():
    text = TUTORIAL.read_text()
    shown = shown_outputs()
    params = next(out for command, out in shown.items() if command.startswith("gnnbench params"))
    assert int(params) == mixjk_count(64, 4) == 192 + 37_961 + 2_642
    assert "37,961" in text and "(192;" in text and "(2,642)" in text
    width, count = map(int, next(out for command, out in shown.items() if "fit-budget" in command).split())
    # the largest width within the budget: its count is at most 100,000, one more channel exceeds it
    assert count == mixjk_count(width, 4) <= 100_000 < mixjk_count(width + 1, 4)
    assert f"{mixjk_count(width + 1, 4):,}" in text
