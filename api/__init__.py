"""The HTTP API: FastAPI app factory, one folder per resource, problem+json errors."""
