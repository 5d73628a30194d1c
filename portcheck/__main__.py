"""`python -m portcheck` runs the command line."""

from portcheck.cli import main

main()
