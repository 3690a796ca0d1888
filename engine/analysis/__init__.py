"""Everything asked of a run at a saved step: RunAnalysis and its analyses (docs/design.md#data-flow)."""
