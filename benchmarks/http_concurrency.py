"""Throughput of the API backends (through the official ``openai`` SDK) under their concurrency bound.

A local Chat Completions server (its own process, asyncio) answers every call after a fixed injected
latency. We send ``--requests`` requests through ``openai-compatible/...`` with
``concurrency=--concurrency`` and compare the wall time with the ideal
``requests / concurrency * latency``, the time of perfectly packed waves. A ratio near 1 means the
client adds little beyond the latency it cannot avoid; the target is <= 1.2. Two references run
under the same load: the same HTTP library the SDK is built on (``httpx2``, same pools) without the
SDK, and a bare asyncio client (no HTTP library), the floor this machine allows under its current
load, so a busy machine is told apart from a slow client. The load average is printed too.

    python benchmarks/http_concurrency.py [--requests 256] [--concurrency 64] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import time


def _serve(port: int, latency: float, ready: multiprocessing.synchronize.Event) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length)) if length else {}
                await asyncio.sleep(latency)
                text = body["messages"][-1]["content"]
                data = json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                    }
                ).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                    + str(len(data)).encode()
                    + b"\r\n\r\n"
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
        ready.set()
        async with server:
            await server.serve_forever()

    asyncio.run(main())


async def _raw_floor(port: int, n_requests: int, concurrency: int) -> float:
    """Wall time of the same load sent by a bare asyncio client (keep-alive, no HTTP library):
    what this machine, under its current load, allows at best."""
    body = json.dumps({"messages": [{"role": "user", "content": "q"}]}).encode()
    head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: b\r\ncontent-length: %d\r\n\r\n" % len(body)
    todo = list(range(n_requests))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while todo:
            todo.pop()
            writer.write(head + body)
            resp = await reader.readuntil(b"\r\n\r\n")
            length = int(resp.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
        writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - t0


async def _httpx2_reference(port: int, n_requests: int, concurrency: int) -> float:
    """Wall time of the same load through bare ``httpx2`` clients pooled as the backend pools its SDK clients."""
    import httpx2

    from collapse_probe.models._http import CONNECTIONS_PER_CLIENT

    sizes = [min(CONNECTIONS_PER_CLIENT, concurrency - i) for i in range(0, concurrency, CONNECTIONS_PER_CLIENT)]
    clients = [httpx2.AsyncClient(limits=httpx2.Limits(max_connections=k, max_keepalive_connections=k)) for k in sizes]
    slots: asyncio.Queue = asyncio.Queue()
    for c, k in zip(clients, sizes, strict=True):
        for _ in range(k):
            slots.put_nowait(c)

    async def one(i: int) -> None:
        c = await slots.get()
        try:
            r = await c.post(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                json={"messages": [{"role": "user", "content": f"q{i}"}]},
            )
            r.json()
        finally:
            slots.put_nowait(c)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n_requests)))
    wall = time.perf_counter() - t0
    for c in clients:
        await c.aclose()
    return wall


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.1, help="injected server latency in seconds")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from collapse_probe.models import GenerationRequest
    from collapse_probe.models.openai import make_openai_compatible_model

    port = _free_port()
    ready = multiprocessing.Event()
    server = multiprocessing.Process(target=_serve, args=(port, args.latency, ready), daemon=True)
    server.start()
    try:
        ready.wait(10)
        spec = f"openai-compatible/bench@http://127.0.0.1:{port}/v1"
        model = make_openai_compatible_model(spec, spec.split("/", 1)[1], concurrency=args.concurrency)
        requests = [GenerationRequest(({"role": "user", "content": f"q{i}"},)) for i in range(args.requests)]
        ideal = args.requests / args.concurrency * args.latency
        walls = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            results = asyncio.run(model.generate(requests))
            walls.append(time.perf_counter() - t0)
            bad = [r.error for r in results if not r.ok]
            if bad:
                raise SystemExit(f"{len(bad)} requests failed, e.g. {bad[0]}")
            if [r.completions[0].text for r in results] != [f"q{i}" for i in range(args.requests)]:
                raise SystemExit("answers came back out of order")
        floors = [asyncio.run(_raw_floor(port, args.requests, args.concurrency)) for _ in range(args.repeats)]
        refs = [asyncio.run(_httpx2_reference(port, args.requests, args.concurrency)) for _ in range(args.repeats)]
        best, median = min(walls), sorted(walls)[len(walls) // 2]
        floor = sorted(floors)[len(floors) // 2]
        ref = sorted(refs)[len(refs) // 2]
        import os

        print(f"requests={args.requests} concurrency={args.concurrency} latency={args.latency * 1000:.0f} ms")
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"wall (median of {args.repeats}) = {median:.3f} s   best = {best:.3f} s   ideal = {ideal:.3f} s")
        print(f"ratio = {median / ideal:.3f} (median)  {best / ideal:.3f} (best)   target <= 1.2")
        print(f"reference: bare httpx2 clients, same pools, take {ref:.3f} s (ratio {ref / ideal:.3f})")
        print(f"floor: a bare asyncio client takes {floor:.3f} s (ratio {floor / ideal:.3f}) on this machine now")
    finally:
        server.terminate()
        server.join()


if __name__ == "__main__":
    main()
