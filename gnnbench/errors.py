"""Errors a user can cause and fix.

Every message is one line that names the file or key, says what was expected and what to do. The CLI and
the workflow scripts print such errors without a traceback and exit non-zero.
"""


class GnnbenchError(Exception):
    """Base class for user-fixable errors (bad config, missing or corrupt file, unknown name)."""


class ConfigError(GnnbenchError):
    """A configuration value, key or name is wrong."""


class DataError(GnnbenchError):
    """A data file (dataset, split, features, checkpoint) is missing, corrupt or inconsistent."""


# Ctrl-C (KeyboardInterrupt) in the CLI or a workflow job: one line and exit status 130 (128 + SIGINT)
INTERRUPTED = ("interrupted (Ctrl-C); finished outputs are kept (every file is written atomically): run the command "
               "again to continue, training resumes from its last checkpoint")
