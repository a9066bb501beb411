"""The memory capability's services: a member's remember/recall/forget, admission in the caller's thread, and
turning memory on and off."""
