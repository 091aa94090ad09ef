#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A miniature of torch.distributed's env:// rendezvous, run as every task.

Rank 0 listens on MASTER_ADDR:MASTER_PORT; every other rank connects and
sends its RANK; rank 0 answers each with the sorted list of ranks it heard,
once all WORLD_SIZE - 1 have arrived. Each task prints "rendezvous RANK ok"
when the list is exactly 0..WORLD_SIZE-1, so the variables the plugin set
are proven usable for a real rendezvous across nodes, not only well formed.
"""
import os
import socket
import sys
import time

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
addr = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
deadline = time.time() + 30


def fail(why):
    print(f"rendezvous {rank} failed: {why}", flush=True)
    sys.exit(1)


if rank == 0:
    server = socket.create_server(addr, reuse_port=False)
    server.settimeout(30)
    peers, heard = [], [0]
    while len(heard) < world:
        conn, _ = server.accept()
        heard.append(int(conn.recv(16).decode()))
        peers.append(conn)
    answer = ",".join(map(str, sorted(heard))).encode()
    for conn in peers:
        conn.sendall(answer)
        conn.close()
    got = sorted(heard)
else:
    while True:
        try:
            conn = socket.create_connection(addr, timeout=5)
            break
        except OSError as e:  # rank 0 may not listen yet
            if time.time() > deadline:
                fail(f"cannot reach {addr}: {e}")
            time.sleep(0.2)
    conn.sendall(str(rank).encode())
    got = [int(r) for r in conn.recv(65536).decode().split(",")]
if got != list(range(world)):
    fail(f"heard {got}")
print(f"rendezvous {rank} ok", flush=True)
