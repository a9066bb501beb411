"""Pure rules of coordination: grants (non-amplification) and run plans."""
