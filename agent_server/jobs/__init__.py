"""Async jobs of the public site API (spec 2.5, 3.1): durable records, a queue and a worker.

The boundary a Redis job library (arq) or separate ``agentgate worker`` processes plug into:

- ``JobStore`` (store.py): the ``jobs`` table is the truth; every state change is one conditional
  UPDATE, so two workers can never both run a job and a cancel always wins over a late result.
- ``JobQueue`` (queue.py): carries only job ids. ``KVJobQueue`` uses ``services.kv`` (in-memory or
  Redis lists); an arq queue would implement the same two methods.
- ``JobRunner.run(job_id)`` (runner.py): claims and executes one job; safe to call twice for the
  same id. An arq task function would simply call it.
- ``Worker`` (worker.py): the in-process consumer loop, started by the app's lifespan.
- ``Jobs`` (service.py): what routes call (submit, get, cancel) plus start-up recovery.
"""
