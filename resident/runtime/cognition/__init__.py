"""The cognition service (`service`) and its bridge to an independent Cognition service (`bridge`)."""
