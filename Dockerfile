# syntax=docker/dockerfile:1
# workload-map: `wlmap serve` with the built-in catalog baked in.
#
#   docker build -t workload-map:0.1.0 .
#   docker run --rm -p 8080:8080 --read-only --tmpfs /tmp workload-map:0.1.0
#
# Stage 1 builds the wheel (the catalog in definitions/ is packed into it as
# app/builtin_definitions) and installs it into a virtualenv; stage 2 copies only that
# virtualenv onto a slim Python, runs as an unprivileged user and needs no writable path but
# /tmp (mount an emptyDir there with a read-only root filesystem).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY definitions ./definitions
RUN python -m venv /opt/wlmap \
 && /opt/wlmap/bin/pip install --upgrade pip \
 && /opt/wlmap/bin/pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/wlmap/bin/pip install /wheels/*.whl \
 && /opt/wlmap/bin/python -m compileall -q /opt/wlmap/lib

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="workload-map" \
      org.opencontainers.image.description="Interpret any Kubernetes AI workload through Karta definitions: status, component tree, totals, gang hints." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/workload-map/workload-map"
COPY --from=build /opt/wlmap /opt/wlmap
RUN groupadd --gid 10001 wlmap \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin wlmap
# Nothing is written at run time but to /tmp (multiprocessing, uvicorn); bytecode is compiled above.
ENV PATH=/opt/wlmap/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TMPDIR=/tmp \
    WLMAP_HOST=0.0.0.0 \
    WLMAP_PORT=8080 \
    WLMAP_WORKERS=1
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["wlmap"]
CMD ["serve"]
