"""gosim's exception types (pure Python, so that they exist without the compiled module).

The extension module gosim._core raises these for the C++ errors of the same
names (python/src/module.cc), with the command line's one-line message;
gosim.torch raises ExportError for models it cannot export and warns with
ExportWarning.
"""


class Error(Exception):
    """Base of every gosim error; the message is one line (where: what (how to fix))."""


class ConfigError(Error):
    """A configuration, option or argument is invalid."""


class GraphError(Error):
    """A graph file or graph is invalid."""


class TraceError(Error):
    """A profiler trace cannot be read or used."""


class DecisionError(Error):
    """A decision (placement, priorities, fusion) does not fit the graph and cluster."""


class StateError(Error):
    """An operation is not possible in the current state (e.g. a missing plugin entry)."""


class IoError(Error, OSError):
    """A file could not be read or written."""


class ExportError(Error):
    """gosim.torch cannot export a model (e.g. data-dependent control flow)."""


class ExportWarning(UserWarning):
    """gosim.torch exported a model, but part of the graph holds only for the example inputs."""


for _type in (Error, ConfigError, GraphError, TraceError, DecisionError, StateError, IoError, ExportError,
              ExportWarning):
    _type.__module__ = "gosim"
del _type
