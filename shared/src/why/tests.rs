//! The sentences of [`explain`]: one for each reason a token waits.

use serde_json::json;

use super::*;

fn why(state: &str, status: &str) -> Why {
    let token = serde_json::from_value(json!({"token": "C-1", "state": state,
        "status": status, "visit": 1, "context": {}, "entered_at": "2026-10-07T05:43:39Z"}))
    .unwrap();
    Why {
        token,
        moved: 60,
        reasons: Vec::new(),
        timeout: None,
        transitions: Vec::new(),
        timers: Vec::new(),
        task: None,
        supervisors: Vec::new(),
        stopped: Vec::new(),
        held: Vec::new(),
        rejected: None,
        failure: None,
        children: Vec::new(),
        join: None,
        budget: None,
        limits: Vec::new(),
    }
}

fn queued() -> WhyTask {
    WhyTask {
        task: 7,
        state: "review".into(),
        status: "queued".into(),
        attempt: 0,
        retries_left: 2,
        holder: None,
        lease_left: None,
        holder_heard: None,
        lease_renewed: None,
    }
}

fn supervisor(heard: f64, recent: bool) -> WhySupervisor {
    WhySupervisor {
        name: "box-1".into(),
        heard,
        recent,
    }
}

#[test]
fn a_queued_task_says_whether_a_supervisor_asks_for_its_state() {
    let mut facts = why("review", "active");
    facts.task = Some(queued());
    assert_eq!(
        explain(&facts),
        [
            "its task 7 is queued, and no supervisor that serves 'review' has been heard \
          from since this control plane started"
        ]
    );
    facts.supervisors = vec![supervisor(720.0, false)];
    assert_eq!(
        explain(&facts),
        [
            "its task 7 is queued, and no supervisor has asked for 'review' tasks in 12m \
          (box-1 was last heard from then)"
        ]
    );
    facts.supervisors = vec![supervisor(3.0, true)];
    assert_eq!(
        explain(&facts),
        [
            "its task 7 is queued (2 retries left); box-1 serves 'review' (heard from 3s \
          ago), so the task waits its turn"
        ]
    );
    // Held back by a limit, it says so, then why.
    let slot = "waiting for a slot of coding: 1 of 1 held by box-2, task 6";
    facts.limits = vec![slot.into()];
    assert_eq!(
        explain(&facts),
        [
            "its task 7 is queued (2 retries left); box-1 serves 'review' (heard from 3s \
          ago), but the task is held back, as said below",
            slot
        ]
    );
    // Held back by its retry policy's pause alone: no limit is named (it said
    // "a limit holds the task back").
    let pause = "its retry policy holds the next attempt until 2026-12-07T08:59:46Z (in 2 s)";
    facts.limits = vec![pause.into()];
    let said = explain(&facts);
    assert!(!said[0].contains("limit"), "{said:?}");
    assert_eq!(said[1], pause);
}

/// After a graceful stop the sentence said that no supervisor serving the state
/// had been heard from since the control plane started: it had, until it stopped.
#[test]
fn a_queued_task_says_when_the_supervisor_of_its_state_stopped() {
    let mut facts = why("review", "active");
    facts.task = Some(queued());
    facts.stopped = vec![WhyStopped {
        name: "vm".into(),
        stopped_at: "2026-10-07T05:44:00Z".into(),
        ago: 12.0,
    }];
    let stopped = "its task 7 is queued, and no supervisor serves 'review' now: vm stopped \
                   at 2026-10-07T05:44:00Z (12s ago)";
    assert_eq!(explain(&facts), [stopped]);
    // One quiet for longer than that says less than the stop.
    facts.supervisors = vec![supervisor(720.0, false)];
    assert_eq!(explain(&facts), [stopped]);
    facts.supervisors = vec![supervisor(3.0, false)];
    assert!(explain(&facts)[0].contains("in 3s (box-1 was last heard from then)"));
}

