"""Configuration: the benchmark's published configs (presets), run configs and the workflow suite."""
