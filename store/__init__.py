"""Persistence shared by the API and the workers: models, sessions, repositories and the
time-series codec. (Settings live in ``settings``, the run dispatch contract and the Celery
app in ``messaging``.)"""
