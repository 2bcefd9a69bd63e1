"""A stdlib-only agent (urllib) for the batch test: asks the model once and runs its reply with bash."""

import json
import os
import subprocess
import urllib.request

problem = open(os.environ["AGENTBON_PROBLEM_STATEMENT"]).read()
body = {"model": os.environ["AGENTBON_MODEL"], "messages": [{"role": "user", "content": problem}]}
headers = {"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(body).encode(), headers
)
reply = json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"]
subprocess.run(["bash", "-c", reply], check=False)
