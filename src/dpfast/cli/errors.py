"""Errors of the command line: the one-line error a command reports (exit code 2), an
optional dependency's absence, and the text of an exception without the data it may quote."""
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["CLIError", "NOT_SHOWN", "optional", "os_reason", "message"]

# Error messages name a record's line, never its value: the records are what the release
# protects, and messages end up in logs.
NOT_SHOWN = "(Values are not shown: they are the records being released.)"


class CLIError(ValueError):
    """A problem with the command's arguments or input: reported as one line, exit code 2."""


def optional(module: str, package: str, purpose: str) -> "ModuleType":
    """Import an optional dependency, or fail with the pip command that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise CLIError(f"{purpose} needs {package}, which is not installed: "
                       f"pip install {package}") from None


def os_reason(exc: OSError) -> str:
    """The system's reason for an OSError ("Permission denied"), without the path it names
    (the message names the file by its option)."""
    return exc.strerror or message(exc)


def message(exc: BaseException) -> str:
    """An exception's message, or its name when it has none (``MemoryError()``)."""
    return str(exc) or type(exc).__name__
