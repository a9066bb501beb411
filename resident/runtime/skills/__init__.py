"""The skills capability's services: the team library and each member's skill set, and reading skill folders."""
