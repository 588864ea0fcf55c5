"""Errors a user can cause and fix.

Every message is one line that names the file or key, says what was expected and what to do. The CLI and
the workflow scripts print such errors without a traceback and exit non-zero.
"""

import os


class GnnbenchError(Exception):
    """Base class for user-fixable errors (bad config, missing or corrupt file, unknown name)."""


class ConfigError(GnnbenchError):
    """A configuration value, key or name is wrong."""


class DataError(GnnbenchError):
    """A data file (dataset, split, features, checkpoint) is missing, corrupt or inconsistent."""


# Ctrl-C (KeyboardInterrupt) in the CLI or a workflow job: one line and exit status 130 (128 + SIGINT)
INTERRUPTED = ("interrupted (Ctrl-C); finished outputs are kept (every file is written atomically): run the command "
               "again to continue, training resumes from its last checkpoint")


def os_error_message(exc: OSError) -> str | None:
    """One line for an operating-system error on a named path (permission denied, a file where a folder is
    expected, disk full, ...): the path, the reason and what to do; None for an error without a file name, which is
    not the user's to fix and keeps its traceback."""
    import errno

    if not isinstance(exc, OSError) or not exc.filename:
        return None
    from gnnbench.io import temporary_target  # imported here: gnnbench.io raises this module's errors

    path = str(exc.filename2 or exc.filename)  # a rename's target: the user's path
    path = str(temporary_target(path) or path)  # the temporary file beside a target: name the target
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):  # making a folder, or a path through one: name the file in the way
        blocked = file_in_the_way(path)
        if blocked is not None:
            return blocked
    hints = {
        errno.EACCES: "give yourself access to it (or its folder), or choose another location",
        errno.EPERM: "give yourself access to it (or its folder), or choose another location",
        errno.EROFS: "choose a location on a writable file system",
        errno.EISDIR: "a folder stands where a file is expected: move it away or choose another location",
        errno.ENOSPC: "free some disk space and rerun",
        errno.EDQUOT: "free some disk space and rerun",
        errno.ENAMETOOLONG: "use shorter names",
    }
    return f"{path}: {exc.strerror or type(exc).__name__}; {hints.get(exc.errno, 'check the path and rerun')}"


def file_in_the_way(folder: str | os.PathLike) -> str | None:
    """One line naming the file that stands where ``folder`` or one of its parents should be a folder (``results is
    a file, but a folder is expected there (to hold results/runs); ...``); None when nothing is in the way."""
    from pathlib import Path

    target = Path(folder)
    blocker = next((p for p in [*reversed(target.parents), target] if p.exists() and not p.is_dir()), None)
    if blocker is None:
        return None
    held = f" (to hold {folder})" if blocker != target else ""
    return f"{blocker} is a file, but a folder is expected there{held}; move it away or choose another location"
