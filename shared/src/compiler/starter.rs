//! The starter workflow that `stateous init workflow NAME` writes: the `orders`
//! shape (`draft`, `review`, `submitted`, `reviewed` with a `Verdict` payload), with
//! comments that teach the format (`docs/reference/files.md`).

/// The text of `NAME/flow.yaml`. `name` is a valid workflow name, so it goes into
/// the text as it is. Named `orders`, it compiles to the reference's `orders` starter.
pub fn starter_flow(name: &str) -> String {
    format!(
        r##"# {name}/flow.yaml: a workflow. `stateous compile {name}/flow.yaml` checks it and
# writes the graph file that `stateous serve` runs: {name}/build/{name}.json.
workflow: {name}

# Each token carries a context: a JSON object, checked against this schema (below).
context: Item

# The states a token can be in, one at a time. A supervisor's routine does each
# state's work. Optional settings: `timeout: 6h` (then the event `timeout` fires)
# and `retries: 2` (then, when the last attempt fails, the event `error`).
states:
  draft: {{}}
  review: {{}}

# The events: the outcomes that move a token. `payload:` names the schema of the data
# an event carries; leave it out for an event without data.
events:
  submitted: {{}}
  reviewed: {{payload: Verdict}}

# Where each event takes a token. START and END begin and end every token; the
# transition from START has no `on`: a new token takes it at once.
transitions:
  - {{from: START, to: draft}}
  - {{from: draft, to: review, on: submitted}}
  # A guard (`when`) is optional. Here the payload of `reviewed` picks the target...
  - {{from: review, to: END, on: reviewed, when: "payload.approved == true"}}
  # ...and `otherwise: true` marks the transition taken when no guard holds.
  - {{from: review, to: draft, on: reviewed, otherwise: true}}

# The models, as JSON Schema (draft 2020-12). One may refer to another with
# {{$ref: "#/schemas/NAME"}}. The graph file writes their keywords sorted.
schemas:
  Item:
    type: object
    description: The context of each token of `{name}`.
    properties:
      title: {{type: string}}
    required: [title]
  Verdict:
    type: object
    description: The payload of the event `reviewed`.
    properties:
      approved: {{type: boolean}}
      note: {{type: string, default: ""}}   # a field with a default is optional
    required: [approved]
"##
    )
}
