"""`python -m resident.cli`: the same as the `resident` console script."""

from resident.cli.main import main

main()
