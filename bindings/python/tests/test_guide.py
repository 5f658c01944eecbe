"""The user guide's Python blocks (docs/guide/*.md, ```python fences) run as they are written.
Like the rest of this suite they open DDS sockets: run under scripts/netns-run (conftest.py)."""

import pathlib

import pytest

GUIDE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "guide"


def python_blocks():
    blocks = []
    for page in sorted(GUIDE.glob("*.md")):
        text = page.read_text()
        rest = text
        n = 0
        while "```python\n" in rest:
            start = rest.index("```python\n") + len("```python\n")
            end = rest.index("```", start)
            n += 1
            blocks.append(pytest.param(rest[start:end], id=f"{page.name}#{n}"))
            rest = rest[end + 3 :]
    return blocks


def test_the_guide_has_python_blocks():
    assert python_blocks(), f"no ```python block in {GUIDE}"


@pytest.mark.parametrize("code", python_blocks())
def test_guide_block_runs(code):
    # Each block is a whole program: its own names, run to completion (its asserts included).
    exec(compile(code, "<guide>", "exec"), {"__name__": "__guide__"})
