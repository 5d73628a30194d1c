"""Fleet audits: many repositories at once on Dask, and the portfolio of the lot.

`portcheck.fleet.run.run_fleet` is the entry point (the `portcheck fleet` command calls
it); see docs/architecture.md for what each module owns. Nothing here is imported by
`portcheck scan`: dask is loaded only when a fleet runs.
"""
