"""The security tests use the gateway's harness (an app on a ManualClock over ASGI)."""

from tests.gateway.conftest import harness, make_harness

__all__ = ["harness", "make_harness"]
