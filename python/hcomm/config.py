"""hcomm.config: the seeds' configuration fields, mapped onto the library's (Config, HCOMM_*).
Fields apply to communicators created after they are set; `enable_fp16_compress` and
`compression` also change the default communicator's codec at once."""

from ._hcomm import CompressionType, _parse_compression


def compression_type(kind):
    """A CompressionType, or its HCOMM_COMPRESSION name in any case ("fp16", "FP16", ...)."""
    if isinstance(kind, CompressionType):
        return kind
    if isinstance(kind, str):
        return _parse_compression(kind.lower())  # the library's parser: ValueError if unknown
    raise ValueError(f"compression {kind!r} is none of none, fp16, bf16, delta, zstd, auto")


class Config:
    """compression (HCOMM_COMPRESSION), comp_threshold (HCOMM_COMP_THRESHOLD, bytes; the seeds'
    1024), enable_fp16_compress (compression = FP16 or NONE), error_feedback
    (HCOMM_COMP_ERROR_FEEDBACK), algo (HCOMM_ALGO), transport (HCOMM_TRANSPORT), timeout
    (HCOMM_TIMEOUT_MS, in seconds). None: the environment's value."""

    _FIELDS = ("compression", "comp_threshold", "error_feedback", "algo", "transport", "timeout")

    def __init__(self):
        for f in self._FIELDS:
            object.__setattr__(self, f, None)

    def __setattr__(self, name, value):
        if name == "enable_fp16_compress":
            return self.__setattr__("compression",
                                    CompressionType.FP16 if value else CompressionType.NONE)
        if name not in self._FIELDS:
            raise AttributeError(f"hcomm.config has no field {name!r}: "
                                 f"{', '.join(self._FIELDS + ('enable_fp16_compress',))}")
        if name == "compression" and value is not None:
            value = compression_type(value)
            from . import _apply_compression  # the default communicator follows at once
            _apply_compression(value)
        if name == "comp_threshold" and value is not None and (int(value) < 0 or
                                                                int(value) > (1 << 30)):
            raise ValueError("comp_threshold is a byte count from 0 to 1G")
        object.__setattr__(self, name, value)

    @property
    def enable_fp16_compress(self):
        return self.compression == CompressionType.FP16

    def _options(self):
        return {f: getattr(self, f) for f in self._FIELDS if getattr(self, f) is not None}


config = Config()
