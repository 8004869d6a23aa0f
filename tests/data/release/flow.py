# release/flow.py: the reference twin of flow.yaml (parallel states, nested one level)
from stateous import END, START, Workflow

from schemas import Audit, Findings, Review, Ticket


def review(name):
    child = Workflow(name, context=Review)
    triage = child.state("triage")
    approved = child.state("approved")
    rejected = child.state("rejected")
    lgtm = child.event("lgtm")
    deny = child.event("deny", payload=Findings)
    recorded = child.event("recorded")
    child.transition(START, triage)
    child.transition(triage, approved, on=lgtm)
    child.transition(triage, rejected, on=deny)
    child.transition(approved, END, on=recorded)
    child.transition(rejected, END, on=recorded)
    return child


security = review("security")
design = review("design")

lint = Workflow("lint", context=Audit)
check = lint.state("check")
ok = lint.event("ok")
lint.transition(START, check)
lint.transition(check, END, on=ok)

audit = Workflow("audit", context=Audit)
scan = audit.state("scan", parallel=[lint], inputs=["repo"])
audit.transition(START, scan)
audit.transition(scan, END, on="joined")

flow = Workflow("release", context=Ticket)

coding = flow.state("coding")
reviews = flow.state(
    "reviews", parallel=[security, design], join="all", inputs=["repo", "branch"], timeout="1h"
)
race = flow.state("race", parallel=[security, design], join="any", inputs=["repo", "branch"])
nested = flow.state("nested", parallel=[audit], inputs=["repo"])
quick = flow.state("quick", parallel=[security, design], inputs=["repo", "branch"], timeout="2s")
merging = flow.state("merging")
blocked = flow.state("blocked")

done = flow.event("done")
hurry = flow.event("hurry")
deep = flow.event("deep")
abandon = flow.event("abandon")
rush = flow.event("rush")
merged = flow.event("merged")

flow.transition(START, coding)
flow.transition(coding, reviews, on=done)
flow.transition(coding, race, on=hurry)
flow.transition(coding, nested, on=deep)
flow.transition(coding, quick, on=rush)
flow.transition(
    reviews,
    merging,
    on="joined",
    when="branches.all(status == 'completed' and final == 'approved')",
)
flow.transition(reviews, coding, on="joined", otherwise=True)
flow.transition(reviews, blocked, on="timeout")
flow.transition(reviews, coding, on=abandon)
flow.transition(race, merging, on="joined", when="branches.any(status == 'completed')")
flow.transition(nested, merging, on="joined")
flow.transition(quick, merging, on="joined")
flow.transition(quick, blocked, on="timeout")
flow.transition(merging, END, on=merged)
flow.transition(blocked, coding, on=done)
