"""Reporting: tables, figures, paired significance tests and the comparison with the papers' numbers, made from the
runs' records and outputs (``docs/results.md``)."""
