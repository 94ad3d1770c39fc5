"""Benchmarks of every pipeline stage against the obvious way and the limit (`make bench`).

Not tests: nothing here asserts a speed. `python -m benchmarks.run --help` says how to run them;
docs/performance.md shows and explains the results.
"""
