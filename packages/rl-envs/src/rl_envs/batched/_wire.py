"""ParallelEnv's wire protocol: reading one framed message from a worker pipe."""

from __future__ import annotations

import os
import struct


def read_frame(fd: int) -> bytes:
    """One message sent with ``Connection.send_bytes``, read from the pipe ``fd`` directly.

    A small message takes one ``read`` call instead of the two of ``Connection.recv_bytes``
    (length, then payload). The peer must not have sent a second message yet, which the
    one-reply-per-command protocol of ParallelEnv guarantees.

    Raises:
        EOFError: the other end of the pipe is closed (its process died).
    """
    data = os.read(fd, 65536)
    while len(data) < 4:
        more = os.read(fd, 4 - len(data))
        if not more:
            raise EOFError
        data += more
    (size,) = struct.unpack_from("!i", data)
    start = 4
    if size == -1:  # a message over 2 GiB: an 8-byte length follows
        while len(data) < 12:
            more = os.read(fd, 12 - len(data))
            if not more:
                raise EOFError
            data += more
        (size,) = struct.unpack_from("!Q", data, 4)
        start = 12
    end = start + size
    if len(data) >= end:
        if len(data) > end:
            raise RuntimeError(
                "ParallelEnv: two messages arrived at once on a worker pipe; the protocol "
                "expects one reply per command."
            )
        return data[start:]
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = len(data) - start
    view[:got] = data[start:]
    while got < size:
        n = os.readv(fd, [view[got:]])
        if n == 0:
            raise EOFError
        got += n
    return bytes(buffer)


__all__ = ["read_frame"]
