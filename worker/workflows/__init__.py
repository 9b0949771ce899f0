"""Multi-run workflows on the worker side: the orchestration of ``engine.workflow`` workflows
(the advisor, the remedy check).

The pure half decides what to simulate; this half makes each candidate an ordinary run
(visible, served from the result cache when it can be, exportable), tells the workflow how
each run ended, and keeps the workflow's state in the database between steps. A step is
one transaction under the workflow's row lock (``step``), keyed by (workflow, candidate key,
seed), so a redelivered message or two runs ending at once cannot make a run twice or
skip an outcome. Steps are Celery tasks (``worker.tasks.advance_workflow``), sent by the
runner when one of a workflow's runs ends, by the API when it creates a workflow, and by
the reconciler for a workflow that went quiet. Never inside an API request.

- ``kinds``: which workflows exist, and how to start or restore one.
- ``step``: one step in one transaction.
- ``orchestrator``: steps until nothing is new, sending the runs each made after its commit;
  waking a finished run's workflows.
"""
