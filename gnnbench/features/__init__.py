"""Node features derived from the graph structure (positional encodings)."""
