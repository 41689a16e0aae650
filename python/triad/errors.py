"""Exceptions of the triad package.

Every error the C++ library reports (``triad::Error``, ir/Diagnostics.h) arrives as the
:class:`Error` subclass of its kind, with the CLI's message. ``kind`` is the CLI's name of the
kind ("invalid model", "unsupported", ...), ``exit_code`` the exit code ``triad`` would return,
and ``node`` and ``op_type`` name the ONNX node at fault when the message names one (the
library names nodes as ``node 'NAME' (OpType)`` and FPGA layers as ``layer 'NAME' (OpType)``;
for a model with one unsupported op type, its first node).
"""

import builtins
import re

__all__ = [
    "Error",
    "UsageError",
    "IoError",
    "InvalidModelError",
    "UnsupportedError",
    "RunError",
    "ResourceError",
    "InternalError",
]

_NODE = re.compile(r"\b(?:node|layer) '([^']*)' \(([A-Za-z_][\w.]*)")
# The importer's summary of unsupported ops, one line per op:
# "  OpType (domain ai.onnx, version 22 at opset 23): 2 nodes ('a', 'b')" (the parenthesis is
# optional and holds the op's domain and ONNX version).
_UNSUPPORTED = re.compile(r"^  ([A-Za-z_][\w.]*)(?: \([^\n]*?\))?: \d+ nodes? \('([^']*)'", re.M)


class Error(Exception):
    """Base of every triad error: ``kind``, ``exit_code``, ``node`` and ``op_type``."""

    kind = None
    exit_code = None

    def __init__(self, message):
        super().__init__(message)
        self.message = message
        match = _NODE.search(message)
        self.node = match.group(1) if match else None
        self.op_type = match.group(2) if match else None
        ops = _UNSUPPORTED.findall(message)
        if not match and len(ops) == 1:  # one unsupported op type: it and its first node
            self.op_type, self.node = ops[0]


class UsageError(Error, ValueError):
    """A bad argument or option value (the CLI's usage error, exit 2)."""

    kind, exit_code = "usage error", 2


class IoError(Error, OSError):
    """A file cannot be read or written (exit 3)."""

    kind, exit_code = "i/o error", 3


class InvalidModelError(Error):
    """A malformed model: truncated, cycles, dangling inputs, wrong types (exit 4)."""

    kind, exit_code = "invalid model", 4


class UnsupportedError(Error):
    """Valid ONNX that Triad does not handle: op, attribute, opset, dtype (exit 5)."""

    kind, exit_code = "unsupported", 5


class RunError(Error, builtins.RuntimeError):
    """ErrorKind::Runtime: a valid model, but inputs that do not fit it (exit 6)."""

    kind, exit_code = "run-time error", 6


class ResourceError(Error, MemoryError):
    """The model or its inputs need more memory than a run may use (exit 7)."""

    kind, exit_code = "resource limit", 7


class InternalError(Error):
    """A bug in Triad (exit 70)."""

    kind, exit_code = "internal error", 70


_BY_KIND = {c.kind: c for c in (UsageError, IoError, InvalidModelError, UnsupportedError,
                                RunError, ResourceError, InternalError)}


def _make(kind, message):
    """The exception for a C++ error of ``kind`` (called by the extension module)."""
    return _BY_KIND.get(kind, InternalError)(message)
