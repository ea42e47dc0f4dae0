"""Statuses as exceptions, and the library's logger routed into Python's logging.

Every piola_status other than PIOLA_OK raises an Error subclass named after it
(PIOLA_ERROR_INVALID_MESH -> InvalidMeshError, ...). The message is what the library logged at
error level during the failing call (for the loaders, their "path:line: what" text), or the
status's description when nothing was logged.
"""
import logging

from ._piola import ffi, lib

logger = logging.getLogger("piola")

_PY_LEVELS = {
    lib.PIOLA_LOG_ERROR: logging.ERROR,
    lib.PIOLA_LOG_WARNING: logging.WARNING,
    lib.PIOLA_LOG_INFO: logging.INFO,
    lib.PIOLA_LOG_DEBUG: logging.DEBUG,
}


class Error(Exception):
    """A Piola call failed. `status` is the piola_status name ("PIOLA_ERROR_INVALID_MESH"),
    `code` its value, the message the library's logged reason."""

    __module__ = "piola"

    status = None
    code = None

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.code = int(status)
            self.status = _STATUS_NAMES.get(self.code, str(status))

    @property
    def message(self):
        return self.args[0] if self.args else ""


_STATUS_NAMES = {v: k for k, v in ffi.typeof("piola_status").relements.items()}
# Errors about the caller's values also are ValueErrors, as Python code expects.
_VALUE_ERRORS = {"INVALID_ARGUMENT", "INVALID_DEF", "COUNT_MISMATCH", "NON_FINITE",
                 "INVALID_MESH", "INVALID_MATERIAL"}
ERRORS = {}  # status value -> class


def _class_name(status_name):
    words = status_name[len("PIOLA_ERROR_"):].split("_")
    return "".join(w.capitalize() for w in words) + "Error"


for _code, _name in sorted(_STATUS_NAMES.items()):
    if _name in ("PIOLA_OK", "PIOLA_STATUS_COUNT"):
        continue
    _short = _name[len("PIOLA_ERROR_"):]
    _bases = (Error, ValueError) if _short in _VALUE_ERRORS else (Error,)
    _doc = "%s: %s." % (_name, ffi.string(lib.piola_status_string(_code)).decode())
    ERRORS[_code] = type(_class_name(_name), _bases,
                         {"__doc__": _doc, "status": _name, "code": _code,
                          "__module__": "piola"})
del _code, _name, _short, _bases, _doc


class ClosedError(ERRORS[lib.PIOLA_ERROR_INVALID_ARGUMENT]):
    """The world (or the world of a handle) was closed."""

    __module__ = "piola"


def status_string(status):
    return ffi.string(lib.piola_status_string(status)).decode()


def make_error(status, messages=()):
    """The exception for a failed status, with the logged messages as its text."""
    text = "; ".join(messages) if messages else status_string(status)
    cls = ERRORS.get(int(status), Error)
    return cls(text, status)


def fail(status, message):
    """Raises the error for `status` (a lib.PIOLA_ERROR_* value) with a message of ours, for
    input the binding rejects before calling the library (wrong array shapes)."""
    raise make_error(status, [message])


class LogSink:
    """Receives one world's (or one loader call's) messages: forwards each to the "piola"
    logger and keeps those of error level since the last clear() for the exception text."""

    __slots__ = ("errors",)

    def __init__(self):
        self.errors = []

    def emit(self, level, text):
        if level == lib.PIOLA_LOG_ERROR:
            self.errors.append(text)
        logger.log(_PY_LEVELS.get(level, logging.ERROR), "%s", text)

    def check(self, status):
        """Raises for a non-OK status; clears the messages kept."""
        if status != lib.PIOLA_OK:
            errors, self.errors = self.errors, []
            raise make_error(status, errors)
        if self.errors:
            self.errors = []

    def logger_struct(self):
        """(a piola_logger (cdata) that sends the messages here, the handle it holds): the
        caller keeps the handle alive as long as the logger may be called. The sink does not
        hold its own handle, so that it goes with its owner without waiting for the garbage
        collector."""
        handle = ffi.new_handle(self)
        log = ffi.new("piola_logger *")
        log.fn = lib.piola_py_log
        log.user_data = handle
        return log, handle


@ffi.def_extern()
def piola_py_log(level, message, user_data):
    try:
        sink = ffi.from_handle(user_data)
        sink.emit(level, ffi.string(message).decode("utf-8", "replace"))
    except Exception:  # a logger must not throw into C
        logger.exception("piola: failed to handle a log message")


@ffi.def_extern()
def piola_py_assert(condition, file, line, user_data):
    try:
        sink = ffi.from_handle(user_data)
        sink.emit(lib.PIOLA_LOG_ERROR, "API misuse: %s (%s:%d)" % (
            ffi.string(condition).decode("utf-8", "replace"),
            ffi.string(file).decode("utf-8", "replace"), line))
    except Exception:
        logger.exception("piola: failed to handle an API misuse report")
