"""`resident run`: playing a coordination plan on a runtime, with live progress and invariants."""
