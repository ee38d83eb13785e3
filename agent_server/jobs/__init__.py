"""Async jobs of the public site API (spec 2.5, 3.1): durable records, a queue and a worker.

- ``JobStore`` (store.py): the ``jobs`` table is the truth; every state change is one conditional
  UPDATE, so two workers can never both run a job and a cancel always wins over a late result.
- ``JobQueue`` (queue.py): carries only job ids. With Redis it is arq's queue (arq_queue.py),
  shared by every ``agentgate serve`` and ``agentgate worker`` process; without Redis an in-process
  list (``KVJobQueue`` over ``MemoryKV``).
- ``JobRunner.run(job_id)`` (runner.py): claims and executes one job; safe to call twice for the
  same id. arq's task function calls it.
- Consumers: ``Worker`` (worker.py), the in-process loop of the embedded mode; ``ArqConsumer``
  (arq_queue.py), arq's worker inside a server or an ``agentgate worker`` process.
- ``Jobs`` (service.py): what routes call (submit, get, cancel) plus recovery and housekeeping.
"""
