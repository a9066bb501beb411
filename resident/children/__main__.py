"""`python -m resident.children --parent PID --watch FD --token T -- MODULE ARGS...`: the child-side guard."""

import sys

from resident.children.guard import main

sys.exit(main(sys.argv[1:]))
