"""`import rl_core` must stay light: no optional heavy library, no sibling package."""

from testkit.package import SIBLINGS, modules_loaded_by

HEAVY = ("gymnasium", "pettingzoo", "transformers", "ray", "vllm", "tokenizers", "ale_py")


def test_import_rl_core_loads_no_heavy_optional_library():
    loaded = {name.split(".")[0] for name in modules_loaded_by("import rl_core")}
    assert "rl_core" in loaded
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
    assert loaded.isdisjoint(SIBLINGS), sorted(loaded & set(SIBLINGS))
