"""ember.trace(): print or record every kernel and library call as it runs (EMBER_TRACE)."""
import functools

from . import _C


class trace:  # noqa: N801  (a context manager named like a function, as torch.no_grad)
    """Records each kernel call (name, device, dtype and sizes, time) while active.

        with ember.trace():                 # lines on stderr
            model(x)
        with ember.trace("steps.json"):     # a Chrome trace file (chrome://tracing, Perfetto)
            model(x)

    Also a decorator. A GPU kernel's time is measured by waiting for it, so tracing serialises the
    GPU. The environment variable EMBER_TRACE=1 (or =file.json) traces a whole run."""

    def __init__(self, path=None):
        self.path = "" if path is None else str(path)
        self.events = 0

    def __enter__(self):
        _C._trace_start(self.path)
        return self

    def __exit__(self, *exc):
        self.events = _C._trace_stop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with trace(self.path or None):
                return fn(*args, **kwargs)
        return wrapper
