"""The configs: the dataclasses, the one table of their fields, what a config may ask of the machine, the
presets and the vocabulary a corpus gives (docs/config-fields.md)."""
