"""Sending over SMTP with aiosmtplib: one connection per message, TLS as the URL's scheme asks, the
certificate and host name always verified, credentials only ever sent over TLS.

A 5xx reply to the recipient or to the message is permanent (the message fails at once); anything
else (4xx, refused connection, timeout, TLS or authentication trouble) is worth a retry, since an
operator can fix the server or the settings while the message waits.
"""

from __future__ import annotations

import contextlib
import re
from email.message import EmailMessage

from agent_server.foundation.lazy import lazy_module
from agent_server.mail.config import SmtpConfig
from agent_server.mail.message import LINK
from agent_server.mail.transport import DeliveryFailed

aiosmtplib = lazy_module("aiosmtplib")  # loaded by the first message sent over SMTP

SPACES = re.compile(r"\s+")


class SmtpTransport:
    def __init__(self, config: SmtpConfig, *, ehlo_name: str, timeout: float) -> None:
        self.config, self.ehlo_name, self.timeout = config, ehlo_name, timeout

    def describe(self) -> str:
        return f"SMTP server {self.config.host}:{self.config.port} ({self.config.mode})"

    async def deliver(self, mail_id: str, message: EmailMessage) -> None:
        config = self.config
        client = aiosmtplib.SMTP(
            hostname=config.host,
            port=config.port,
            use_tls=config.use_tls,
            start_tls=config.start_tls,
            tls_context=config.tls_context,
            local_hostname=self.ehlo_name,
            timeout=self.timeout,
        )
        try:
            await client.connect()
            if config.username is not None:
                if client.get_transport_info("sslcontext") is None:
                    raise DeliveryFailed("the server offered no STARTTLS; credentials are only sent over TLS")
                await client.login(config.username, config.password or "")
            await client.send_message(message)
        except aiosmtplib.SMTPRecipientsRefused as exc:
            codes = [refusal.code for refusal in exc.recipients]
            replies = "; ".join(self._reply(refusal.code, refusal.message) for refusal in exc.recipients)
            raise DeliveryFailed(f"recipient refused: {replies}", permanent=_permanent(*codes)) from None
        except aiosmtplib.SMTPDataError as exc:
            reason = f"message refused: {self._reply(exc.code, exc.message)}"
            raise DeliveryFailed(reason, permanent=_permanent(exc.code)) from None
        except aiosmtplib.SMTPResponseException as exc:  # sender refused, authentication, HELO, ...
            raise DeliveryFailed(f"{type(exc).__name__}: {self._reply(exc.code, exc.message)}") from None
        except (aiosmtplib.SMTPException, OSError) as exc:  # connect, timeout, TLS, disconnect
            raise DeliveryFailed(f"{type(exc).__name__}: {self._clean(str(exc))}") from None
        finally:
            await _close(client)

    def _reply(self, code: int, text: str) -> str:
        return f"{code} {self._clean(text)}"

    def _clean(self, text: str) -> str:
        """What may be stored from a server's words: no password and no link, in case either is echoed."""
        if self.config.password:
            text = text.replace(self.config.password, "***")
        return SPACES.sub(" ", LINK.sub("<link>", text)).strip()[:200]


def _permanent(*codes: int) -> bool:
    return bool(codes) and all(500 <= code < 600 for code in codes)


async def _close(client: aiosmtplib.SMTP) -> None:
    if not client.is_connected:
        return
    with contextlib.suppress(aiosmtplib.SMTPException, OSError):
        await client.quit()
    client.close()
