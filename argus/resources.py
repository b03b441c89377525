"""Find the SQL files that ship with argus: in a wheel they sit inside the package,
in a source checkout (editable install, tests) next to it."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def resource_dir(name: str) -> Path:
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"argus installation is incomplete: no {name}/ directory "
                            f"next to {_PACKAGE}")
