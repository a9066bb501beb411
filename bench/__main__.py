"""`python -m bench`: every benchmark briefly, one Markdown table (see bench/run_all.py)."""

from bench.run_all import main

main()
