"""rl-envs' VideoClipRef stored in an rl-buffers ReplayBuffer, decoded on sampling by
DecodeVideoTransform: the buffer holds frame addresses, a sample holds the frames (a video
written here with PyAV, lossless FFV1: frame t is the colour (10 t, t, 255 - t))."""

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_buffers import ListStorage, ReplayBuffer
from rl_envs.transforms import DecodeVideoTransform, VideoClipRef, clear_video_decoder_cache

av = pytest.importorskip("av", reason='pip install "rl-envs[video]"')


def test_a_sample_of_references_is_decoded(tmp_path):
    path = tmp_path / "episode.mkv"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=10)
        stream.width, stream.height, stream.pix_fmt = 8, 6, "bgr0"
        for t in range(20):
            image = np.empty((6, 8, 3), np.uint8)
            image[...] = (10 * t, t, 255 - t)
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    data = TensorDict({"frame": VideoClipRef(path), "step": torch.arange(20)}, batch_size=[20])
    buffer = ReplayBuffer(
        storage=ListStorage(20),
        batch_size=8,
        transform=DecodeVideoTransform(in_keys=["frame"], out_keys=["pixels"]),
    )
    buffer.extend(data)
    torch.manual_seed(0)
    sample = buffer.sample()
    try:
        assert sample["pixels"].shape == (8, 3, 6, 8)
        assert sample["pixels"].dtype == torch.uint8
        step = sample["step"]
        expected = torch.stack([10 * step, step, 255 - step], -1).to(torch.uint8)
        assert torch.equal(sample["pixels"][:, :, 0, 0], expected)
    finally:
        clear_video_decoder_cache()
