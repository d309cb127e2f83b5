from pathlib import Path

from testkit.readme import run_readme_example

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs_and_prints_what_it_says():
    printed = run_readme_example(README)
    assert printed == ["torch.Size([4, 100])", "[1, 2, 3, 4, 5, 1]"]


def test_a_print_without_its_expected_output_is_refused(tmp_path):
    import pytest

    readme = tmp_path / "README.md"
    readme.write_text("## Example\n\n```python\nprint(\n    1\n)  # 1\n```\n")
    with pytest.raises(ValueError, match=r"expected each print call on one line ending with"):
        run_readme_example(readme)
    readme.write_text("## Example\n\n```python\nprint(2)  # 3\n```\n")
    with pytest.raises(AssertionError, match=r"printed \['2'\], the README says \['3'\]"):
        run_readme_example(readme)
