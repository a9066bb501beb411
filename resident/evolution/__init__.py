"""Versioned evolution, as pure rules: weeks (`weeks`), the weekly report (`report`), printable text (`text`).

The submodules are imported by name: skills and principles use `text`, and `report` uses skills.
"""

__all__: list[str] = []
