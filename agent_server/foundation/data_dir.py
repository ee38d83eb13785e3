"""Where the data lives when ``AGENTGATE_DATA_DIR`` is unset: one rule that never depends on the
current directory, so the server and every CLI command find the same database wherever they start.
"""

from __future__ import annotations

import os
from pathlib import Path

# The folder holding agent_server/: a source checkout when pyproject.toml sits beside it.
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def default_data_dir() -> Path:
    """var/ of the source checkout the code runs from, else $XDG_DATA_HOME/agentgate."""
    if (_PROJECT_ROOT / "pyproject.toml").is_file():
        return _PROJECT_ROOT / "var"
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "agentgate"
