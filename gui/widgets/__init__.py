"""Reusable pieces the panes are built from: forms, plots, the block diagram, the banner, dialogs."""
