"""hcomm.Stream: operations started asynchronously, in order, overlapping with Python code."""

import threading

_current = threading.local()


def current():
    """The innermost `with stream:` of this thread, or None."""
    stack = getattr(_current, "stack", None)
    return stack[-1] if stack else None


class Stream:
    """Operations issued with stream=s, or inside `with s:`, start at once, in the order they were
    issued, without waiting, and return their result object right away; Python computation goes
    on meanwhile. They may run at the same time as each other: one that reads what an earlier
    one writes must wait for it (s.synchronize(), or that operation's Work with async_op=True).
    synchronize() waits for all of them and raises the first error; leaving the `with` block
    synchronizes. A Stream belongs to the thread that uses it."""

    def __init__(self):
        self._works = []

    def __enter__(self):
        stack = getattr(_current, "stack", None)
        if stack is None:
            stack = _current.stack = []
        stack.append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        _current.stack.pop()
        if exc_type is None:
            self.synchronize()
        else:  # already failing: wait, but keep the first exception
            try:
                self.synchronize()
            except Exception:  # noqa: BLE001 - the block's exception is the one to see
                pass
        return False

    def _add(self, work):
        self._works.append(work)

    def pending(self):
        """How many operations have not completed yet."""
        return sum(1 for w in self._works if not w.is_completed())

    def synchronize(self, timeout=None):
        """Waits for every operation of the stream (each up to `timeout` seconds; None: the
        communicator's op timeout) and raises the first one's error, after all were waited."""
        works, self._works = self._works, []
        first = None
        for w in works:
            try:
                w.wait(timeout)
            except KeyboardInterrupt:
                raise
            except Exception as e:  # noqa: BLE001 - re-raised below
                if first is None:
                    first = e
        if first is not None:
            raise first
