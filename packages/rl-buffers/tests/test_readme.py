from pathlib import Path

from testkit.readme import run_readme_example

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_prints_what_it_says():
    printed = run_readme_example(README)
    assert printed == ["1000 torch.Size([256, 17])", "torch.Size([64])", "True"]
