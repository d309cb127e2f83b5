import multiprocessing
import os

import pytest

from rl_envs.batched._wire import read_frame


@pytest.mark.skipif(os.name != "posix", reason="pipes read as file descriptors")
@pytest.mark.parametrize("size", [0, 10, 70_000, 1_000_000])
def test_read_frame_reads_what_send_bytes_sent(size):
    reader, writer = multiprocessing.Pipe(duplex=False)
    payload = os.urandom(size)
    if size > 60_000:
        # A pipe holds 64 KiB: a large message needs a reader at the same time.
        process = multiprocessing.get_context("fork").Process(
            target=writer.send_bytes, args=(payload,)
        )
        process.start()
        assert read_frame(reader.fileno()) == payload
        process.join()
    else:
        writer.send_bytes(payload)
        assert read_frame(reader.fileno()) == payload
    writer.close()
    with pytest.raises(EOFError):
        read_frame(reader.fileno())
    reader.close()
