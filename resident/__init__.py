"""resident: a local, supervised actor runtime that keeps AI team members alive across sessions."""
