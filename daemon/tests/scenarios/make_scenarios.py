"""Writes the scenario files that the reference runner and the Rust tests share.

Each scenario is a graph name and a list of steps; `reference.py` runs them on
the reference engine (Python stateous 0.2.2) and writes the expected answers,
ledger rows, tasks and timers beside them."""
import json
from pathlib import Path

HERE = Path(__file__).parent
T = {"repo": "acme/api"}
PASSED = {"passed": 4, "failed": 0}
FAILED = {"passed": 3, "failed": 1}


def ev(task, event, payload=None, sup="box-1", attempt=None, context=None, schedules=None):
    outcome = {"kind": "event", "event": event}
    if payload is not None:
        outcome["payload"] = payload
    if context:
        outcome["context"] = context
    if schedules:
        outcome["schedules"] = schedules
    if attempt is not None:
        outcome["attempt"] = attempt
    return {"op": "report", "task": task, "outcome": outcome, "supervisor": sup}


def failed(task, error, sup="box-1", attempt=None):
    outcome = {"kind": "failed", "error": error}
    if attempt is not None:
        outcome["attempt"] = attempt
    return {"op": "report", "task": task, "outcome": outcome, "supervisor": sup}


def waiting(task, sup="box-1", context=None, schedules=None):
    outcome = {"kind": "waiting", "context": context or {}, "schedules": schedules or []}
    return {"op": "report", "task": task, "outcome": outcome, "supervisor": sup}


def claim(states, sup="box-1", request=None):
    step = {"op": "claim", "supervisor": sup, "states": states}
    if request is not None:
        step["request"] = request
    return step


def start(token, context):
    return {"op": "start", "token": token, "context": context}


def fire(token, event, payload=None, key=None):
    step = {"op": "fire", "token": token, "event": event}
    if payload is not None:
        step["payload"] = payload
    if key is not None:
        step["key"] = key
    return step


def op(name, **args):
    return {"op": name, **args}


