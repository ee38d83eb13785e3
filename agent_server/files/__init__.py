"""Files of the OpenAI Files API (``/v1/files``, docs/batches.md): records, stores, validation.

- ``tables.py``: the ``files`` record and the ``file_chunks`` of the database store.
- ``store.py``: one ``FileStore`` interface; the data-directory store (embedded default) and the
  chunked database store that every process of a deployment reaches.
- ``service.py``: ``Files``, what routes and the batch runner call (create, list, get, read, delete).
- ``jsonl.py``: the line check of uploads of the ``batch`` purpose.
"""
