"""A newcomer's way in: the welcome, the sample run, the guided tour."""
