from pathlib import Path

from testkit.readme import run_readme_example

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_prints_what_it_says():
    printed = run_readme_example(README)
    assert printed == [
        "torch.Size([8, 8])",
        "torch.Size([8, 3])",
        "torch.Size([8, 1])",
        "torch.Size([])",
    ]
