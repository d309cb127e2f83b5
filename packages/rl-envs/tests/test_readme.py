from pathlib import Path

from testkit.readme import run_readme_example

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_prints_what_it_says():
    printed = run_readme_example(README)
    assert printed == ["torch.Size([1000])", "torch.Size([4, 10])", "torch.Size([1024, 50, 1])"]


def test_transforms_example_runs_and_prints_what_it_says():
    """The python block of the README's "## Transforms" section (an Atari pipeline)."""
    import contextlib
    import io
    import re

    import pytest

    pytest.importorskip("ale_py")
    text = README.read_text().split("## Transforms", 1)[1]
    code = re.search(r"```python\n(.*?)```", text, re.DOTALL).group(1)
    expected = [line.split("# ", 1)[1] for line in code.splitlines() if line.startswith("print(")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
    assert out.getvalue().splitlines() == expected == ["torch.Size([2, 5, 4, 84, 84])"]
