"""The desktop app: a thin Qt layer over `engine` (which never imports this package)."""
