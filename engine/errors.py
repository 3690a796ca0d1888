"""The one exception type a user's mistake raises: the CLI prints its message as one line, the GUI as a
banner; anything else is a bug and keeps its traceback."""


class UserError(Exception):
    """Bad input from the user (config, corpus, run directory, checkpoint, device...)."""


def shown(value) -> str:
    """A value read from someone's file, as a message names it: its repr when it is a short scalar, else
    its type (a list nested 100,000 deep has no repr; a megabyte string has no place in one line)."""
    if isinstance(value, (bool, int, float, str, type(None))):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "…"
    return f"a {type(value).__name__}"
