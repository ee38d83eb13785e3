"""A multipart/form-data upload read as it arrives: the file part's bytes are handed on piece by
piece (to a file store), never collected in memory or in a temporary file; the other fields are
small and kept. ``/v1/files`` is exempt from the edge's JSON body limit (middleware.py) because it
counts its own bytes against the plan's file limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import Request
from python_multipart.multipart import MultipartParser, parse_options_header

from agent_server.foundation.errors import ValidationFailed

FILE_FIELD = "file"
MAX_FIELD_BYTES = 1024  # purpose and the like; a larger non-file field is refused
MAX_FIELDS = 16


class MultipartUpload:
    """``async for piece in upload.file_content()``; then ``upload.fields()`` holds the other fields
    and ``filename`` (the file part's name)."""

    def __init__(self, request: Request) -> None:
        kind, options = parse_options_header(request.headers.get("content-type", ""))
        boundary = options.get(b"boundary")
        if kind != b"multipart/form-data" or not boundary:
            raise ValidationFailed(
                "Send the file as multipart/form-data with the fields file and purpose.", param="file"
            )
        self.request, self.boundary = request, boundary
        self._fields: dict[str, str] = {}
        self._pieces: list[bytes] = []
        self._header_name = self._header_value = b""
        self._headers: dict[bytes, bytes] = {}
        self._part: str | None = None  # the field name of the current part
        self._value = bytearray()
        self._files = 0

    def fields(self) -> dict[str, str]:
        return dict(self._fields)

    async def file_content(self) -> AsyncIterator[bytes]:
        parser = MultipartParser(
            self.boundary,
            {
                "on_part_begin": self._begin,
                "on_header_field": self._name,
                "on_header_value": self._value_of,
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_done,
                "on_part_data": self._data,
                "on_part_end": self._end,
            },
        )
        try:
            async for chunk in self.request.stream():
                parser.write(chunk)
                if self._pieces:
                    pieces, self._pieces = self._pieces, []
                    yield b"".join(pieces)
            parser.finalize()
        except ValueError as exc:  # python-multipart's parse errors, and ours below
            raise ValidationFailed(f"The multipart body is malformed: {exc}", param="file") from None
        if self._pieces:
            yield b"".join(self._pieces)
            self._pieces = []
        if self._files != 1:
            raise ValidationFailed("Send exactly one file, in the field 'file'.", param="file")

    def _begin(self) -> None:
        self._headers, self._part, self._value = {}, None, bytearray()

    def _name(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _value_of(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._header_name.lower()] = self._header_value
        self._header_name = self._header_value = b""

    def _headers_done(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        self._part = options.get(b"name", b"").decode("utf-8", "replace")
        if self._part == FILE_FIELD:
            self._files += 1
            self._fields["filename"] = options.get(b"filename", b"").decode("utf-8", "replace")
        elif len(self._fields) >= MAX_FIELDS:
            raise ValueError("too many fields")

    def _data(self, data: bytes, start: int, end: int) -> None:
        if self._part == FILE_FIELD:
            if self._files == 1:
                self._pieces.append(data[start:end])
            return
        self._value += data[start:end]
        if len(self._value) > MAX_FIELD_BYTES:
            raise ValueError(f"the field {self._part!r} is longer than {MAX_FIELD_BYTES} bytes")

    def _end(self) -> None:
        if self._part and self._part != FILE_FIELD:
            self._fields[self._part] = self._value.decode("utf-8", "replace")
