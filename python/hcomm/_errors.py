"""hcomm's errors: one class per status code of hcomm/status_codes.h, each carrying .code and
the library's message (which says what to do)."""

import builtins


class Error(RuntimeError):
    """Base of every hcomm error; `code` is the HCOMM_ERR_* number."""

    code = 0

    def __init__(self, message=""):
        super().__init__(message)


class InvalidArgumentError(Error, ValueError):
    code = 1


class NoDeviceError(Error):
    code = 2


class OutOfMemoryError(Error, MemoryError):
    code = 3


class MmapError(Error):
    code = 4


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 - the seeds' name
    code = 5


class PeerLostError(Error, ConnectionError):
    code = 6


class TransportError(Error, ConnectionError):
    code = 7


class AbortedError(Error):
    code = 8


class InternalError(Error):
    code = 9


BY_CODE = {cls.code: cls for cls in (InvalidArgumentError, NoDeviceError, OutOfMemoryError,
                                     MmapError, TimeoutError, PeerLostError, TransportError,
                                     AbortedError, InternalError)}
