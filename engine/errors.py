"""The one exception type a user's mistake raises: the CLI prints its message as one line, the GUI as a
banner; anything else is a bug and keeps its traceback."""


class UserError(Exception):
    """Bad input from the user (config, corpus, run directory, checkpoint, device...)."""
