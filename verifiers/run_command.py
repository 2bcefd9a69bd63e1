"""Run a task's shell command inside the verification sandbox; exit code 0 means pass (stdlib only).

For suites whose tests are not Python (migrations in other languages): one pseudo-test ``command``
that passes iff the command exits 0 within the time limit. The JUnit XML is written here, by the
wrapper, not by the command.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import agentbon_supervise as sup  # noqa: E402


def main():
    spec = sup.load_spec(sys.argv)
    env = sup.clean_env()
    result = sup.supervise(["/bin/sh", "-c", spec["command"]], env, spec["timeout_s"], spec.get("output_limit", 20000))
    passed = result["exit_code"] == 0 and not result["timed_out"]
    case = {"classname": "agentbon", "name": "command", "time": result["duration_s"]}
    if passed:
        case["outcome"] = "passed"
    else:
        case["outcome"] = "failed"
        case["message"] = "timed out" if result["timed_out"] else "exit {}".format(result["exit_code"])
        case["details"] = result["output"][-2000:]
    sup.write_junit(spec["junit"], [case])
    sup.finish(spec, result, {})


if __name__ == "__main__":
    main()
