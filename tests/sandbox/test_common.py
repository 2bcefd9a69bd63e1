"""Pure helpers shared by both backends: output caps, labels, sizes, timeouts, the diff script's patterns."""

from __future__ import annotations

import pytest

from agentbon.sandbox.common import (
    OutputCap,
    container_labels,
    is_timeout,
    label_filters,
    matches,
    parse_bytes,
    slug,
    timeout_argv,
)
from agentbon.sandbox.patch import _attribute_pattern, _non_utf8_paths


def test_output_cap_keeps_head_and_tail_and_counts_the_middle():
    cap = OutputCap(10)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"qrst"):
        cap.feed(chunk)
    assert cap.truncated and cap.dropped == 10
    assert cap.text() == "abcde\n[... 10 bytes of output omitted ...]\npqrst"


def test_output_cap_under_the_limit_is_verbatim():
    cap = OutputCap(100)
    cap.feed("héllo\n".encode())
    assert not cap.truncated and cap.text() == "héllo\n"


def test_labels_prefixed_and_filtered(monkeypatch):
    monkeypatch.delenv("AGENTBON_SESSION", raising=False)
    labels = container_labels({"run_id": "r1", "agentbon.purpose": "verify"}, task_id="t")
    assert labels == {"agentbon": "1", "agentbon.run_id": "r1", "agentbon.purpose": "verify", "agentbon.task_id": "t"}
    assert label_filters({"run_id": "r1"}) == ["agentbon=1", "agentbon.run_id=r1"]
    assert matches(labels, {"run_id": "r1"}) and matches(labels, None)
    assert not matches(labels, {"run_id": "r2"}) and not matches({"agentbon.run_id": "r1"}, {"run_id": "r1"})


def test_short_label_keys_are_canonical(monkeypatch):
    monkeypatch.delenv("AGENTBON_SESSION", raising=False)
    labels = container_labels({"run": "r1", "task": "t1", "rollout": "t1/0", "attempt": "2"})
    assert labels == {
        "agentbon": "1",
        "agentbon.run_id": "r1",
        "agentbon.task_id": "t1",
        "agentbon.rollout_id": "t1/0",
        "agentbon.attempt": "2",
    }
    assert (
        label_filters({"run": "r1"}) == label_filters({"agentbon.run_id": "r1"}) == ["agentbon=1", "agentbon.run_id=r1"]
    )


def test_session_label_from_environment(monkeypatch):
    monkeypatch.setenv("AGENTBON_SESSION", "s1")
    assert container_labels(None)["agentbon.session"] == "s1"


@pytest.mark.parametrize(("text", "size"), [("2g", 2 << 30), ("512m", 512 << 20), ("100k", 102400), ("10", 10)])
def test_parse_bytes(text, size):
    assert parse_bytes(text) == size


def test_parse_bytes_rejects_nonsense():
    with pytest.raises(ValueError, match="not a size"):
        parse_bytes("lots")


def test_timeout_argv_and_detection():
    argv = timeout_argv("echo hi", 2.5)
    assert argv[:2] == ["bash", "-c"] and 'timeout -k 5 "$1" bash -c "$2"' in argv[2]
    assert argv[3:] == ["agentbon-exec", "2.5", "echo hi"]
    assert is_timeout(124, 2.0, 2.0) and is_timeout(137, 7.0, 2.0)
    assert not is_timeout(137, 0.3, 2.0)  # killed early: an OOM kill, not the timeout
    assert not is_timeout(1, 5.0, 2.0)


def test_slug_is_safe_for_docker_names():
    assert slug("Django__django-11099/3") == "django__django-11099-3"
    assert slug("...") == "x"


def test_attribute_pattern_escapes_globs_and_spaces():
    assert _attribute_pattern("a b/c*.txt") == "/a[[:space:]]b/c\\*.txt"


def test_non_utf8_paths_found_per_file():
    patch = (
        b"diff --git a/ok.txt b/ok.txt\n+fine\n"
        b"diff --git a/latin.txt b/latin.txt\n+caf\xe9\n"
        b"diff --git a/dir/x y.txt b/dir/x y.txt\n+\xff\n"
    )
    assert _non_utf8_paths(patch) == ["latin.txt", "dir/x y.txt"]
