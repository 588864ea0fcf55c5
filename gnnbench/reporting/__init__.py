"""Reporting: per-dataset result tables from the runs' metrics files."""
