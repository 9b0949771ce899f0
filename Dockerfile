# tcpfr: one image for the API, the workers and the migrations (docker-compose.yml).

# The compiled engine (scripts/compile_engine.py), made where a C compiler is: only its
# binaries and manifest go on to the image. --strict: an image never ships without it.
FROM python:3.11-slim AS engine-build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# mypy follows the engine's imports into its dependencies: the project is installed whole.
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY store ./store
COPY settings ./settings
COPY messaging ./messaging
COPY api ./api
COPY worker ./worker
COPY client ./client
COPY scripts/compile_engine.py ./scripts/
RUN python3.11 -m venv .venv && .venv/bin/pip install -e '.[compile]' \
    && .venv/bin/python scripts/compile_engine.py --strict

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
# The same sources as the build stage's: their hashes match the manifest, so it runs.
COPY --from=engine-build --chown=tcpfr /app/engine/_native ./engine/_native
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
