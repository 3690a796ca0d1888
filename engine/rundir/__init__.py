"""The run directory (docs/run-directory.md): writing and reading it, creating one in a piece, listing, locking,
forking and keeping its weights trustworthy."""
