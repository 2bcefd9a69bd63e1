"""Helpers for the static-scan tests: unified diffs built by hand (no repository needed)."""

from __future__ import annotations


def new_file(path: str, body: str) -> str:
    """A git diff that adds ``path`` with ``body``."""
    lines = body.splitlines()
    head = f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/{path}\n"
    return head + f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines)


def edit(path: str, start: int, before: list[str], removed: list[str], added: list[str], after: list[str]) -> str:
    """A git diff of one hunk in ``path`` at line ``start``: context ``before``, ``removed`` → ``added``, ``after``."""
    old = len(before) + len(removed) + len(after)
    new = len(before) + len(added) + len(after)
    body = [f" {x}" for x in before] + [f"-{x}" for x in removed] + [f"+{x}" for x in added] + [f" {x}" for x in after]
    head = f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"
    return head + f"@@ -{start},{old} +{start},{new} @@\n" + "".join(f"{line}\n" for line in body)
