"""A small real agent for the command agent's tests: a loop over the ``openai`` package, run unchanged in a sandbox.

It asks the model for one shell command at a time (a ```bash block), runs it in the repository and sends the
output back, until the reply says DONE. ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` come from the environment, as
agentbon sets them; with ``PROBE=host:port`` it first tries to reach that address and prints what happened.
"""

import os
import socket
import subprocess

from openai import OpenAI

probe = os.environ.get("PROBE")
if probe:
    host, port = probe.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
        print("probe: reached", probe)
    except OSError as e:
        print("probe: blocked", probe, type(e).__name__, e)

client = OpenAI()
problem = open(os.environ["AGENTBON_PROBLEM_STATEMENT"]).read()
messages = [
    {"role": "system", "content": "Answer with one shell command in a ```bash block, or DONE when the fix is made."},
    {"role": "user", "content": problem},
]
while True:
    reply = client.chat.completions.create(model=os.environ["AGENTBON_MODEL"], messages=messages, temperature=1.5)
    text = reply.choices[0].message.content
    print("usage:", reply.usage.prompt_tokens, reply.usage.completion_tokens)
    messages.append({"role": "assistant", "content": text})
    if "DONE" in text:
        break
    command = text.split("```bash\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(command, shell=True, capture_output=True, text=True)
    messages.append({"role": "user", "content": f"exit {done.returncode}\n{done.stdout}{done.stderr}"})
