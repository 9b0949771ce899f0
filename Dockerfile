# tcpfr: one image for the API, the workers and the migrations (docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 tcpfr
WORKDIR /app

# The README's install step, verbatim: a venv and an editable install of the project.
COPY --chown=tcpfr pyproject.toml README.md ./
COPY --chown=tcpfr engine ./engine
COPY --chown=tcpfr store ./store
COPY --chown=tcpfr settings ./settings
COPY --chown=tcpfr messaging ./messaging
COPY --chown=tcpfr api ./api
COPY --chown=tcpfr worker ./worker
COPY --chown=tcpfr client ./client
RUN python3.11 -m venv .venv && .venv/bin/pip install -e . \
    && chown -R tcpfr /app
COPY --chown=tcpfr alembic.ini ./
COPY --chown=tcpfr migrations ./migrations

ENV PATH=/app/.venv/bin:$PATH \
    HOST=0.0.0.0 \
    TCPFR_DATA_DIR=/app/.tcpfr
USER tcpfr
EXPOSE 8000

# The API (its server as `make run` starts it: api.serve.api_command, HOST and PORT from the
# environment); docker-compose.yml runs the workers and the migrations from this same image.
CMD ["python", "-m", "api.serve", "--api-only"]
