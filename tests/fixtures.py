"""Read the data-driven fixture files under tests/fixtures/."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def cases(name: str) -> list[dict[str, str]]:
    """Blocks of `key: value` lines separated by blank lines; a value continues on
    indented lines; `#` lines are comments."""
    blocks, current, key = [], {}, None
    for line in (FIXTURES / name).read_text().splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if current:
                blocks.append(current)
            current, key = {}, None
        elif line[0].isspace() and key:
            current[key] += "\n" + line.strip()
        else:
            key, _, value = line.partition(":")
            current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks
