"""Public identifiers such as ``key_…``, ``ten_…``, ``usr_…``: a prefix and random base62 characters.

Every feature makes them (keys, tenants, mails, SSO connections), so they live in the foundation.
"""

from __future__ import annotations

import secrets
import string

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def new_id(prefix: str, length: int = 16) -> str:
    return prefix + "".join(secrets.choice(BASE62) for _ in range(length))
