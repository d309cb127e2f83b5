"""The distribution tests check argument validation under torch's default, which is on.

``torch.compile`` turns that default off for the whole process the first time dynamo patches
torch, so a compile test of another package that ran earlier in the same pytest process would
change what these tests see. Each test here starts with torch's default and leaves it as found.
"""

import pytest
from torch import distributions as D


@pytest.fixture(autouse=True)
def _torch_default_validation():
    previous = D.Distribution._validate_args
    D.Distribution.set_default_validate_args(True)
    yield
    D.Distribution.set_default_validate_args(previous)
