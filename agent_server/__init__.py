"""agentgate's core: the services behind the HTTP facade (docs/architecture.md)."""

import sys

# httpx imports its command line (click, rich, pygments: ~4 MB) whenever those are installed, as
# they are beside the development tools; the service never runs it (docs/performance.md, "Memory").
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
