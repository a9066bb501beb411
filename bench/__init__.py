"""Benchmarks, runnable as scripts; they print figures and assert nothing."""
