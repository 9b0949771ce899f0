"""Celery workers: thin tasks that load a run, call ``engine.simulate`` and persist the result."""
