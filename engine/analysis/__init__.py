"""Everything asked of a run at a saved step: RunAnalysis and the analyses it serves (docs/design.md)."""
