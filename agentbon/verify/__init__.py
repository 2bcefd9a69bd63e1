"""Verification: run a candidate's tests in a fresh sandbox and say what they decided (docs/security.md).

``TestVerifier`` implements ``protocols.Verifier`` (the driver shares verdicts between identical patches,
orchestrate/state.py); ``junit``, ``grading`` and ``guard`` are its pure parts (parsers, SWE-bench semantics, the
tamper guard); ``harness`` grades SWE-bench instances with the official harness's eval script and functions,
``testpatch`` and ``evalscript`` derive their evidence. The scripts that run inside the sandbox live in the
top-level ``verifiers/`` folder.
"""

from agentbon.verify.grading import crosscheck, grade
from agentbon.verify.runner import TestVerifier, verifiers_dir

__all__ = ["TestVerifier", "crosscheck", "grade", "verifiers_dir"]
