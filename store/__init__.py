"""Persistence shared by the API and the workers: settings, models, sessions, repositories,
the time-series codec and the run dispatch contract (queue names, task names)."""
