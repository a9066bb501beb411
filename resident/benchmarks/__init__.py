"""Benchmarks that ship with the runtime (`resident bench ...`); comparisons with baselines live in bench/."""
