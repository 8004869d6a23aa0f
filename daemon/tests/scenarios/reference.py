"""Runs each scenario on the reference control plane (Python stateous 0.2.2) and
writes what it answered and wrote: `<scenario>.expected.json`.

Run with the reference's Python: /tmp/refvenv/bin/python reference.py"""
import json
import sqlite3
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from stateous.control.api import token_json
from stateous.control.engine import Engine, EngineError
from stateous.control.graph import Graph
from stateous.control.store import Store
from stateous.model.wire import Outcome, WireError

HERE = Path(__file__).parent
START = datetime(2026, 10, 6, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self):
        self.now = START

    def __call__(self):
        return self.now


def answer(engine, clock, step):
    op = step["op"]
    if op == "start":
        return token_json(engine.start(step["token"], step["context"]))
    if op == "fire":
        fired = engine.fire(step["token"], step["event"], step.get("payload"), key=step.get("key"))
        return {"duplicate": fired.duplicate, "token": token_json(fired.token)}
    if op == "claim":
        grant = engine.claim(step["supervisor"], step["states"], request=step.get("request"))
        return None if grant is None else grant.to_json()
    if op == "report":
        outcome = Outcome.from_json(step["outcome"])
        fired = engine.report(step["task"], outcome, supervisor=step.get("supervisor"))
        return token_json(fired.token)
    if op == "heartbeat":
        return {"lost": engine.heartbeat(step["supervisor"], step["tasks"])}
    if op == "note":
        engine.note(step["task"], step["text"], attempt=step.get("attempt"))
        return None
    if op == "memory":
        engine.set_memory(step["task"], step["key"], step["value"], attempt=step.get("attempt"))
        return None
    if op in ("pause", "resume", "cancel"):
        return token_json(getattr(engine, op)(step["token"]))
    if op == "token":
        return token_json(engine.get(step["token"]))
    if op == "tokens":
        found = engine.tokens(
            status=step.get("status"), limit=step.get("limit", 100), parent=step.get("parent")
        )
        return [token_json(t) for t in found]
    if op == "history":
        return [
            {"seq": e.seq, "at": iso(e.at), "kind": e.kind, "data": e.data}
            for e in engine.history(step["token"])
        ]
    if op == "advance":
        clock.now += timedelta(seconds=step["seconds"])
        return None
    if op == "tick":
        engine.tick()
        return None
    raise ValueError(op)


def iso(moment):
    return moment.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z")


def stored(text):
    """A stored time (`2026-10-06 09:00:00.000000`) as ISO with `Z`."""
    if text is None:
        return None
    return iso(datetime.fromisoformat(text))


def tables(path):
    db = sqlite3.connect(path)
    ledger = [
        {"token": t, "seq": s, "at": stored(a), "kind": k, "key": key, "data": json.loads(d)}
        for t, s, a, k, key, d in db.execute(
            "SELECT token, seq, at, kind, key, data FROM ledger ORDER BY token, seq"
        )
    ]
    tasks = [
        dict(zip(("id", "token", "state", "visit", "status", "attempt", "claimed_by"), row[:7]),
             lease_until=stored(row[7]), queued_at=stored(row[8]))
        for row in db.execute(
            "SELECT id, token, state, visit, status, attempt, claimed_by, lease_until, queued_at "
            "FROM tasks ORDER BY id"
        )
    ]
    timers = [
        {"id": i, "token": t, "state": s, "visit": v, "event": e,
         "payload": None if p is None else json.loads(p),
         "set_at": stored(sa), "due_at": stored(da), "status": st, "kind": k}
        for i, t, s, v, e, p, sa, da, st, k in db.execute(
            "SELECT id, token, state, visit, event, payload, set_at, due_at, status, kind "
            "FROM timers ORDER BY id"
        )
    ]
    memory = [
        {"token": t, "state": s, "key": k, "value": json.loads(v)}
        for t, s, k, v in db.execute("SELECT token, state, key, value FROM memory ORDER BY 1, 2, 3")
    ]
    claims = [
        {"supervisor": s, "request": r, "task_id": t, "attempt": a}
        for s, r, t, a in db.execute("SELECT supervisor, request, task_id, attempt FROM claims ORDER BY 1")
    ]
    return {"ledger": ledger, "tasks": tasks, "timers": timers, "memory": memory, "claims": claims}


def run(path):
    scenario = json.loads(path.read_text())
    graph = Graph(json.loads((HERE.parent / "graphs" / f"{scenario['graph']}.json").read_text()))
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "ref.db"
        clock = Clock()
        engine = Engine(Store(f"sqlite:///{db}"), graph, clock=clock)
        answers = []
        for step in scenario["steps"]:
            try:
                answers.append({"ok": answer(engine, clock, step)})
            except EngineError as error:
                answers.append({"code": error.code, "error": str(error)})
            except WireError as error:
                answers.append({"code": "invalid_body", "error": str(error)})
        engine.store.engine.dispose()
        expected = {"answers": answers, **tables(db)}
    out = path.with_suffix(".expected.json")
    out.write_text(json.dumps(expected, indent=1) + "\n")
    print("wrote", out.name)


if __name__ == "__main__":
    names = sys.argv[1:]
    for path in sorted(HERE.glob("*.json")):
        if path.name.endswith(".expected.json"):
            continue
        if not names or path.stem in names:
            run(path)
