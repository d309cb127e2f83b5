from pathlib import Path

from testkit.readme import run_readme_example

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_prints_what_it_says():
    printed = run_readme_example(README)
    assert printed == ["True cpu", "[1.9375, 1.875, 1.75, 1.5, 1.0]", "[1, 6]"]
