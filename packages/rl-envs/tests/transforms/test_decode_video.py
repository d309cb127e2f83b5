"""VideoClipRef and DecodeVideoTransform on videos written here with PyAV (lossless FFV1, so the
decoded pixels are the written ones): frame t of a clip is the colour (10 t + k, t, 255 - t)."""

import pickle

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_envs.transforms import (
    DecodeVideoTransform,
    VideoClipRef,
    clear_video_decoder_cache,
    set_video_decoder_cache_size,
)

av = pytest.importorskip("av", reason='pip install "rl-envs[video]"')


def _write(path, frames: int, offset: int = 0) -> None:
    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=10)
        stream.width, stream.height, stream.pix_fmt = 8, 6, "bgr0"
        for t in range(frames):
            image = np.empty((6, 8, 3), np.uint8)
            image[...] = (10 * t + offset, t, 255 - t)
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def _colour(t: int, offset: int = 0) -> list[int]:
    return [10 * t + offset, t, 255 - t]


@pytest.fixture
def clip(tmp_path):
    path = tmp_path / "clip.mkv"
    _write(path, 12)
    yield path
    clear_video_decoder_cache()


def test_reference_counts_frames_and_decodes_them(clip):
    ref = VideoClipRef(clip)
    assert ref.batch_size == (12,)
    assert ref.frame_index.tolist() == list(range(12))
    assert ref.source == str(clip)
    frames = ref[2:5].decode()
    assert frames.shape == (3, 3, 6, 8)
    assert frames.dtype == torch.uint8
    assert frames[:, :, 0, 0].tolist() == [_colour(2), _colour(3), _colour(4)]
    assert (frames == frames[:, :, :1, :1]).all()  # every pixel of a frame is its colour
    assert ref[7].decode().shape == (3, 6, 8)
    assert ref[[9, 1, 9]].decode()[:, :, 0, 0].tolist() == [_colour(9), _colour(1), _colour(9)]
    assert ref.decode(dtype=torch.float32)[11, :, 0, 0].tolist() == _colour(11)


def test_reference_is_lazy_picklable_and_stacks_across_files(tmp_path, clip):
    other = tmp_path / "other.mkv"
    _write(other, 6, offset=3)
    unread = VideoClipRef(tmp_path / "absent.mkv", frame_index=torch.arange(4))
    assert unread[1:3].frame_index.tolist() == [1, 2]  # no file opened
    copy = pickle.loads(pickle.dumps(VideoClipRef(clip)[1:4]))
    assert copy.decode()[:, :, 0, 0].tolist() == [_colour(1), _colour(2), _colour(3)]
    stacked = torch.stack([VideoClipRef(clip)[0:2], VideoClipRef(other)[4:6]])
    assert stacked.batch_size == (2, 2)
    assert stacked.decode()[:, :, :, 0, 0].tolist() == [
        [_colour(0), _colour(1)],
        [_colour(4, 3), _colour(5, 3)],
    ]
    both = VideoClipRef.from_files([clip, other])
    assert both.batch_size == (18,)
    assert both[[11, 12, 17]].decode()[:, :, 0, 0].tolist() == [
        _colour(11),
        _colour(0, 3),
        _colour(5, 3),
    ]


def test_decode_transform_on_a_sampled_batch(clip):
    data = TensorDict(
        {"frame": VideoClipRef(clip), "episode": torch.zeros(12, dtype=torch.long)},
        batch_size=[12],
    )
    sample = data[torch.tensor([3, 4, 5, 10])]  # what a buffer's sample holds
    out = DecodeVideoTransform(in_keys=["frame"], out_keys=["pixels"])(sample.clone())
    assert out["pixels"][:, :, 0, 0].tolist() == [_colour(t) for t in (3, 4, 5, 10)]
    assert isinstance(out["frame"], VideoClipRef)
    in_place = DecodeVideoTransform(in_keys=["frame"], dtype=torch.float64)(sample.clone())
    assert in_place["frame"].dtype == torch.float64
    assert in_place["frame"].shape == (4, 3, 6, 8)
    # a TensorDict without the entry is left alone
    empty = DecodeVideoTransform(in_keys=["frame"])(TensorDict(a=torch.zeros(2), batch_size=[2]))
    assert set(empty.keys()) == {"a"}


def test_decoder_cache_size_and_clear(clip):
    set_video_decoder_cache_size(1)
    try:
        assert VideoClipRef(clip)[0].decode()[:, 0, 0].tolist() == _colour(0)
        clear_video_decoder_cache()
        assert VideoClipRef(clip)[5].decode()[:, 0, 0].tolist() == _colour(5)
    finally:
        set_video_decoder_cache_size(8)
    with pytest.raises(ValueError, match="maxsize must be an integer >= 1, got 0"):
        set_video_decoder_cache_size(0)


def test_bad_input_is_named(tmp_path, clip):
    with pytest.raises(TypeError, match="in_keys is required"):
        DecodeVideoTransform()
    with pytest.raises(TypeError, match="entry 'frame' must hold a VideoClipRef, got Tensor"):
        DecodeVideoTransform(in_keys=["frame"])(TensorDict(frame=torch.zeros(2, 3), batch_size=[2]))
    with pytest.raises(FileNotFoundError, match=r"absent\.mkv"):
        VideoClipRef(tmp_path / "absent.mkv")
    with pytest.raises(IndexError, match=r"frame 20 asked for, but .*clip\.mkv' has 12 frame"):
        VideoClipRef(clip, frame_index=torch.tensor([3, 20])).decode()
    with pytest.raises(TypeError, match="frame_index must be an integer tensor, got Tensor of "):
        VideoClipRef(clip, frame_index=torch.zeros(3))
    with pytest.raises(ValueError, match=r"file_id values must lie in \[0, 1\)"):
        VideoClipRef(clip, frame_index=torch.arange(2), file_id=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="frame_index is needed with several sources"):
        VideoClipRef((clip, clip))
    not_video = tmp_path / "notes.mkv"
    not_video.write_text("not a video")
    with pytest.raises(ValueError, match=r"notes\.mkv' is not a readable video"):
        VideoClipRef(not_video)
