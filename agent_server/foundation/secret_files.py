"""Secrets generated at first start and kept in the data directory (mode 0600).

Used only when the secret is not configured (a single host); several processes starting at once
agree on one value: each writes a private temp file in full and links it into place, and whoever
loses the link reads the winner's complete file, never a partial one.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path


def load_or_create(data_dir: Path, name: str, generate: Callable[[], bytes]) -> bytes:
    path = Path(data_dir) / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(generate())
        try:
            os.link(temp, path)
        except FileExistsError:
            pass
        finally:
            temp.unlink()
    return path.read_bytes().strip()
