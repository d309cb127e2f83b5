import re
from pathlib import Path

from testkit.readme import run_readme_example

README = Path(__file__).resolve().parents[1] / "README.md"


def test_trainer_readme_example_runs_and_prints_what_it_says(tmp_path):
    match = re.search(
        r"### Example: trainer and loggers\s*\n+```python\n(.*?)```", README.read_text(), re.DOTALL
    )
    assert match is not None, "README.md lacks the '### Example: trainer and loggers' block"
    # run_readme_example reads a README's '## Example' section: hand it this block as one.
    readme = tmp_path / "README.md"
    readme.write_text(f"## Example\n\n```python\n{match.group(1)}```\n")
    printed = run_readme_example(readme)
    assert printed == ["640 80", "32 640 20", "True"]
