#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A stand-in for `vllm serve MODEL` on the test cluster: no GPU, no vLLM.

It takes the flags llmp gives vLLM's multi-node mode (LLMP_VLLM_ARGS) and
behaves as the engine would where the test can see it:
  - the head (no --headless) listens for the workers on --master-addr's
    --master-port and for HTTP on --port; /health answers 200 only once all
    --nnodes - 1 workers have joined, /v1/models only with the header
    "Authorization: Bearer $VLLM_API_KEY" (vLLM's --api-key check), 401 else;
  - a worker (--headless) joins the head and holds the connection;
  - a node whose peer leaves exits 1, as a real engine's collective fails.
Every port it binds is one the flags name, so two jobs meet only if their
flags collide (bind fails with EADDRINUSE: the test looks for that).
SERVE_ENGINE_DIE_ON=NODE makes the engine on that node exit 3 at once, as one
that cannot load its model.
"""
import argparse
import http.server
import json
import os
import socket
import sys
import threading
import time


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("serve")
    p.add_argument("model")
    p.add_argument("--tensor-parallel-size", type=int, required=True)
    p.add_argument("--pipeline-parallel-size", type=int, required=True)
    p.add_argument("--data-parallel-size", type=int, default=1)
    p.add_argument("--nnodes", type=int, required=True)
    p.add_argument("--node-rank", type=int, required=True)
    p.add_argument("--master-addr", required=True)
    p.add_argument("--master-port", type=int, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--headless", action="store_true")
    return p.parse_args()


def log(msg):
    print(f"serve_engine[{os.environ.get('SLURMD_NODENAME', '?')}]: {msg}", file=sys.stderr, flush=True)


def die(msg, code=1):
    log(msg)
    os._exit(code)


def watch(conn, who):
    """Exit when the peer at conn goes away."""
    try:
        while conn.recv(64):
            pass
    except OSError:
        pass
    die(f"{who} left")


def head(a):
    joined = set()
    rv = socket.socket()
    rv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        rv.bind(("0.0.0.0", a.master_port))
    except OSError as e:
        die(f"bind {a.master_port}: {e}", 98)
    rv.listen(16)

    def accept():
        while True:
            c, _ = rv.accept()
            rank = int(c.recv(16).decode().strip() or "-1")
            joined.add(rank)
            log(f"node rank {rank} joined")
            threading.Thread(target=watch, args=(c, f"node rank {rank}"), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    key = os.environ.get("VLLM_API_KEY", "")

    class H(http.server.BaseHTTPRequestHandler):
        def reply(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                ready = len(joined) == a.nnodes - 1
                return self.reply(200 if ready else 503, {"joined": sorted(joined)})
            if not key or self.headers.get("Authorization") != f"Bearer {key}":
                return self.reply(401, {"error": "Unauthorized"})
            if self.path == "/v1/models":
                return self.reply(200, {"data": [{"id": a.model}], "tp": a.tensor_parallel_size,
                                        "pp": a.pipeline_parallel_size, "nnodes": a.nnodes,
                                        "joined": sorted(joined), "port": a.port})
            return self.reply(404, {"error": "not found"})

        def log_message(self, *args):
            pass

    try:
        srv = http.server.ThreadingHTTPServer(("0.0.0.0", a.port), H)
    except OSError as e:
        die(f"bind {a.port}: {e}", 98)
    log(f"head: http on {a.port}, rendezvous on {a.master_port}, key {'set' if key else 'unset'}")
    srv.serve_forever()


def worker(a):
    deadline = time.time() + 30
    while True:
        try:
            c = socket.create_connection((a.master_addr, a.master_port), timeout=2)
            break
        except OSError:
            if time.time() > deadline:
                die(f"no head at {a.master_addr}:{a.master_port}")
            time.sleep(0.2)
    c.settimeout(None)
    c.sendall(f"{a.node_rank}\n".encode())
    log(f"worker {a.node_rank} joined {a.master_addr}:{a.master_port}")
    watch(c, "the head")


def main():
    a = parse()
    if os.environ.get("SERVE_ENGINE_DIE_ON") == os.environ.get("SLURMD_NODENAME", "?"):
        die("cannot load the model (SERVE_ENGINE_DIE_ON)", 3)
    if a.tensor_parallel_size * a.pipeline_parallel_size * a.data_parallel_size < a.nnodes:
        die("fewer GPUs in the layout than nodes")
    (worker if a.headless else head)(a)


if __name__ == "__main__":
    main()
