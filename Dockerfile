# syntax=docker/dockerfile:1
# agentgate: docker build -t agentgate . (docs/deployment.md). Two stages: the first installs the
# package and its runtime dependencies into a virtualenv, the second copies only that virtualenv
# onto a slim base and runs it as an unprivileged user.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/agentgate
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY agent_server ./agent_server
COPY http_facade ./http_facade
COPY resources ./resources
COPY tools ./tools
COPY wellknown ./wellknown
# The otel extra: traces can be turned on with the OTEL_* variables alone (docs/operations.md).
RUN /opt/agentgate/bin/pip install --no-cache-dir ".[otel]" \
    && /opt/agentgate/bin/agentgate --version

FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="agentgate" \
      org.opencontainers.image.licenses="BUSL-1.1"
RUN useradd --system --no-log-init --uid 10001 --user-group --home-dir /var/lib/agentgate --create-home agentgate
COPY --from=build /opt/agentgate /opt/agentgate
ENV PATH=/opt/agentgate/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    AGENTGATE_DATA_DIR=/var/lib/agentgate
USER 10001:10001
WORKDIR /var/lib/agentgate
VOLUME ["/var/lib/agentgate"]
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health/live', timeout=2)"]
ENTRYPOINT ["agentgate"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