#[test]
fn a_claimed_task_names_its_holder_lease_and_heartbeat() {
    let mut facts = why("review", "active");
    facts.task = Some(WhyTask {
        status: "claimed".into(),
        attempt: 2,
        retries_left: 1,
        holder: Some("box-1".into()),
        lease_left: Some(100.0),
        holder_heard: Some(5.0),
        lease_renewed: Some(5.5),
        ..queued()
    });
    assert_eq!(
        explain(&facts),
        [
            "its task 7 is being worked on by box-1 (attempt 2, 1 retry left); its lease \
          ends in 1m 40s; box-1 was last heard from 5s ago"
        ]
    );
    // The name heard since, but this attempt not renewed: a supervisor of that
    // name restarted after a crash, and the attempt is the dead one's.
    if let Some(task) = facts.task.as_mut() {
        task.lease_renewed = Some(40.0);
        task.holder_heard = Some(1.0);
    }
    assert_eq!(
        explain(&facts),
        [
            "its task 7 is being worked on by box-1 (attempt 2, 1 retry left); its lease \
          ends in 1m 40s and was last renewed 40s ago; box-1 was last heard from 1s ago"
        ]
    );
}

#[test]
fn a_paused_failed_or_ended_token_says_so_first() {
    let mut facts = why("review", "paused");
    facts.held = vec![crate::watch::HeldEvent {
        event: "approve".into(),
        payload: None,
        at: None,
    }];
    facts.timers = vec![WhyTimer {
        event: "timeout".into(),
        kind: "timeout".into(),
        due_at: "2026-10-07T05:53:39Z".into(),
        left: 510.0,
        frozen: true,
    }];
    assert_eq!(
        explain(&facts),
        [
            "it is paused: 1 event is held until it is resumed",
            "its timeout in 'review' stands still while paused, 8m 30s left",
        ]
    );
    let mut failed = why("intake", "failed");
    failed.failure = Some(crate::wire::HistoryEntry {
        seq: 9,
        at: "2026-10-07T05:43:39Z".into(),
        kind: "failed".into(),
        data: json!({"reason": "'intake' failed"})
            .as_object()
            .unwrap()
            .clone(),
        by: None,
    });
    assert_eq!(
        explain(&failed),
        [
            "it failed in 'intake': 'intake' failed; a retry enters 'intake' again \
          (stateous token retry C-1)"
        ]
    );
    assert_eq!(
        explain(&why("__end__", "completed")),
        ["it completed; nothing moves it any more"]
    );
}

#[test]
fn a_join_a_false_guard_and_a_timer_each_have_their_sentence() {
    let mut facts = why("sign", "active");
    facts.join = Some(WhyJoin {
        join: "all".into(),
        ended: 1,
        children: 2,
    });
    assert_eq!(
        explain(&facts),
        ["it waits for its children: the join 'all' moves it when all 2 have ended, and 1 ended"]
    );
    let mut facts = why("review", "active");
    let guarded = |event: &str, guard: &str, holds: Option<bool>| WhyTransition {
        event: event.into(),
        to: "sign".into(),
        guard: Some(guard.into()),
        otherwise: false,
        holds,
        reads_payload: holds.is_none(),
    };
    facts.transitions = vec![
        guarded("approve", "ctx['score'] > 3", Some(false)),
        guarded("reviewed", "payload.ok == true", None),
    ];
    facts.timers = vec![WhyTimer {
        event: "nudge".into(),
        kind: "timer".into(),
        due_at: "2026-10-07T05:53:39Z".into(),
        left: 0.0,
        frozen: false,
    }];
    assert_eq!(
        explain(&facts),
        [
            "'approve' cannot move it now: on its context the guard ctx['score'] > 3 is false",
            "a routine's timer for 'nudge' is due: the clock fires it at its next tick",
        ]
    );
    assert_eq!(
        explain(&why("closing", "active")),
        ["it waits in 'closing' for an event: no task, timer or child is open"]
    );
}
