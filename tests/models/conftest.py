"""One vLLM CPU server for every test that needs a running one (tests/models), started as a run starts it.

A vLLM engine takes minutes to come up on 2 cores and ~9 GiB: the tests that only talk to a server (the client's
seeded chats and ``n``, the batch through an endpoint, the calibration's measurement) share one, and it stops as
soon as the last of them has run, before the test that loads engines as Ray actors needs the memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

_users: set[str] = set()
"""Node ids of this session's tests that use ``vllm_server`` and have not run yet."""


def pytest_collection_finish(session: pytest.Session) -> None:
    _users.update(item.nodeid for item in session.items if "vllm_server" in getattr(item, "fixturenames", ()))


class _Shared:
    """The session's vLLM server: started by the first test that asks, stopped after the last."""

    def __init__(self) -> None:
        self.service: Any = None
        self.config: Any = None
        self.failure: str | None = None

    def start(self) -> Any:
        if self.failure:
            pytest.fail(f"the shared vLLM server did not start: {self.failure}")
        if self.config is None:
            from agentbon.config import ModelConfig
            from agentbon.models.service import ModelService

            # The largest context any user asks for; a long request timeout (2 busy cores decode slowly).
            self.service = ModelService(ModelConfig(launcher="vllm", ctx=8192, timeout_s=3600.0))
            try:
                self.config = self.service.start()
            except Exception as e:
                self.failure = f"{type(e).__name__}: {e}"
                raise
        return self.config

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop()
        self.service = self.config = None


@pytest.fixture(scope="session")
def _vllm_shared() -> Iterator[_Shared]:
    shared = _Shared()
    yield shared
    shared.stop()


@pytest.fixture
def vllm_server(_vllm_shared: _Shared, request: pytest.FixtureRequest) -> Iterator[Any]:
    """The ``ModelConfig`` of the shared vLLM server (``endpoint`` set); skips where vLLM's CPU build or the model
    converted for it is missing."""
    from agentbon.models.vllm_server import default_hf_dir, vllm_python

    try:
        vllm_python()
    except Exception as e:  # any reason there is no vLLM here is a reason to skip
        pytest.skip(f"no vLLM interpreter ({e}); bash scripts/setup_vllm_cpu.sh")
    if not (default_hf_dir() / "config.json").is_file():
        pytest.skip("the default model is not converted for vLLM (bash scripts/setup_vllm_cpu.sh)")
    try:
        yield _vllm_shared.start()
    finally:
        _users.discard(request.node.nodeid)
        if not _users:
            _vllm_shared.stop()
