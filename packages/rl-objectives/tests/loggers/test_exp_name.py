"""generate_exp_name: TorchRL's layout, a random id per call and the local date now."""

import re
from datetime import datetime, timedelta

import pytest

from rl_objectives.loggers import generate_exp_name


def test_layout_id_and_date():
    before = datetime.now().replace(microsecond=0)
    name = generate_exp_name("SAC", "cheetah")
    after = datetime.now()
    match = re.fullmatch(r"SAC_cheetah_([0-9a-f]{8})_(\d\d_\d\d_\d\d-\d\d_\d\d_\d\d)", name)
    assert match is not None, name
    stamp = datetime.strptime(match.group(2), "%y_%m_%d-%H_%M_%S")
    assert before <= stamp <= after + timedelta(seconds=1)
    assert generate_exp_name("SAC", "cheetah") != name  # a new id each call


def test_arguments_must_be_strings():
    with pytest.raises(TypeError, match="experiment_name must be a string, got int"):
        generate_exp_name("SAC", 3)
