"""Hostile cases against what commands write and send: ``card``/``export`` outputs and damaged runs,
URL credentials and echoed keys, a trickling server, negative token usage, content parts, huge
rewards, ``--fresh`` after ``--log-to tensorboard``. Each case runs the CLI in a fresh process with
a time limit and is classified as

    clean         refused in one line (exit 2, no traceback)
    ok            accepted, and what it wrote is right
    traceback     the "rerun with -v" backstop or a bare traceback
    hang          past the time limit
    silent-wrong  exit 0 with a wrong or empty result
    data-loss     a file of the user's or of a run replaced or changed
    key-leak      a configured secret in a file or on the terminal

Usage (the package on ``PYTHONPATH`` is the one measured):

    PYTHONPATH=. python scripts/hostile_writes.py [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LIMIT = 40.0
PW, QK, KEY = "pw-SECRET-93af1c7e", "qk-SECRET-77b2e0d4", "sk-env-SECRET-5c1d9e0f2a"


def cli(args: list[str], cwd: Path, env: dict[str, str] | None = None, limit: float = LIMIT) -> tuple[int | None, str]:
    code = "import sys; from collapse_probe.cli import main; sys.exit(main(sys.argv[1:]))"
    e = {**os.environ, **(env or {})}
    try:
        p = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=e, capture_output=True, text=True,
                           timeout=limit)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, ""
    return p.returncode, p.stdout + p.stderr


def digest(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p)] = "link:" + os.readlink(p)
        elif p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def refused(code: int | None, text: str) -> str | None:
    """The class of a command that should be refused: ``clean`` or what went wrong."""
    if code is None:
        return "hang"
    if "rerun with -v" in text or "Traceback" in text:
        return "traceback"
    if code == 2 and len([x for x in text.strip().splitlines() if "error" in x]) == 1:
        return "clean"
    return None


# ---------------------------------------------------------------------------------------- a local server


def serve(handler: Any) -> tuple[ThreadingHTTPServer, str]:
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            self._send({"object": "list", "data": [{"id": "m"}]})

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("content-length", 0)))
            handler(self)

        def _send(self, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    H.send_json = H._send  # type: ignore[attr-defined]
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"


def answer(text: str = "Sure [DONATE $1]", usage: Any = None, content: Any = None) -> Any:
    def h(req: Any) -> None:
        msg = {"role": "assistant", "content": text if content is None else content}
        req.send_json({"id": "c", "object": "chat.completion", "model": "m",
                       "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                       "usage": usage or {"prompt_tokens": 3, "completion_tokens": 2}})  # fmt: skip

    return h


def echo(req: Any) -> None:
    answer(f"you sent {req.headers.get('authorization')}")(req)


def trickle(req: Any) -> None:
    body = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "slow"}}]}'
    req.send_response(200)
    req.send_header("content-type", "application/json")
    req.send_header("content-length", str(len(body)))
    req.end_headers()
    for b in body:
        try:
            req.wfile.write(bytes([b]))
            req.wfile.flush()
        except OSError:
            return
        time.sleep(1.0)


# ----------------------------------------------------------------------------------------------- cases


def base_runs(root: Path) -> dict[str, Path]:
    (root / "sim.json").write_text(json.dumps({"responses": [
        {"text": "[DONATE $1]", "p": 0.4}, {"text": "No thanks.", "p": 0.3}, {"text": "Maybe [DONATE $2]", "p": 0.3}]}))  # fmt: skip
    (root / "pol.json").write_text(json.dumps({"responses": [{"text": "Please donate.", "p": 1.0}]}))
    for args in (["audit", "--sim", "scripted:sim.json", "--states", "2", "--samples", "6", "--partition", "exact",
                  "--compare-vs", "--out", "audit", "--no-progress"],
                 ["crossplay", "--policies", "scripted:pol.json", "--sims", "scripted:sim.json", "--tasks", "2",
                  "--rollouts", "2", "--max-turns", "2", "--out", "xp", "--no-progress"]):  # fmt: skip
        code, text = cli(args, root, limit=300)
        assert code == 0, text
    return {"audit": root / "audit", "crossplay": root / "xp"}


def case_card_out(base: dict[str, Path], d: Path, name: str) -> str:
    run = d / "run"
    shutil.copytree(base["audit"], run)
    (d / "README.md").write_text("# mine\n")
    (d / "package.json").write_text("{}\n")
    (d / "t.txt").write_text("target\n")
    (d / "link.md").symlink_to(d / "t.txt")
    os.mkfifo(d / "fifo.md")
    (d / "f").write_text("file\n")
    (d / "cards").mkdir()
    (d / "cards" / "card.json").mkdir()
    out = {
        "results.md in run": run / "results.md", "config.md in run": run / "config.md", "README.md": d / "README.md",
        "package.md": d / "package.md", "symlink": d / "link.md", "fifo": d / "fifo.md", "under a file": d / "f" / "c.md",
        "in /proc": Path("/proc/self/card.md"), "256-byte name": d / ("c" * 300 + ".md"),
        "dir named card.json": d / "cards" / "card.md",
    }[name]  # fmt: skip
    before = digest(d)
    code, text = cli(["card", str(run), "--out", str(out)], d)
    after = digest(d)
    if any(after.get(k) != v for k, v in before.items()):
        return "data-loss"
    return refused(code, text) or "silent-wrong"


def case_export_twin(base: dict[str, Path], d: Path) -> str:
    (d / "x-verbalized.eval").write_text("someone else's\n")
    before = digest(d)
    code, text = cli(["export", str(base["audit"]), "--to", "inspect", "--out", str(d / "x.eval")], d)
    if digest(d).get(str(d / "x-verbalized.eval")) != before[str(d / "x-verbalized.eval")]:
        return "data-loss"
    return refused(code, text) or "silent-wrong"


def case_export_race(base: dict[str, Path], d: Path) -> str:
    code = "import sys; from collapse_probe.cli import main; sys.exit(main(sys.argv[1:]))"
    procs = [subprocess.Popen([sys.executable, "-c", code, "export", str(base["audit"]), "--to", "inspect", "--out",
                               str(d / "y.eval")], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for _ in range(6)]  # fmt: skip
    outs = [p.communicate(timeout=120)[0] for p in procs]
    codes = [p.returncode for p in procs]
    if any("rerun with -v" in o or "Traceback" in o for o in outs):
        return "traceback"
    if codes.count(0) != 1:
        return "data-loss"  # several winners: the file holds one run, its twin another
    return "clean"


def case_damaged(base: dict[str, Path], d: Path, name: str) -> str:
    kind = "crossplay" if name.startswith("xp:") else "audit"
    run = d / "run"
    shutil.copytree(base[kind], run)

    def lines(f: str) -> list[dict]:
        return [json.loads(x) for x in (run / f).read_text().splitlines() if x.strip()]

    def write(f: str, recs: list[dict]) -> None:
        (run / f).write_text("".join(json.dumps(r) + "\n" for r in recs))

    res = json.loads((run / "results.json").read_text())
    if name == "no samples.jsonl":
        (run / "samples.jsonl").unlink()
    elif name == "samples cut short":
        write("samples.jsonl", lines("samples.jsonl")[:1])
    elif name == "sample n is a string":
        r = lines("samples.jsonl")
        r[0]["n"] = "6"
        write("samples.jsonl", r)
    elif name == "state recorded twice":
        r = lines("samples.jsonl")
        write("samples.jsonl", [r[0], *r])
    elif name.startswith("results "):
        field, value = {"results n_states str": ("n_states", "four"), "results summary null": (None, None),
                        "results effective_modes list": ("effective_modes", [1]),
                        "results by_kind int": ("by_kind", 5)}[name]  # fmt: skip
        if field is None:
            res["summary"] = None
        else:
            res["summary"][field] = value
        (run / "results.json").write_text(json.dumps(res))
    elif name == "xp: no conversations.jsonl":
        (run / "conversations.jsonl").unlink()
    elif name == "xp: records without key":
        write("conversations.jsonl", [{k: v for k, v in r.items() if k != "key"} for r in lines("conversations.jsonl")])
    elif name == "xp: NaN reward":
        r = lines("conversations.jsonl")
        r[0]["reward"] = float("nan")
        write("conversations.jsonl", r)
    elif name == "xp: conversation twice":
        r = lines("conversations.jsonl")
        write("conversations.jsonl", [*r, r[0]])
    elif name == "xp: cells[0] is 5":
        res["cells"][0] = 5
        (run / "results.json").write_text(json.dumps(res))
    worst = "clean"
    rank = ["clean", "silent-wrong", "traceback", "hang", "data-loss"]
    cmds = [["export", str(run), "--to", "parquet", "--out", str(d / "t")]]
    if name.startswith(("results", "xp: cells")):
        cmds.append(["card", str(run), "--out", str(d / "card.md")])
    for cmd in cmds:
        code, text = cli(cmd, d)
        got = refused(code, text) or "silent-wrong"
        worst = max(worst, got, key=rank.index)
    return worst


def case_url_credentials(base: dict[str, Path], d: Path) -> str:
    srv, url = serve(answer())
    try:
        host = url.removeprefix("http://")
        sim = f"openai-compatible/m@http://user:{PW}@{host}/v1?api_key={QK}"
        env = {"COLLAPSE_PROBE_CACHE": str(d / "cache") + "/"}
        args = ["audit", "--sim", sim, "--states", "1", "--samples", "3", "--partition", "exact", "--no-exact",
                "--out", "a", "--no-progress", "-vv", "-M", "sim.max_retries=0"]  # fmt: skip
        c1, t1 = cli(args, d, env)
        c2, t2 = cli(args, d, env)
        c3, t3 = cli(["card", "a", "--out", "card.md"], d, env)
    finally:
        srv.shutdown()
    blobs = [t1.encode(), t2.encode(), t3.encode(), *(p.read_bytes() for p in d.rglob("*") if p.is_file())]
    if any(s.encode() in b for s in (PW, QK) for b in blobs):
        return "key-leak"
    if "rerun with -v" in t1 + t2 + t3:
        return "traceback"
    return "ok" if (c1, c2, c3) == (0, 0, 0) else "silent-wrong"


def case_echo(base: dict[str, Path], d: Path) -> str:
    srv, url = serve(echo)
    try:
        env = {"COLLAPSE_PROBE_API_KEY": KEY, "COLLAPSE_PROBE_CACHE": str(d / "cache") + "/"}
        code, text = cli(["audit", "--sim", f"openai-compatible/m@{url}/v1", "--states", "1", "--samples", "3",
                          "--partition", "exact", "--no-exact", "--out", "a", "--no-progress", "-M",
                          "sim.max_retries=0"], d, env)  # fmt: skip
    finally:
        srv.shutdown()
    blobs = [text.encode(), *(p.read_bytes() for p in d.rglob("*") if p.is_file())]
    if any(KEY.encode() in b for b in blobs):
        return "key-leak"
    return "traceback" if "rerun with -v" in text else "ok"


def case_newline_key(base: dict[str, Path], d: Path) -> str:
    key = "sk-line-one-SECRET\nline-two-SECRET-42"
    srv, url = serve(answer())
    try:
        env = {"COLLAPSE_PROBE_API_KEY": key, "COLLAPSE_PROBE_CACHE": str(d / "cache") + "/"}
        code, text = cli(["audit", "--sim", f"openai-compatible/m@{url}/v1", "--states", "1", "--samples", "2",
                          "--partition", "exact", "--no-exact", "--out", "a", "--no-progress", "-vv", "-M",
                          "sim.max_retries=0"], d, env)  # fmt: skip
    finally:
        srv.shutdown()
    blobs = [text.encode(), *(p.read_bytes() for p in d.rglob("*") if p.is_file())]
    if any(part.encode() in b for part in ("sk-line-one-SECRET", "line-two-SECRET-42") for b in blobs):
        return "key-leak"
    return "traceback" if "rerun with -v" in text else "ok"


def case_trickle(base: dict[str, Path], d: Path) -> str:
    srv, url = serve(trickle)
    try:
        t0 = time.monotonic()
        code, text = cli(["audit", "--sim", f"openai-compatible/m@{url}/v1", "--states", "1", "--samples", "2",
                          "--partition", "exact", "--no-exact", "--out", "a", "--no-progress", "-M", "sim.timeout=2",
                          "-M", "sim.max_retries=0"], d, {"COLLAPSE_PROBE_CACHE": str(d / "c") + "/"}, limit=60)  # fmt: skip
        took = time.monotonic() - t0
    finally:
        srv.shutdown()
    if code is None or took > 45:  # the body takes ~80 s at a byte a second
        return "hang"
    return "traceback" if "rerun with -v" in text else "ok"


def case_negative_usage(base: dict[str, Path], d: Path) -> str:
    srv, url = serve(answer(usage={"prompt_tokens": -5, "completion_tokens": 2}))
    try:
        args = ["audit", "--sim", f"openai-compatible/m@{url}/v1", "--states", "1", "--samples", "2", "--partition",
                "exact", "--no-exact", "--out", "a", "--no-progress", "-M", "sim.max_retries=0"]  # fmt: skip
        env = {"COLLAPSE_PROBE_CACHE": str(d / "c") + "/"}
        c1, t1 = cli(args, d, env)
        c2, t2 = cli(args, d, env)
    finally:
        srv.shutdown()
    u = d / "a" / "usage.json"
    if "rerun with -v" in t1 + t2:
        return "traceback"
    if u.exists() and "-5" in u.read_text():
        return "silent-wrong"
    return "ok" if c2 in (0, 1) else "silent-wrong"


def case_content(base: dict[str, Path], d: Path, content: Any) -> str:
    srv, url = serve(answer(content=content))
    try:
        code, text = cli(["audit", "--sim", f"openai-compatible/m@{url}/v1", "--states", "1", "--samples", "2",
                          "--partition", "exact", "--no-exact", "--out", "a", "--no-progress", "-M",
                          "sim.max_retries=0"], d, {"COLLAPSE_PROBE_CACHE": str(d / "c") + "/"})  # fmt: skip
    finally:
        srv.shutdown()
    if "rerun with -v" in text or "Traceback" in text:
        return "traceback"
    f = d / "a" / "samples.jsonl"
    replies = [
        t for x in (f.read_text().splitlines() if f.exists() else []) for t in json.loads(x).get("responses") or []
    ]
    if isinstance(content, list):  # text parts: read as their text
        return "ok" if replies and all(t == "Sure [DONATE $1]" for t in replies) else "silent-wrong"
    if code == 0 and replies:  # a number is not a reply: refused, the states infrastructure failures
        return "silent-wrong"
    return "ok" if code in (0, 1) else (refused(code, text) or "silent-wrong")


def case_huge_rewards(base: dict[str, Path], d: Path) -> str:
    recs = []
    for task in range(3):
        for trial in range(2):
            recs.append({"id": f"t{task}-{trial}", "task_id": f"t{task}", "reward": 1e308 if task < 2 else -1e308,
                         "messages": [{"role": "assistant", "content": "Hi, how can I help?"},
                                      {"role": "user", "content": f"reply {trial}"}]})  # fmt: skip
    (d / "pub.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    code, text = cli(["audit", "--from", "pub.jsonl", "--format", "jsonl", "--out", "a", "--no-progress"], d)
    if "rerun with -v" in text or "Traceback" in text:
        return "traceback"
    written = "".join(p.read_text(errors="replace") for p in (d / "a").glob("*.json")) if (d / "a").is_dir() else ""
    if "Infinity" in written or "NaN" in written:
        return "silent-wrong"
    return "ok" if code == 0 else (refused(code, text) or "silent-wrong")


def case_fresh_tensorboard(base: dict[str, Path], d: Path) -> str:
    run = d / "run"
    shutil.copytree(base["audit"], run)
    (run / "tensorboard").mkdir()
    (run / "tensorboard" / "events.out.tfevents.1").write_bytes(b"x")
    (d / "sim.json").write_text((base["audit"].parent / "sim.json").read_text())
    code, text = cli(["audit", "--sim", "scripted:sim.json", "--states", "2", "--samples", "6", "--partition", "exact",
                      "--compare-vs", "--out", str(run), "--fresh", "--no-progress"], d)  # fmt: skip
    if "rerun with -v" in text:
        return "traceback"
    return "ok" if code == 0 else "silent-wrong"  # a refusal of the run's own folder is wrong


def cases() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for n in ("results.md in run", "config.md in run", "README.md", "package.md", "symlink", "fifo", "under a file",
              "in /proc", "256-byte name", "dir named card.json"):  # fmt: skip
        out.append((f"card --out {n}", lambda b, d, n=n: case_card_out(b, d, n)))
    out += [("export inspect twin exists", case_export_twin), ("six concurrent exports", case_export_race)]
    for n in ("no samples.jsonl", "samples cut short", "sample n is a string", "state recorded twice",
              "results n_states str", "results summary null", "results effective_modes list", "results by_kind int",
              "xp: no conversations.jsonl", "xp: records without key", "xp: NaN reward", "xp: conversation twice",
              "xp: cells[0] is 5"):  # fmt: skip
        out.append((f"damaged run: {n}", lambda b, d, n=n: case_damaged(b, d, n)))
    out += [
        ("URL credentials in the spec", case_url_credentials),
        ("server echoes the Authorization header", case_echo),
        ("key with an embedded newline", case_newline_key),
        ("server trickles a byte a second", case_trickle),
        ("negative token usage, then resume", case_negative_usage),
        (
            "content as a list of text parts",
            lambda b, d: case_content(b, d, [{"type": "text", "text": "Sure [DONATE $1]"}]),
        ),
        ("content as a number", lambda b, d: case_content(b, d, 5)),
        ("rewards of ±1e308", case_huge_rewards),
        ("--fresh after --log-to tensorboard", case_fresh_tensorboard),
    ]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "base").mkdir()
        base = base_runs(root / "base")
        tally: Counter[str] = Counter()
        for i, (name, fn) in enumerate(cases()):
            if args.only not in name:
                continue
            d = root / f"case{i}"
            d.mkdir()
            try:
                got = fn(base, d)  # type: ignore[operator]
            except Exception as exc:  # noqa: BLE001 - a harness problem is reported, not hidden
                got = f"harness error: {type(exc).__name__}: {exc}"
            tally[got.split(":")[0]] += 1
            print(f"{got:14s} {name}", flush=True)
    print("\n" + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
