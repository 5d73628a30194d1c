"""`python -m portcheck` runs the command line."""

from portcheck.cli import run

run()
