"""The Celery app: ``celery -A worker.celery_app worker`` starts a worker."""

from __future__ import annotations

import logging

from messaging import make_celery
from settings import get_settings

settings = get_settings()
logging.basicConfig(
    level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
)

app = make_celery(settings, name="tcpfr-worker")
app.conf.include = ["worker.tasks"]
