"""Samuel coordinates for real: `python -m examples.coordinate` (see `__main__`)."""
