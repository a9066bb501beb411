"""The `resident` command line: a thin shell over `resident.Runtime` (see `resident.cli.main`)."""
