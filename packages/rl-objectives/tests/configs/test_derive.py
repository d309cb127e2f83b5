"""The rule that derives a typed config from a constructor: fields, types, mandatory values."""

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-objectives[hydra]"')

from typing import Any, Optional

from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from rl_objectives.configs._derive import config_of, field_type


def _target(net, rate: "float | None" = 0.5, *, steps: "int" = 3, pair=(0.9, 0.99), key=("a", "b")):
    return net, rate, steps, pair, key


def test_fields_types_and_what_is_left_out():
    cfg = config_of(_target, "TargetConfig", "x.target")
    assert OmegaConf.missing_keys(OmegaConf.structured(cfg)) == {"net"}
    node = OmegaConf.structured(cfg(net=1))
    assert (node.rate, node.steps, list(node.pair)) == (0.5, 3, [0.9, 0.99])
    assert "key" not in node  # a key tuple: YAML cannot write it back, the default applies
    with pytest.raises(ValidationError, match=r"(?s)full_key: steps"):
        OmegaConf.merge(node, {"steps": "many"})
    with pytest.raises(ConfigKeyError, match=r"Key 'stepz' not in 'TargetConfig'"):
        OmegaConf.merge(node, {"stepz": 1})


def test_a_partial_config_leaves_the_required_parameters_to_the_caller():
    cfg = config_of(_target, "TargetConfig", "x.target", partial=True)
    node = OmegaConf.structured(cfg)
    assert "net" not in node
    assert node._partial_ is True
    assert not OmegaConf.missing_keys(node)


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [("float | Tensor", float), ("int | None", Optional[int]), (bool, bool), ("list[int]", Any)],  # noqa: UP045
)
def test_field_type(annotation, expected):
    assert field_type(annotation) == expected
