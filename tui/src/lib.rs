//! `stateous-tui`: the terminal UI (SPEC section 3.4). Not built yet: a later issue.
