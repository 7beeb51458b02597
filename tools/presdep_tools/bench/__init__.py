"""Benchmarks (``poe bench``): measured in one run, reported as ratios, written to files."""
