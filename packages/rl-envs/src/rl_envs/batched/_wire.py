"""ParallelEnv's wire protocol: the command and reply bytes, and reading one framed message.

Every message's first byte names the command (parent to worker) or says ``OK``/``ERROR``
(worker to parent); the rest is the command's argument or the reply's payload. The commands
are described in :mod:`rl_envs.batched._worker`.
"""

from __future__ import annotations

import os
import struct

STEP = b"s"
STEP_AND_RESET = b"m"
RESET = b"r"
SEED = b"e"
ROLLOUT = b"o"
ROOT = b"t"
CLOSE = b"c"
OK = b"k"
ERROR = b"x"
# In the reply to STEP_AND_RESET (after OK), through shared memory: some sub-env finished and
# was reset.
RESET_DONE = b"1"


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


__all__ = [
    "CLOSE",
    "ERROR",
    "OK",
    "RESET",
    "RESET_DONE",
    "ROLLOUT",
    "ROOT",
    "SEED",
    "STEP",
    "STEP_AND_RESET",
    "read_frame",
]
