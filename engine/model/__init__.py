"""The model: the GPT module, its masks and positional encodings, its weight layout, sampling and the probes
that read its attention."""
