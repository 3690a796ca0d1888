"""Figures and data written to files: exports through matplotlib, overlaid run curves (also as TikZ),
smoothing, formula layout and the options every figure export reads."""