SCENARIOS = {
    "orders_worked_example": ("orders", [
        start("ORDER-1", {"title": "first order"}),
        claim(["draft", "review"], request="r1"),
        ev(1, "submitted"),
        claim(["draft", "review"], request="r2"),
        ev(2, "reviewed", {"approved": True, "note": ""}),
        claim(["draft", "review"], request="r3"),
        op("token", token="ORDER-1"),
    ]),
    "orders_refusals": ("orders", [
        start("ORDER-1", {"title": "a"}),
        start("ORDER-1", {"title": "other"}),
        start("order-1", {"title": "a"}),
        start("-bad", {"title": "a"}),
        start("x" * 129, {"title": "a"}),
        start("ORDER-2", {}),
        start("ORDER-3", {"title": 5}),
        fire("ORDER-1", "submitted", key="k-1"),
        fire("ORDER-1", "submitted", key="k-1"),
        fire("ORDER-1", "nope"),
        fire("ORDER-1", "timeout"),
        fire("ORDER-1", "__started__"),
        fire("ORDER-1", "submitted"),
        fire("ORDER-1", "reviewed", {"approved": "yes"}),
        fire("ORDER-1", "reviewed", {"approved": False}, key="k-2"),
        fire("ORDER-1", "reviewed", {"approved": False}, key="k-1"),
        fire("ORDER-1", "submitted", key="k-3"),
        fire("ORDER-1", "reviewed", {"approved": True}, key="k-4"),
        fire("ORDER-1", "submitted", key="k-5"),
        fire("ORDER-1", "submitted", key="k-4"),
        fire("NOPE", "submitted"),
        fire("ORDER-1", "submitted", key=""),
        fire("ORDER-1", "submitted", key="x" * 257),
        op("cancel", token="ORDER-1"),
        op("pause", token="ORDER-1"),
        op("tokens", status="completed", limit=10),
        op("tokens", limit=10),
        op("history", token="NOPE"),
    ]),
    "orders_tasks": ("orders", [
        start("ORDER-1", {"title": "a"}),
        start("ORDER-2", {"title": "b"}),
        claim([]),
        claim(["review"]),
        claim(["draft"], request="same"),
        claim(["draft"], request="same"),
        op("advance", seconds=30),
        claim(["draft"], request="same"),
        claim(["draft"], sup="box-2", request="other"),
        claim(["draft"], sup="box-2"),
        op("heartbeat", supervisor="box-1", tasks=[1, 2, 99]),
        op("heartbeat", supervisor="box-2", tasks=[2]),
        op("note", task=1, text="  working on it  "),
        op("note", task=1, text="   "),
        op("note", task=1, text="y" * 501),
        op("note", task=99, text="hi"),
        op("note", task=1, text="old", attempt=2),
        op("memory", task=1, key="cursor", value={"page": 3}),
        op("memory", task=1, key="cursor", value=None),
        op("memory", task=1, key="cursor", value=None),
        op("memory", task=1, key="left", value=[1, 2]),
        op("memory", task=1, key="", value=1),
        ev(1, "submitted", sup="box-2"),
        ev(1, "reviewed", {"approved": True}),
        ev(1, "submitted", attempt=2),
        ev(1, "submitted"),
        ev(1, "submitted"),
        claim(["review"], request="r"),
        ev(3, "reviewed", {"approved": False}, context={"title": 7}),
        ev(3, "reviewed", {"approved": False}, context={"title": "renamed"}),
        claim(["draft"], request="q"),
        waiting(4),
        {"op": "report", "task": 4, "outcome": {"kind": "waiting"}},
        {"op": "report", "task": 4, "outcome": {"kind": "event", "event": "submitted"}},
        op("heartbeat", supervisor="box-1", tasks=[4]),
        op("advance", seconds=200),
        op("tick"),
        op("history", token="ORDER-2"),
    ]),
    "sdlc_leases_and_retries": ("sdlc", [
        start("T-1", T),
        claim(["coding"], sup="build-box-1"),
        op("advance", seconds=119),
        op("tick"),
        op("advance", seconds=2),
        op("heartbeat", supervisor="build-box-1", tasks=[1]),
        op("tick"),
        claim(["coding"], sup="build-box-1"),
        ev(1, "done", sup="build-box-1", attempt=1),
        failed(1, "boom", sup="build-box-1"),
        claim(["coding"], sup="build-box-2"),
        op("advance", seconds=60),
        op("heartbeat", supervisor="build-box-2", tasks=[1]),
        op("advance", seconds=100),
        op("tick"),
        failed(1, "", sup="build-box-2", attempt=3),
        op("token", token="T-1"),
    ]),
    "sdlc_timeout_and_count": ("sdlc", [
        start("T-1", T),
        start("T-2", T),
        claim(["coding"]),
        ev(1, "done", schedules=[{"event": "done", "after": "10m"}]),
        claim(["testing"]),
        ev(3, "failed", FAILED),
        claim(["coding"]),
        ev(4, "done"),
        claim(["testing"]),
        ev(5, "failed", FAILED),
        claim(["coding"]),
        ev(6, "done"),
        claim(["testing"]),
        ev(7, "failed", FAILED),
        op("advance", seconds=3600 + 1),
        op("tick"),
        op("advance", seconds=6 * 3600),
        op("tick"),
        op("history", token="T-1"),
    ]),
    "sdlc_pause_resume": ("sdlc", [
        start("T-1", T),
        claim(["coding"]),
        op("memory", task=1, key="k", value="v"),
        op("advance", seconds=600),
        op("pause", token="T-1"),
        op("pause", token="T-1"),
        claim(["coding"]),
        ev(1, "done", context={"repo": "acme/web"}, schedules=[{"event": "stuck", "after": "1m"}]),
        fire("T-1", "stuck", key="k-1"),
        fire("T-1", "stuck", key="k-1"),
        fire("T-1", "nope"),
        op("advance", seconds=7 * 3600),
        op("tick"),
        op("resume", token="T-1"),
        op("resume", token="T-1"),
        op("advance", seconds=30),
        op("tick"),
        op("advance", seconds=31),
        op("tick"),
        op("token", token="T-1"),
        start("T-2", T),
        op("pause", token="T-2"),
        fire("T-2", "done"),
        fire("T-2", "stuck"),
        op("cancel", token="T-2"),
        op("resume", token="T-2"),
        start("T-3", T),
        claim(["coding"]), failed(4, "x"), claim(["coding"]), failed(4, "y"), claim(["coding"]),
        op("pause", token="T-3"),
        failed(4, "z"),
        op("resume", token="T-3"),
        start("T-4", T),
        op("advance", seconds=3600),
        op("pause", token="T-4"),
        op("advance", seconds=7200),
        op("resume", token="T-4"),
        claim(["coding"]),
        waiting(5, schedules=[{"event": "stuck", "after": "30s"}]),
        op("pause", token="T-4"),
        op("advance", seconds=60),
        op("tick"),
        op("resume", token="T-4"),
        op("advance", seconds=31),
        op("tick"),
        op("history", token="T-4"),
    ]),
    "triage_errors_and_timeouts": ("triage", [
        start("U-1", {"repo": "a", "urgent": True}),
        start("U-2", {"repo": "a"}),
        start("U-3", {}),
        claim(["triage"]),
        ev(1, "triaged"),
        claim(["coding"]),
        failed(3, "one"),
        claim(["coding"]),
        failed(3, "two"),
        claim(["coding"]),
        failed(3, "three"),
        op("advance", seconds=6 * 3600),
        op("tick"),
        op("history", token="U-2"),
        claim(["coding", "triage"]),
        op("cancel", token="U-1"),
        op("history", token="U-1"),
    ]),
    "triage_error_route_timers_and_outside_reports": ("triage", [
        start("E-1", T),
        claim(["coding"]), failed(1, "a"), claim(["coding"]), failed(1, "b"),
        claim(["coding"]), failed(1, "c"),
        fire("E-1", "triaged", {"x": 1}),
        fire("E-1", "triaged"),
        claim(["coding"]),
        waiting(3, context={"rejected": 1}, schedules=[
            {"event": "triaged", "after": "1m"}, {"event": "stuck", "after": "5m"}]),
        {"op": "report", "task": 3, "outcome": {"kind": "event", "event": "stuck",
                                                  "schedules": [{"event": "nope", "after": "1m"}]}},
        {"op": "report", "task": 3, "outcome": {"kind": "event", "event": "stuck",
                                                  "schedules": [{"event": "timeout", "after": "1m"}]}},
        {"op": "report", "task": 3, "outcome": {"kind": "event", "event": "stuck",
                                                  "schedules": [{"event": "failed", "after": "1m"}]}},
        op("advance", seconds=61),
        op("tick"),
        {"op": "report", "task": 3, "outcome": {"kind": "event", "event": "done"}},
        claim(["testing"]),
        ev(4, "failed", FAILED, schedules=[{"event": "passed", "payload": PASSED, "after": "2m"}]),
        op("advance", seconds=300),
        op("tick"),
        op("token", token="E-1"),
        op("memory", task=4, key="k", value=1),
    ]),
    "overlapping_guards": ("overlap", [
        start("O-1", {"title": "a"}),
        start("O-2", {"title": "b"}),
        fire("O-2", "submitted"),
        fire("O-2", "reviewed", {"approved": True, "note": ""}),
        fire("O-2", "reviewed", {"approved": False}),
        start("O-3", {"title": "c"}),
        fire("O-3", "reviewed", {"approved": False, "note": "x"}),
        op("history", token="O-3"),
    ]),
    "release_joins": ("release", [
        start("R-1", {"repo": "acme/api"}),
        claim(["coding"]), ev(1, "done"),
        op("tokens", parent="R-1"),
        op("token", token="R-1.reviews.1.security"),
        claim(["security/triage"]), ev(2, "lgtm"),
        claim(["design/triage"]), ev(3, "deny", {"count": 2}),
        claim(["security/approved"]), ev(4, "recorded"),
        op("token", token="R-1"),
        claim(["design/rejected"]), ev(5, "recorded"),
        op("token", token="R-1"),
        fire("R-1", "hurry"),
        claim(["security/triage"]), failed(7, "boom"),
        op("token", token="R-1"),
        op("token", token="R-1.race.1.design"),
        start("R-2", {"repo": "acme/web", "branch": "dev"}),
        fire("R-2", "hurry"),
        claim(["design/triage"]), ev(11, "lgtm"),
        claim(["design/approved"]), ev(12, "recorded"),
        op("token", token="R-2"),
        op("tokens", parent="R-2"),
        fire("R-2", "joined"),
        start("x" * 110, {"repo": "a"}),
        fire("x" * 110, "done"),
        start("y" * 109, {"repo": "a"}),
        fire("y" * 109, "hurry"),
    ]),
    "release_steering": ("release", [
        start("S-1", {"repo": "acme/api"}),
        fire("S-1", "done"),
        claim(["security/triage"]),
        op("advance", seconds=3601),
        op("tick"),
        op("token", token="S-1"),
        op("heartbeat", supervisor="box-1", tasks=[2]),
        start("S-2", {"repo": "acme/api"}),
        fire("S-2", "done"),
        fire("S-2", "abandon"),
        start("S-3", {"repo": "acme/api"}),
        fire("S-3", "done"),
        op("cancel", token="S-3.reviews.1.security"),
        op("pause", token="S-3.reviews.1.design"),
        op("resume", token="S-3.reviews.1.design"),
        op("cancel", token="S-3"),
        op("tokens", parent="S-3"),
        start("S-4", {"repo": "acme/api"}),
        fire("S-4", "done"),
        claim(["security/triage"]),
        claim(["design/triage"]),
        op("advance", seconds=60),
        op("pause", token="S-4"),
        op("tokens", status="paused"),
        ev(14, "deny", {"count": 1}),
        op("advance", seconds=1),
        ev(13, "lgtm"),
        op("advance", seconds=1),
        fire("S-4", "abandon"),
        op("advance", seconds=60),
        op("resume", token="S-4"),
        op("resume", token="S-4"),
        op("token", token="S-4"),
        start("N-1", {"repo": "acme/api"}),
        fire("N-1", "deep"),
        op("pause", token="N-1"),
        claim(["lint/check"]),
        op("resume", token="N-1"),
        claim(["lint/check"]),
        op("token", token="N-1.nested.1.audit"),
        ev(19, "ok"),
        op("token", token="N-1.nested.1.audit"),
        op("token", token="N-1"),
        op("history", token="N-1.nested.1.audit.scan.1.lint"),
        op("tokens", parent="N-1.nested.1.audit"),
        start("N-2", {"repo": "acme/api"}),
        fire("N-2", "deep"),
        op("cancel", token="N-2"),
        start("z" * 64, {"repo": "a"}),
        fire("z" * 64, "deep"),        start("H-1", {"repo": "acme/api"}),
        fire("H-1", "hurry"),
        claim(["security/triage"]), ev(26, "lgtm"),
        claim(["security/approved"]),
        op("pause", token="H-1"),
        ev(28, "recorded"),
        fire("H-1", "done"),
        op("resume", token="H-1"),
        op("history", token="H-1"),
        start("H-2", {"repo": "acme/api"}),
        fire("H-2", "hurry"),
        claim(["design/triage"]), ev(32, "lgtm"),
        claim(["design/approved"]),
        op("pause", token="H-2"),
        fire("H-2", "done"),
        ev(33, "recorded"),
        op("cancel", token="H-2"),
        start("H-3", {"repo": "acme/api"}),
        fire("H-3", "hurry"),
        claim(["design/triage"]), ev(36, "lgtm"),
        claim(["design/approved"]),
        op("pause", token="H-3"),
        fire("H-3", "done"),
        ev(37, "recorded"),
        op("history", token="H-3"),
        op("resume", token="H-3"),
    ]),
    "instant_children": ("instant", [
        start("I-1", {"repo": "acme/api"}),
        fire("I-1", "done"),
        op("tokens", parent="I-1"),
        fire("I-1", "done"),
        op("tokens", parent="I-1"),
        op("advance", seconds=49 * 3600),
        op("tick"),
        op("token", token="I-1"),
        fire("I-1", "alone"),
        start("I-1.reviews.3.security", {"repo": "acme/api"}),
        start("I-2", {"repo": "acme/api"}),
        start("i-2.reviews.1.security", {"repo": "acme/api"}),
        fire("I-2", "done"),
        op("history", token="I-2"),
    ]),
}

for name, (graph, steps) in SCENARIOS.items():
    path = HERE / f"{name}.json"
    path.write_text(json.dumps({"graph": graph, "steps": steps}, indent=1) + "\n")
    print("wrote", path.name)
