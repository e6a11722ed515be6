"""The one exception the CLI turns into a clear message and exit status 2."""


class LieError(Exception):
    """Bad input (config, data row, model output): the message names the file, key or row."""
