# Locust users for the load-engine bench: FAST=1 FastHttpUser, else HttpUser; STREAM=1 reads the SSE stream.
import os
from locust import HttpUser, task
from locust.contrib.fasthttp import FastHttpUser

STREAM = os.environ.get("STREAM") == "1"
BODY = '{"model":"bench","messages":[{"role":"user","content":"hello"}],"stream":%s,"max_tokens":64}' % ("true" if STREAM else "false")
HEADERS = {"content-type": "application/json"}


def call(client):
    if STREAM:
        with client.post("/v1/chat/completions", data=BODY, headers=HEADERS, stream=True, catch_response=True) as r:
            events = sum(1 for line in r.iter_lines() if line.startswith(b"data:"))
            r.success() if events > 0 else r.failure("no events")
    else:
        client.post("/v1/chat/completions", data=BODY, headers=HEADERS)


if os.environ.get("FAST") == "1":
    class BenchUser(FastHttpUser):
        @task
        def chat(self):
            call(self.client)
else:
    class BenchUser(HttpUser):
        @task
        def chat(self):
            call(self.client)
