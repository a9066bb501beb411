"""Small hosts of the runtime, runnable as scripts (`python examples/NAME.py`) and tested in `tests/`."""
