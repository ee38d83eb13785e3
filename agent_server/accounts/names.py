"""Organisation names: what a person typed, shown in mail the service sends to any address.

One line of text, no control or invisible characters and no web addresses, so a registration cannot
turn the verification mail into a message of someone else's choosing (a link in our own mail).
"""

from __future__ import annotations

import re
import unicodedata

from agent_server.foundation.errors import ValidationFailed

# A scheme or "www." makes mail clients show a link; a bare name such as "Booking.com" stays allowed.
_ADDRESS = re.compile(r"(?i)(://|\bwww\.)")


def organisation_name(value: str, param: str = "organisation") -> str:
    name = " ".join(value.split())  # one line, single spaces
    if any(unicodedata.category(ch)[0] == "C" for ch in name):
        raise ValidationFailed("The organisation name may not contain control characters.", param=param)
    if _ADDRESS.search(name):
        raise ValidationFailed("The organisation name may not contain a web address.", param=param)
    if len(name) < 2:
        raise ValidationFailed("The organisation name needs at least 2 characters.", param=param)
    return name
