#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A Ray Serve application for tests/serve.bats: a tiny three-stage model
(each stage x -> tanh(x W_k + b_k), W_k 8x8 and b_k drawn from seed 1000+k)
with stage k pinned to node k through the plugin's llmp_node_K resource,
behind an ingress on the head. Serve listens on the job's port
(LLMP_SERVE_PORT); GET / answers once every node has joined, POST / with
{"x": [8 floats]} returns {"y": ..., "hosts": [the node of each stage]}.
Run by `llmp serve` on the head once Ray's GCS answers (RAY_ADDRESS and
the token come from the plugin)."""
import os
import time

import numpy as np
import ray
from ray import serve
from starlette.requests import Request

NODES = int(os.environ["LLMP_SERVE_NNODES"])


@serve.deployment(ray_actor_options={"num_cpus": 0})
class Stage:
    def __init__(self, k):
        rng = np.random.default_rng(1000 + k)
        self.w = rng.standard_normal((8, 8))
        self.b = rng.standard_normal(8)

    def __call__(self, x):
        return {"y": np.tanh(np.asarray(x) @ self.w + self.b).tolist(),
                "host": os.environ.get("SLURMD_NODENAME", "?")}


@serve.deployment(ray_actor_options={"num_cpus": 0, "resources": {"llmp_node_0": 0.01}})
class Pipeline:
    def __init__(self, *stages):
        self.stages = stages

    async def __call__(self, request: Request):
        if request.method == "GET":
            return {"nodes": NODES}
        x, hosts = (await request.json())["x"], []
        for s in self.stages:
            r = await s.remote(x)
            x = r["y"]
            hosts.append(r["host"])
        return {"y": x, "hosts": hosts}


t0 = time.time()
ray.init()
while sum(1 for n in ray.nodes() if n["Alive"]) < NODES:
    time.sleep(0.2)
print(f"serve_ray_app: all {NODES} nodes in Ray {time.time() - t0:.1f} s after ray.init", flush=True)
stages = [Stage.options(name=f"stage{k}", ray_actor_options={"num_cpus": 0, "resources": {f"llmp_node_{k}": 0.01}})
          .bind(k) for k in range(NODES)]
serve.start(http_options={"host": "0.0.0.0", "port": int(os.environ["LLMP_SERVE_PORT"])})
serve.run(Pipeline.bind(*stages), route_prefix="/")
while True:
    time.sleep(3600)
