"""Preflight of an OpenAI-compatible endpoint: that it answers, and that it serves the model the run names.

Strict by design: the named model must be listed by ``GET {endpoint}/models``. vLLM and hosted APIs refuse
any other name (HTTP 404 on every request); a server that ignores the name (llama.cpp's) would still have
the run record a model name that is not what answered.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from agentbon.errors import EndpointMisconfigured, ServerFailure


def check_endpoint(endpoint: str, name: str, api_key: str | None = None, timeout_s: float = 10.0) -> None:
    """Return when ``endpoint`` answers ``GET /models`` and lists ``name``; else raise with the cause and the fix.

    ``ServerFailure``: nothing answers (refused, unreachable, no reply within ``timeout_s``, HTTP 5xx).
    ``EndpointMisconfigured``: it answers, but refuses the key (401 / 403), is not an OpenAI API root (404, a
    body that is no model list), or does not list ``name`` (the message lists what it serves).
    """
    url = endpoint.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=timeout_s, trust_env=False, headers=headers) as http:
            reply = http.get(url)
    except httpx.TimeoutException as e:
        raise ServerFailure(
            f"model endpoint {endpoint}: no answer to GET {url} within {timeout_s:g}s "
            "(is the server up, and still loading?): fix --endpoint or wait until it is ready"
        ) from e
    except httpx.HTTPError as e:  # refused, unknown host, reset
        raise ServerFailure(
            f"model endpoint {endpoint}: nothing answers GET {url} ({type(e).__name__}: {e}): "
            "start the server or fix --endpoint"
        ) from e
    status, text = reply.status_code, reply.text
    if status in (401, 403):
        raise EndpointMisconfigured(
            f"model endpoint {endpoint}: HTTP {status}, the API key was refused: set model.api_key ({text[:200]})"
        )
    if status == 404:
        raise EndpointMisconfigured(
            f"model endpoint {endpoint}: HTTP 404 for GET {url}: not an OpenAI-compatible API root; "
            "--endpoint usually ends in /v1 (http://HOST:PORT/v1)"
        )
    if status >= 400:
        raise ServerFailure(f"model endpoint {endpoint}: HTTP {status} for GET {url}: {text[:200]}")
    served = served_models(text)
    if served is None:
        raise EndpointMisconfigured(
            f"model endpoint {endpoint}: GET {url} answered HTTP {status} without an OpenAI model list "
            f"({text[:200]!r}): is --endpoint an OpenAI-compatible API root (http://HOST:PORT/v1)?"
        )
    if name not in served:
        listed = ", ".join(repr(m) for m in served) or "no model at all"
        fix = f"--model {served[0]}" if len(served) == 1 else "--model NAME with one of them"
        raise EndpointMisconfigured(
            f"model endpoint {endpoint} does not serve model {name!r}; it serves {listed}: "
            f"{fix} (or -c model.name=NAME)"
        )


def served_models(text: str) -> list[str] | None:
    """The model ids of an OpenAI ``GET /models`` body (``{"data": [{"id": ...}, ...]}``), or None if it is not one."""
    try:
        data: Any = json.loads(text)
    except ValueError:
        return None
    models = data.get("data") if isinstance(data, dict) else None
    if not isinstance(models, list):
        return None
    return [m["id"] for m in models if isinstance(m, dict) and isinstance(m.get("id"), str)]
