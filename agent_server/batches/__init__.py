"""The OpenAI Batch API (``/v1/batches``, docs/batches.md): records, the line runner, the limiter.

- ``tables.py``: ``batches`` and ``batch_results`` (one row per finished line, inserted once).
- ``requests.py``: the request lines of an input file, checked at upload and read by the runner.
- ``service.py``: ``Batches``, what routes call (create, get, list, cancel) and the OpenAI shape.
- ``runner.py``: the job handler that runs a slice of lines through the gateway path and finalizes.
- ``limiter.py``: the share of the tenant's live rate limit a batch may take.
"""
